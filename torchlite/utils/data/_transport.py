"""How a worker process hands its results to the main process without copying tensor data
through a pipe.

Shared memory.  A worker allocates the memory of a batch's tensors as a `SharedBuffer`: an
anonymous memfd (Linux) or an unlinked temporary file, mapped MAP_SHARED.  `default_collate`
stacks samples straight into such a buffer when it runs in a worker; any other large tensor
in a result is copied into one once.  The main process receives the buffer's file descriptor
and maps the same pages, so the worker's bytes become the main process's tensor with no
further copy.  A buffer is freed by the kernel when the last mapping and descriptor go, so
nothing leaks however a process ends.

Messages.  Each result crosses a Unix stream socket (one per worker) as
    header (payload length, descriptor count) + the descriptors, sent as SCM_RIGHTS
    ancillary data (at most _FDS_PER_SENDMSG per sendmsg, continued on one-byte messages),
    then the payload: a pickle in which every tensor in shared memory is a persistent id
    ("shm", buffer slot, buffer bytes, dtype code, shape, strides, offset, requires_grad).
Views of one buffer keep sharing it on arrival.  Small tensors (< SHM_MIN_BYTES) travel as
("raw", dtype code, shape, bytes, requires_grad) inside the pickle: mapping a fresh buffer
costs more than copying a few kilobytes (and this is several times faster than pickling the
tensor the ordinary way, through NumPy).

Where descriptors cannot be passed (no AF_UNIX/SCM_RIGHTS, e.g. Windows) everything is
pickled normally."""
import array
import ctypes
import io
import mmap
import os
import pickle
import socket
import struct
import tempfile
import weakref

from ..._dispatch import array as _A
from ..._dtype import DTYPES
from ..._tensor import Tensor, _wrap

CAN_SEND_FDS = hasattr(socket, "AF_UNIX") and hasattr(socket, "CMSG_SPACE") and os.name == "posix"

# tensors smaller than this travel inside the pickle (one extra copy, but no mmap/munmap)
SHM_MIN_BYTES = 16384

_HEADER = struct.Struct("<QI")         # payload bytes, descriptor count
_FDS_PER_SENDMSG = 200                 # below the kernel's SCM_MAX_FD (253)
_FD_SIZE = array.array("i").itemsize
# MAP_POPULATE maps all pages in one call instead of one page fault each (Linux); Windows
# has no MAP_SHARED but never gets here (CAN_SEND_FDS is False)
_MAP_FLAGS = getattr(mmap, "MAP_SHARED", 0) | getattr(mmap, "MAP_POPULATE", 0)

# buffers alive in this process, by address, so that a tensor can be traced to its buffer
# (a tensor's storage only tells its address)
_live_buffers = weakref.WeakValueDictionary()


