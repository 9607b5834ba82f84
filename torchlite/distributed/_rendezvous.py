"""The launcher's rendezvous of machines: how `torchlite.distributed.run --nnodes M` started on
each of M machines becomes one MPI job.

MPI starts a job's processes from one place (mpiexec, which reaches the other machines over
ssh), while torchrun's model runs one launcher per machine.  The two meet here: the launcher of
node 0 listens on MASTER_ADDR:MASTER_PORT and waits for the other M - 1 launchers (agents) to
check in, each saying its node rank and --nproc-per-node; it then runs mpiexec with one --host
entry per node, in node-rank order, so ranks are numbered node by node as torchrun numbers them.
The agents start nothing themselves: they stay connected until the job ends and exit with its
status.  Ctrl-C (or SIGTERM/SIGHUP) at any launcher, or an agent that goes away, ends the whole
job through mpiexec, so no rank is left behind.

The protocol is one JSON object per line over TCP: agent -> server {"node_rank", "nproc"};
server -> agent {"ok": true} or {"error": message}, and at the end {"exit": status}; agent ->
server {"abort": signal name}.  Nothing received is executed or unpickled.
"""
from __future__ import annotations

import json
import socket
import time

_MAX_LINE = 4096          # a message longer than this is not ours


class RendezvousError(RuntimeError):
    """The machines did not come together (timeout, a wrong or duplicate node rank, a node
    with another --nproc-per-node)."""


def _send(sock, obj):
    sock.sendall(json.dumps(obj).encode() + b"\n")


class _Lines:
    """Newline-delimited JSON objects from a socket."""

    def __init__(self, sock):
        self.sock, self.buf = sock, b""

    def read(self, timeout=None):
        """The next object, or None when the peer closed the connection."""
        self.sock.settimeout(timeout)
        while b"\n" not in self.buf:
            if len(self.buf) > _MAX_LINE:
                raise RendezvousError("rendezvous: a message longer than expected")
            chunk = self.sock.recv(_MAX_LINE)
            if not chunk:
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):       # not JSON, or nested past the parser's depth
            raise RendezvousError("rendezvous: a message that is not JSON") from None
        if not isinstance(obj, dict):
            raise RendezvousError("rendezvous: a message that is not a JSON object")
        return obj


def _is_this_machine(address):
    """Whether a peer's address is this machine's (loopback or one of its own addresses)."""
    if address.startswith("127.") or address in ("::1", "localhost"):
        return True
    try:
        return address in socket.gethostbyname_ex(socket.gethostname())[2]
    except OSError:
        return False


class Agent:
    """A node other than node 0, checked in with node 0's launcher (join)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock, self.lines = sock, _Lines(sock)

    def abort(self, reason: str) -> None:
        """Ask node 0 to end the job (a signal reached this launcher)."""
        try:
            _send(self.sock, {"abort": reason})
        except OSError:
            pass

    def wait(self) -> int:
        """The job's exit status, when node 0 reports it (1 if node 0 went away first)."""
        while True:
            try:
                msg = self.lines.read()
            except (OSError, RendezvousError):
                msg = None
            if msg is None:
                return 1
            if type(msg.get("exit")) is int:
                return msg["exit"]


def join(addr: str, port: int, node_rank: int, nproc: int, timeout: float) -> Agent:
    """Check in with node 0's launcher at addr:port (retrying until it listens, for up to
    `timeout` seconds); an Agent, or RendezvousError."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            sock = socket.create_connection((addr, port), timeout=5)
            break
        except OSError as e:
            if time.monotonic() > deadline:
                raise RendezvousError(f"rendezvous: node {node_rank} could not reach node 0's launcher "
                                      f"at {addr}:{port} within {timeout:g} s ({e})") from None
            time.sleep(0.2)
    try:
        _send(sock, {"node_rank": node_rank, "nproc": nproc})
        reply = _Lines(sock).read(timeout=max(1.0, deadline - time.monotonic()))
    except (OSError, socket.timeout):
        reply = None
    if reply is None or not reply.get("ok"):
        sock.close()
        why = reply.get("error") if reply else "no answer"
        raise RendezvousError(f"rendezvous: node 0's launcher at {addr}:{port} refused node "
                              f"{node_rank}: {why}")
    sock.settimeout(None)
    return Agent(sock)


class Server:
    """Node 0's side: listen (open), gather the other nodes (gather), then report the job's
    end to them (finish)."""

    def __init__(self, port: int, nnodes: int, nproc: int, timeout: float) -> None:
        self.port, self.nnodes, self.nproc, self.timeout = port, nnodes, nproc, timeout
        self.agents = {}            # node rank -> (socket, host for mpiexec)
        self.listener = None

    def open(self) -> Server:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("", self.port))
        except OSError as e:
            s.close()
            raise RendezvousError(f"rendezvous: node 0 cannot listen on port {self.port}: {e}") from None
        s.listen(self.nnodes)
        self.listener = s
        return self

    def gather(self) -> list[str]:
        """Wait for nodes 1 .. M-1; returns the --host list, one entry per node in node order
        ('localhost' for this machine, else the address the node connected from)."""
        deadline = time.monotonic() + self.timeout
        while len(self.agents) < self.nnodes - 1:
            left = deadline - time.monotonic()
            if left <= 0:
                missing = sorted(set(range(1, self.nnodes)) - set(self.agents))
                raise RendezvousError(f"rendezvous: node(s) {missing} did not check in with node 0 "
                                      f"(port {self.port}) within {self.timeout:g} s")
            self.listener.settimeout(left)
            try:
                sock, (address, _) = self.listener.accept()
            except socket.timeout:
                continue
            try:
                hello = _Lines(sock).read(timeout=min(10.0, max(left, 0.1)))
            except (OSError, RendezvousError, socket.timeout):
                hello = None
            error = self._check(hello)
            if error:
                try:
                    _send(sock, {"error": error})
                except OSError:
                    pass
                sock.close()
                continue
            try:
                _send(sock, {"ok": True})
            except OSError:                   # gone already: it may try again
                sock.close()
                continue
            host = "localhost" if _is_this_machine(address) else address
            self.agents[hello["node_rank"]] = (sock, host)
        self.listener.close()
        return ["localhost"] + [self.agents[r][1] for r in range(1, self.nnodes)]

    def _check(self, hello):
        if hello is None:
            return "no check-in message"
        r, n = hello.get("node_rank"), hello.get("nproc")
        if type(r) is not int or not 1 <= r < self.nnodes:
            return f"node rank {r!r} is not in 1..{self.nnodes - 1}"
        if r in self.agents:
            return f"node rank {r} has already checked in"
        if type(n) is not int or n != self.nproc:
            return f"--nproc-per-node {n!r} differs from node 0's {self.nproc}"
        return None

    def sockets(self) -> list[socket.socket]:
        return [sock for sock, _ in self.agents.values()]

    def finish(self, status: int) -> None:
        for sock in self.sockets():
            try:
                _send(sock, {"exit": status})
                sock.close()
            except OSError:
                pass

    def close(self) -> None:
        if self.listener is not None:
            self.listener.close()
        for sock in self.sockets():
            try:
                sock.close()
            except OSError:
                pass
