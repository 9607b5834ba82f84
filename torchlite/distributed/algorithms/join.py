"""torch.distributed.algorithms.join: training on uneven inputs.

When the ranks have different numbers of batches, a rank that has run out would leave the
others waiting forever in their next collective.  Inside `with Join([joinables]):` (or
`with ddp_model.join():`) a rank that leaves the loop does not leave the context at once: it
keeps answering the collectives the other ranks still make -- each Joinable's JoinHook says
which (`main_hook`, once per iteration of the ranks still running) -- until every rank has
run out; then every hook's `post_hook(is_last_joiner)` runs (DDP's copies the model from a
last joiner to everyone, so the replicas end equal).

The protocol, in collectives every rank makes in the same order (MPI matches collectives by
order, and a blocking collective never matches a non-blocking one, so all of these block):
- at the start of each of its iterations, a running rank's first Joinable calls
  `Join.notify_join_context(joinable)`: an all-reduce (sum) of 1;
- a rank that has run out answers it in `__exit__` with 0, so the sum is the number of ranks
  still running; when it is 0 all have run out and the loop ends, else the joined rank runs
  the hooks' main_hook (the collectives of one iteration, with neutral values);
- throw_on_early_termination=True: each running rank makes a second all-reduce after the
  first; a rank that has run out answers it with 1 and raises, and the running ranks, seeing
  a nonzero sum, raise too -- every rank stops with a RuntimeError instead of shadowing."""
from __future__ import annotations

import warnings
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from ..._device import device

__all__ = ["JoinHook", "Joinable", "Join"]


class JoinHook:
    """What a rank that has run out of inputs does for one Joinable: main_hook() is called
    once per iteration that other ranks still run, and makes that iteration's collectives;
    post_hook(is_last_joiner) once all ranks have run out.  Both do nothing by default."""

    def main_hook(self) -> None:
        """Shadow one iteration's collective communication."""

    def post_hook(self, is_last_joiner: bool) -> None:
        """After every rank has joined; is_last_joiner: this rank ran out in the last round."""


class _JoinConfig:
    __slots__ = ("enable", "throw_on_early_termination", "is_first_joinable")

    def __init__(self, enable=False, throw_on_early_termination=False, is_first_joinable=False):
        self.enable = enable
        self.throw_on_early_termination = throw_on_early_termination
        self.is_first_joinable = is_first_joinable


class Joinable(ABC):
    """A class that can take part in a Join context: it implements join_hook(**kwargs) (its
    JoinHook), and the join_device and join_process_group properties (where the context's
    own collectives run), and calls Join.notify_join_context(self) at the start of each
    iteration, before its own collectives.  Its __init__ must call Joinable.__init__."""

    @abstractmethod
    def __init__(self) -> None:
        super().__init__()
        self._join_config = _JoinConfig()

    @abstractmethod
    def join_hook(self, **kwargs: Any) -> JoinHook:
        """This Joinable's JoinHook (kwargs: the keyword arguments given to Join)."""

    @property
    @abstractmethod
    def join_device(self) -> device:
        """The device of the context's collectives."""

    @property
    @abstractmethod
    def join_process_group(self) -> Any:
        """The process group of the context's collectives."""


def _flag_all_reduce(value, group, device):
    """The sum over the group of one number per rank (a blocking all-reduce)."""
    import torchlite
    from .. import _collectives as C
    t = torchlite.tensor([float(value)], device=device)
    C.all_reduce(t, group=group)
    return t


class Join:
    """The context manager for uneven inputs: joinables (Joinables, their hooks run in this
    order; one process group for all); enable=False makes it do nothing (for inputs known to
    be even); throw_on_early_termination=True makes every rank raise RuntimeError as soon as
    one runs out, instead of shadowing; other keyword arguments go to each join_hook."""

    def __init__(self, joinables: Iterable[Joinable], enable: bool = True, throw_on_early_termination: bool = False,
                 **kwargs: Any) -> None:
        joinables = list(joinables)
        if not joinables:
            raise ValueError("The join context manager requires at least one joinable")
        for j in joinables:
            if not hasattr(j, "_join_config"):
                raise TypeError(f"Join: {type(j).__name__} is not a Joinable whose __init__ ran "
                                f"Joinable.__init__")
        self._joinables = joinables
        self._join_hooks = [j.join_hook(**kwargs) for j in joinables]
        self._enable = enable
        self._throw_on_early_termination = throw_on_early_termination
        groups = {id(j.join_process_group) for j in joinables}
        if len(groups) > 1:
            raise ValueError("Using join context manager with multiple process groups")
        self._process_group = joinables[0].join_process_group
        self._device = joinables[0].join_device
        for k, j in enumerate(joinables):
            j._join_config = _JoinConfig(enable, throw_on_early_termination, k == 0)

    def __enter__(self) -> Join:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        try:
            if not self._enable or exc_type is not None:
                return False          # an exception goes on as it is
            from .. import _backend
            rank = _backend.get_rank(self._process_group)
            is_last_joiner = True
            rounds = 0
            while True:
                running = _flag_all_reduce(0, self._process_group, self._device).item()
                if running == 0:
                    break
                if self._throw_on_early_termination:
                    _flag_all_reduce(1, self._process_group, self._device)
                    raise RuntimeError(f"Rank {rank} exhausted all inputs.")
                if rounds == 1000:
                    warnings.warn(f"Detected uneven input skew of greater than 1000. This means "
                                  f"that rank {rank} has at least 1000 fewer inputs than other "
                                  f"currently-active ranks. This level of skew could lead to "
                                  f"performance degradation during training.", stacklevel=2)
                for hook in self._join_hooks:
                    hook.main_hook()
                is_last_joiner = False
                rounds += 1
            for hook in self._join_hooks:
                hook.post_hook(is_last_joiner)
            return False
        finally:
            for j in self._joinables:
                j._join_config = _JoinConfig()

    @staticmethod
    def notify_join_context(joinable: Joinable) -> Any:
        """Called by a Joinable at the start of each iteration, before its collectives: tells
        the ranks that have run out that this one has not (an all-reduce of 1), and with
        throw_on_early_termination raises RuntimeError if some rank has run out.  Returns a
        completed Work holding the number of ranks still running, for the first joinable of
        the context; None for the others and outside a context."""
        config = getattr(joinable, "_join_config", None)
        if config is None:
            raise TypeError(f"notify_join_context: {type(joinable).__name__} is not a Joinable "
                            f"whose __init__ ran Joinable.__init__")
        if not config.enable or not config.is_first_joinable:
            return None
        from .._work import _DoneWork
        group, device = joinable.join_process_group, joinable.join_device
        running = _flag_all_reduce(1, group, device)
        if config.throw_on_early_termination:
            if _flag_all_reduce(0, group, device).item() != 0:
                raise RuntimeError("Detected at least one rank that exhausted inputs. Throwing "
                                   "across all ranks.")
        return _DoneWork([running])