class SharedBuffer:
    """`nbytes` of memory mapped from a file descriptor that can be sent to another process.

    It is the owner object of the tensors made over it (through `__array_interface__`, which
    `from_numpy` reads), so the mapping lives as long as any of them."""

    __slots__ = ("fd", "nbytes", "address", "_map", "_anchor", "__weakref__")

    def __init__(self, fd, nbytes, keep_fd):
        self._map = mmap.mmap(fd, nbytes, flags=_MAP_FLAGS)
        # a ctypes view pins the map (it cannot be closed while exported) and gives its address
        self._anchor = ctypes.c_char.from_buffer(self._map)
        self.address = ctypes.addressof(self._anchor)
        self.nbytes = nbytes
        self.fd = fd
        if not keep_fd:
            os.close(fd)
            self.fd = -1

    @property
    def __array_interface__(self):
        return {"version": 3, "typestr": "|u1", "shape": (self.nbytes,),
                "data": (self.address, False)}

    def __del__(self):
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _anonymous_file(nbytes):
    """A descriptor for `nbytes` of fresh shared memory that has no name anywhere."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("torchlite-dataloader", os.MFD_CLOEXEC)
    else:
        directory = "/dev/shm" if os.path.isdir("/dev/shm") else None
        fd, path = tempfile.mkstemp(prefix="torchlite-dataloader-", dir=directory)
        os.unlink(path)
    try:
        os.ftruncate(fd, nbytes)
    except BaseException:
        os.close(fd)
        raise
    return fd


def new_buffer(nbytes):
    """A new SharedBuffer of `nbytes` (> 0) that this process can send."""
    buf = SharedBuffer(_anonymous_file(nbytes), nbytes, keep_fd=True)
    _live_buffers[buf.address] = buf
    return buf


def _tensor_over(buf, dtype_code, shape, strides, offset):
    base = _A.from_numpy(buf)     # the buffer's bytes as a uint8 array
    return _wrap(_A.reinterpret(base, dtype_code, shape, strides, offset))


def _contiguous_strides(shape):
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


def shared_empty(shape, dtype):
    """An uninitialised contiguous tensor in shared memory, or None where shared memory is
    not worth it (small) or not possible."""
    shape = tuple(shape)
    numel = 1
    for size in shape:
        numel *= size
    nbytes = numel * dtype.itemsize
    if not CAN_SEND_FDS or nbytes < SHM_MIN_BYTES:
        return None
    return _tensor_over(new_buffer(nbytes), dtype.code, shape, _contiguous_strides(shape), 0)


# ---- the pickle side -------------------------------------------------------------------------
_NON_LEAF = ("Cowardly refusing to serialize non-leaf tensor which requires_grad, since "
             "autograd does not support crossing process boundaries.  If you just want to "
             "transfer the data, call detach() on the tensor before serializing (e.g., putting "
             "it on the queue).")


class _SendingPickler(pickle.Pickler):
    """Pickles a result, turning tensors in (or worth moving to) shared memory into
    persistent ids and collecting the buffers whose descriptors must go along."""

    def __init__(self, file):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.buffers = []
        self._slots = {}

    def _slot(self, buf):
        slot = self._slots.get(buf.address)
        if slot is None:
            slot = self._slots[buf.address] = len(self.buffers)
            self.buffers.append(buf)
        return slot

    def persistent_id(self, obj):
        if type(obj) is not Tensor or obj._data.device != "cpu":
            return None
        if obj.requires_grad and obj.grad_fn is not None:
            raise RuntimeError(_NON_LEAF)
        arr = obj._data
        buf = _live_buffers.get(arr.storage.data_ptr())
        if buf is None:
            moved = shared_empty(arr.shape, DTYPES[arr.dtype])
            if moved is None:
                return _raw_record(obj)
            moved.copy_(obj.detach())
            arr = moved._data
            buf = _live_buffers[arr.storage.data_ptr()]
        return ("shm", self._slot(buf), buf.nbytes, arr.dtype, arr.shape, arr.strides,
                arr.offset, obj.requires_grad)


def _raw_record(tensor):
    """A small tensor as a persistent id carrying its bytes (row-major)."""
    arr = tensor.detach().contiguous()._data
    nbytes = arr.numel * arr.itemsize
    data = ctypes.string_at(arr.data_ptr(), nbytes) if nbytes else b""
    return ("raw", arr.dtype, arr.shape, data, tensor.requires_grad)


def _from_raw_record(dtype_code, shape, data, requires_grad):
    arr = _A.empty(shape, dtype_code)
    if arr.numel * arr.itemsize != len(data):
        raise pickle.UnpicklingError("DataLoader: tensor bytes do not match its shape")
    if data:
        ctypes.memmove(arr.data_ptr(), data, len(data))
    tensor = _wrap(arr)
    if requires_grad:
        tensor.requires_grad_(True)
    return tensor


class _ReceivingUnpickler(pickle.Unpickler):
    """Unpickles a result, mapping each received descriptor once (views share it)."""

    def __init__(self, file, fds):
        super().__init__(file)
        self._fds = fds
        self._mapped = {}

    def persistent_load(self, pid):
        if pid[0] == "raw":
            return _from_raw_record(*pid[1:])
        tag, slot, nbytes, dtype_code, shape, strides, offset, requires_grad = pid
        if tag != "shm" or not 0 <= slot < len(self._fds) or offset < 0 or min(strides, default=0) < 0:
            raise pickle.UnpicklingError(f"DataLoader: malformed shared tensor record {pid!r}")
        buf = self._mapped.get(slot)
        if buf is None:
            fd, self._fds[slot] = self._fds[slot], -1
            buf = self._mapped[slot] = SharedBuffer(fd, nbytes, keep_fd=False)
        tensor = _tensor_over(buf, dtype_code, shape, strides, offset)
        if requires_grad:
            tensor.requires_grad_(True)
        return tensor


def close_fds(fds):
    """Close the descriptors of a message that will not be unpickled (or were left over)."""
    for fd in fds:
        if fd >= 0:
            os.close(fd)


# ---- the socket side -------------------------------------------------------------------------
def send_message(sock, obj):
    """Send `obj` (pickled; tensors in shared memory by descriptor) on `sock`.  Raises
    pickling errors before anything is written, so a failed message leaves the stream
    intact."""
    stream = io.BytesIO()
    pickler = _SendingPickler(stream) if CAN_SEND_FDS else pickle.Pickler(
        stream, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.dump(obj)
    payload = stream.getbuffer()
    fds = [buf.fd for buf in getattr(pickler, "buffers", ())]
    header = _HEADER.pack(len(payload), len(fds))
    if fds:
        chunks = [fds[i:i + _FDS_PER_SENDMSG] for i in range(0, len(fds), _FDS_PER_SENDMSG)]
        _send_fds(sock, header, chunks[0])
        for chunk in chunks[1:]:
            _send_fds(sock, b"+", chunk)
    else:
        sock.sendall(header)
    sock.sendall(payload)


def _send_fds(sock, data, fds):
    sent = sock.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
    if sent < len(data):                   # the descriptors went with the first byte
        sock.sendall(data[sent:])


def _recv_exact_into(sock, view):
    got = 0
    while got < len(view):
        n = sock.recv_into(view[got:])
        if n == 0:
            raise EOFError("DataLoader worker closed its connection mid-message")
        got += n


def _recv_with_fds(sock, nbytes, fds):
    """Read `nbytes` (at least the first byte carrying any descriptors), appending received
    descriptors to `fds`."""
    if not CAN_SEND_FDS:
        data = bytearray(nbytes)
        _recv_exact_into(sock, memoryview(data))
        return bytes(data)
    data, ancdata, flags, _ = sock.recvmsg(nbytes, socket.CMSG_SPACE(_FDS_PER_SENDMSG * _FD_SIZE))
    for level, kind, cdata in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            usable = len(cdata) - len(cdata) % _FD_SIZE
            fds.extend(array.array("i", cdata[:usable]))
    if flags & getattr(socket, "MSG_CTRUNC", 0):
        close_fds(fds)
        raise RuntimeError("DataLoader: file descriptors from a worker were truncated "
                           "(too many open files? raise the limit with `ulimit -n`)")
    if not data:
        raise EOFError("DataLoader worker closed its connection")
    if len(data) < nbytes:
        rest = bytearray(nbytes - len(data))
        _recv_exact_into(sock, memoryview(rest))
        data += rest
    return data


def recv_raw(sock):
    """Read one message: (payload bytes, list of received descriptors).  The caller owns the
    descriptors: pass them to `decode` or `close_fds`."""
    fds = []
    try:
        header = _recv_with_fds(sock, _HEADER.size, fds)
        length, nfds = _HEADER.unpack(header)
        while len(fds) < nfds:
            _recv_with_fds(sock, 1, fds)
        payload = bytearray(length)
        _recv_exact_into(sock, memoryview(payload))
    except BaseException:
        close_fds(fds)
        raise
    return payload, fds


def decode(payload, fds):
    """Unpickle a message read by recv_raw, wrapping its shared buffers as tensors."""
    try:
        return _ReceivingUnpickler(io.BytesIO(payload), fds).load()
    finally:
        close_fds(fds)   # whatever the pickle did not claim


def recv_message(sock):
    """Read and unpickle one message."""
    return decode(*recv_raw(sock))
