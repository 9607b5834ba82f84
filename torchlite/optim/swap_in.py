"""torchlite.optim.swap_in_optimizer_params_and_state (PyTorch's, from its _stateless module):
run an optimizer, for the length of a with block, on other parameter tensors and on the
state of an optimizer.state_dict(), leaving the live optimizer as it was afterwards."""
from __future__ import annotations

import contextlib
from collections import defaultdict
from typing import TYPE_CHECKING

from .._tensor import Tensor

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping
    from typing import Any

    from .optimizer import Optimizer

__all__ = ["swap_in_optimizer_params_and_state"]

_NAME = "swap_in_optimizer_params_and_state"


def _check_state(state):
    """state_dict()["state"]: packed integer ids -> per-parameter dicts."""
    if not isinstance(state, dict):
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['state'] to be a dict mapping "
                           "packed parameter ids to per-param state dicts, got "
                           f"{type(state).__name__}.")
    if any(isinstance(k, Tensor) for k in state):
        raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style state keyed by "
                           "packed parameter ids.")
    if any(isinstance(k, int) and not isinstance(v, dict) for k, v in state.items()):
        raise RuntimeError(f"{_NAME} requires per-parameter optimizer state entries to be "
                           "dictionaries.")
    return state


def _check_groups(optimizer, groups):
    if not isinstance(groups, list):
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['param_groups'] to be a list "
                           f"of param-group dicts, got {type(groups).__name__}.")
    if len(optimizer.param_groups) != len(groups):
        raise RuntimeError("swapin_optim_state has a different number of parameter groups "
                           "than the live optimizer.")
    for idx, (group, swapin) in enumerate(zip(optimizer.param_groups, groups)):
        if not isinstance(swapin, dict):
            raise RuntimeError(f"{_NAME} requires each optimizer param group to be a "
                               "dictionary.")
        ids = swapin.get("params")
        if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
            raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style "
                               "param_groups[*]['params'] entries keyed by packed parameter "
                               "ids.")
        if len(group["params"]) != len(ids):
            raise RuntimeError(f"swapin_optim_state param group {idx} has a different number "
                               "of params than the live optimizer param group.")
        swapin_only = [k for k in swapin if k not in group]
        live_only = [k for k in group if k not in swapin]
        if swapin_only or live_only:
            raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style param group keys "
                               "to exactly match the live optimizer group keys for group "
                               f"{idx}. Keys only in swap-in: {swapin_only}. Keys only in "
                               f"live: {live_only}.")
    return groups


@contextlib.contextmanager
def swap_in_optimizer_params_and_state(optimizer: Optimizer, swapin_parameters: Mapping[str, Tensor],
                                       swapin_optim_state: dict[str, Any]) -> Iterator[None]:
    """Within the block, optimizer's groups hold the tensors of swapin_parameters (a dict,
    in the order of the optimizer's parameters, as model.named_parameters() gives them) and
    the options of swapin_optim_state["param_groups"], and its state is
    swapin_optim_state["state"] (re-keyed by those tensors): step() updates them.  In-place
    changes to the state's tensors show in swapin_optim_state; entries added or replaced do
    not.  On exit the live groups and state are restored.  The optimizer must have state."""
    if not optimizer.state:
        raise RuntimeError(f"{_NAME} requires initialized optimizer state.")
    if not isinstance(swapin_optim_state, dict):
        raise RuntimeError(f"{_NAME} requires a DCP-style optimizer state_dict.")
    state = _check_state(swapin_optim_state.get("state"))
    groups = _check_groups(optimizer, swapin_optim_state.get("param_groups"))
    flat = list(swapin_parameters.values())
    offset = 0
    swapped = []        # (live group, swap-in group, its tensors)
    seen = set()
    for group, swapin in zip(optimizer.param_groups, groups):
        ids = swapin["params"]
        seen.update(ids)
        if offset + len(ids) > len(flat):
            raise RuntimeError(f"{_NAME} requires the explicit parameter state to match "
                               "optimizer.param_groups ordering.")
        swapped.append((group, swapin, flat[offset:offset + len(ids)]))
        offset += len(ids)
    extra = [k for k in state if k not in seen]
    if extra:
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['state'] to be keyed only by "
                           "packed parameter ids from param_groups[*]['params']; got extra "
                           f"keys {extra!r}.")

    original_state = optimizer.state
    # shallow copies: the live "params" lists keep their identity when put back
    snapshots = [dict(g) for g in optimizer.param_groups]
    try:
        swapin_state = defaultdict(dict)
        for group, swapin, tensors in swapped:
            group["params"] = tensors
            group.update((k, v) for k, v in swapin.items() if k != "params")
            for tensor, pid in zip(tensors, swapin["params"]):
                # a shallow copy: in-place tensor updates reach the caller's dict, added or
                # replaced entries do not
                swapin_state[tensor] = dict(state.get(pid, {}))
        optimizer.state = swapin_state
        yield
    finally:
        for group, snapshot in zip(optimizer.param_groups, snapshots):
            group.clear()
            group.update(snapshot)
        optimizer.state = original_state
