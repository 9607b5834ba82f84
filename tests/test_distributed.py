"""torchlite.distributed and DistributedDataParallel, on real MPI jobs.

Each test starts its ranks with `mpiexec -n K python tests/distributed_scripts/<script>.py`
(or the launcher) in a subprocess of its own session, with a timeout after which the whole
process group is killed; the scripts print `OK ...` lines and raise on a wrong result, which
aborts the job (the fault handling is tested too).  Skipped without mpi4py or mpiexec."""
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = os.path.join(ROOT, "tests", "distributed_scripts")
TIMEOUT = 120


def _mpiexec():
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return here if os.access(here, os.X_OK) else shutil.which("mpiexec")


def _need_mpi():
    pytest.importorskip("mpi4py")
    if _mpiexec() is None:
        pytest.skip("mpiexec is not installed")


def _env():
    env = dict(os.environ)
    env["OMP_NUM_THREADS"] = "1"        # several ranks on 2 cores: one kernel thread each
    for var in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "TORCHLITE_DISTRIBUTED_DEBUG", "TORCH_DISTRIBUTED_DEBUG"):
        env.pop(var, None)
    return env


def _run(cmd, timeout=TIMEOUT):
    """(returncode, stdout + stderr, seconds); the whole process group is killed on timeout."""
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            text=True, errors="replace", cwd=ROOT, env=_env(), start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"{' '.join(cmd)} did not finish in {timeout} s:\n{out}")
    return proc.returncode, out, time.monotonic() - start


def _mpirun(script, n, *args, timeout=TIMEOUT):
    cmd = [_mpiexec(), "--allow-run-as-root", "--oversubscribe", "-n", str(n), sys.executable,
           os.path.join(SCRIPTS, script), *args]
    return _run(cmd, timeout)


def _leftovers(token, wait=10.0):
    """The pids whose command line contains token, after giving them `wait` seconds to go."""
    deadline = time.monotonic() + wait
    while True:
        found = []
        for pid in os.listdir("/proc"):
            if not pid.isdigit() or int(pid) == os.getpid():
                continue
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmdline = f.read()
            except OSError:
                continue
            if token.encode() in cmdline:
                found.append(int(pid))
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


COLLECTIVES = ["all_reduce", "broadcast", "reduce", "all_gather", "reduce_scatter", "gather/scatter",
               "all_to_all", "send/recv", "objects/barrier"]


@pytest.mark.parametrize("n", [2, 4])
def test_every_collective_every_dtype_matches_numpy(n):
    _need_mpi()
    rc, out, _ = _mpirun("collectives.py", n)
    assert rc == 0, out
    for name in COLLECTIVES + ["new_group"]:
        assert len(re.findall(rf"^OK {re.escape(name)}\b", out, re.M)) == n, (name, out)
    assert len(re.findall(rf"^OK all collectives on {n} ranks", out, re.M)) == n, out


def test_collectives_in_a_single_process():
    """Without mpiexec MPI starts as a singleton: world size 1, every collective an identity."""
    _need_mpi()
    rc, out, _ = _run([sys.executable, os.path.join(SCRIPTS, "collectives.py")])
    assert rc == 0 and "OK all collectives on 1 ranks" in out, out


def test_setup_checks_backends_timeouts_and_debug_mode():
    _need_mpi()
    rc, out, _ = _mpirun("setup_checks.py", 2)
    assert rc == 0, out
    for line in ("OK consistency checks", "OK gloo backend maps to MPI", "OK work timeout",
                 "OK debug detail checks", "OK setup checks (rank 0)", "OK setup checks (rank 1)"):
        assert line in out, (line, out)


@pytest.mark.parametrize("n", [2, 4])
def test_ddp_matches_single_process_training(n):
    _need_mpi()
    rc, out, _ = _mpirun("ddp.py", n)
    assert rc == 0, out
    for name in ("ddp mlp:", "ddp mlp float64:", "ddp mlp small buckets + gradient_as_bucket_view:",
                 "ddp cnn+batchnorm:", "ddp no_sync:", "ddp find_unused_parameters:",
                 "ddp unused parameter without find_unused_parameters raises", "ddp overlap:",
                 "ddp allreduce_hook:", "ddp fp16_compress_hook:", "ddp bf16_compress_hook:",
                 "ddp custom comm hook:", "ddp comm hook errors", "ddp process_group:",
                 "ddp own buckets:", "ddp own buckets float64:", "ddp own buckets + allreduce_hook:",
                 "ddp large gradients reduced in place"):
        assert out.count(f"OK {name}") == n, (name, out)
    for r in range(n):
        assert f"OK ddp all (rank {r})" in out, out


def test_ddp_join_trains_on_uneven_inputs():
    """DistributedDataParallel.join and the generic Join context (ranks with 3, 5 batches):
    the expected model on every rank, both divisions, hooks, unused parameters, buffers,
    throw_on_early_termination, a custom Joinable; register_builtin_comm_hook."""
    _need_mpi()
    for n in (2, 3):
        rc, out, _ = _mpirun("join.py", n)
        assert rc == 0, out
        for name in ("join divide_by_initial_world_size=True:",
                     "join divide_by_initial_world_size=False:",
                     "join with a comm hook, unused parameters and buffers",
                     "join throw_on_early_termination", "join generic Join with a custom Joinable",
                     "ddp register_builtin_comm_hook"):
            assert out.count(f"OK {name}") == n, (name, out)
        for r in range(n):
            assert f"OK join all (rank {r})" in out, out


def test_sync_batchnorm_uses_the_whole_batch():
    _need_mpi()
    rc, out, _ = _mpirun("sync_batchnorm.py", 2)
    assert rc == 0, out
    for name in ("sync batchnorm matches the whole batch's", "ddp with sync batchnorm trains as one process"):
        assert out.count(f"OK {name}") == 2, (name, out)


def test_a_failing_rank_ends_the_job_naming_the_rank():
    _need_mpi()
    token = f"fault-{uuid.uuid4().hex[:12]}"
    rc, out, seconds = _mpirun("fault.py", 2, "raise", token, timeout=60)
    assert rc != 0, out
    assert "[rank 1]:" in out and "rank 1 of 2 raised ValueError" in out and f"boom ({token})" in out, out
    assert "unreachable" not in out
    assert seconds < 60
    assert _leftovers(token) == []


def test_launcher_trains_the_example_on_two_ranks():
    _need_mpi()
    pytest.importorskip("sklearn")
    rc, out, _ = _run([sys.executable, "-m", "torchlite.distributed.run", "--nproc-per-node", "2",
                       os.path.join(ROOT, "examples", "ddp_train.py"), "--epochs", "3"])
    assert rc == 0, out
    shards = re.findall(r"rank (\d)/2: a shard of (\d+) of the (\d+) training images", out)
    assert sorted(r for r, _, _ in shards) == ["0", "1"], out
    assert all(2 * int(k) >= int(total) for _, k, total in shards), out
    accuracies = re.findall(r"rank \d: final test accuracy ([0-9.]+)% .* replicas identical: True", out)
    assert len(accuracies) == 2 and accuracies[0] == accuracies[1], out
    assert float(accuracies[0]) > 85.0, out


def _wait_for_ready_ranks(proc, n):
    """Read proc's output until n ranks of fault.py's 'sleep' mode said they are ready."""
    ready, lines = 0, []
    deadline = time.monotonic() + TIMEOUT
    while ready < n and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        ready += line.startswith("ready rank")
    assert ready == n, "".join(lines)


def test_launcher_ctrl_c_leaves_no_process_behind():
    _need_mpi()
    token = f"sleep-{uuid.uuid4().hex[:12]}"
    proc = subprocess.Popen([sys.executable, "-m", "torchlite.distributed.run", "--nproc_per_node", "2",
                             os.path.join(SCRIPTS, "fault.py"), "sleep", token],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            text=True, cwd=ROOT, env=_env(), start_new_session=True)
    try:
        _wait_for_ready_ranks(proc, 2)
        os.kill(proc.pid, signal.SIGINT)          # what Ctrl-C sends the launcher
        out, _ = proc.communicate(timeout=60)
    except BaseException:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    assert proc.returncode != 0
    assert _leftovers(token) == []


def _free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _launcher(node_rank, port, *script_args, nnodes=2, nproc=2, timeout="60", token=None):
    """A launcher of a --nnodes job (both 'nodes' on this machine) running nodes.py."""
    cmd = [sys.executable, "-m", "torchlite.distributed.run", "--nnodes", str(nnodes), "--node-rank",
           str(node_rank), "--nproc-per-node", str(nproc), "--master-addr", "127.0.0.1",
           "--master-port", str(port), "--rdzv-timeout", timeout,
           os.path.join(SCRIPTS, "fault.py" if token else "nodes.py"), *script_args]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            text=True, errors="replace", cwd=ROOT, env=_env(), start_new_session=True)


def _finish(*procs, timeout=TIMEOUT):
    outs = []
    try:
        for p in procs:
            outs.append(p.communicate(timeout=timeout)[0])
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.communicate()
    return outs


@pytest.mark.parametrize("status", [0, 3])
def test_launcher_on_two_nodes_runs_one_job_numbered_node_by_node(status):
    """torchrun's multi-node form: the same command with --node-rank 0 and 1; node 1 checks in
    with node 0 (started after it here, so it waits), node 0 starts all 2 x 2 ranks, and both
    launchers exit with the job's status."""
    _need_mpi()
    port = _free_port()
    node1 = _launcher(1, port, str(status))
    time.sleep(0.5)
    node0 = _launcher(0, port, str(status))
    out0, out1 = _finish(node0, node1)
    assert node0.returncode == status and node1.returncode == status, out0 + out1
    lines = sorted(re.findall(r"node-check rank (\d)/(\d) RANK=(\d) WORLD_SIZE=(\d) GROUP_RANK=(\d) .*sum (\d+)",
                              out0))
    assert [(r, n, R, W, G) for r, n, R, W, G, _ in lines] == \
        [(str(r), "4", str(r), "4", str(r // 2)) for r in range(4)], out0
    assert all(total == "6" for *_, total in lines), out0       # a collective over both nodes
    assert "checked in with node 0" in out1


def test_launcher_nodes_that_do_not_fit_are_refused_and_a_missing_node_times_out():
    _need_mpi()
    port = _free_port()
    node0 = _launcher(0, port, timeout="6")
    time.sleep(0.5)
    import json
    import socket
    for junk in (b"[" * 1100 + b"\n", json.dumps({"node_rank": True, "nproc": 2}).encode() + b"\n"):
        deadline = time.monotonic() + 30          # hostile check-ins are refused, node 0 goes on
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                    s.sendall(junk)
                    reply = s.recv(4096)
                break
            except OSError:
                assert time.monotonic() < deadline
                time.sleep(0.1)
        assert b'"error"' in reply, reply
    wrong = _launcher(1, port, nproc=3, timeout="6")           # another --nproc-per-node
    stray = _launcher(2, port, nnodes=3, timeout="6")          # a node rank node 0 has not
    out_wrong, out_stray, out0 = _finish(wrong, stray, node0)
    assert wrong.returncode == 1 and "--nproc-per-node 3 differs from node 0's 2" in out_wrong
    assert stray.returncode == 1 and "node rank 2 is not in 1..1" in out_stray
    assert node0.returncode == 1 and "node(s) [1] did not check in" in out0
    lone = _launcher(1, _free_port(), timeout="1")             # no node 0 at all
    (out,) = _finish(lone)
    assert lone.returncode == 1 and "could not reach node 0" in out


def test_launcher_ctrl_c_on_another_node_ends_the_whole_job():
    _need_mpi()
    token = f"sleep-{uuid.uuid4().hex[:12]}"
    port = _free_port()
    node0 = _launcher(0, port, "sleep", token, nproc=1, token=token)
    node1 = _launcher(1, port, "sleep", token, nproc=1, token=token)
    try:
        _wait_for_ready_ranks(node0, 2)
        os.kill(node1.pid, signal.SIGINT)          # Ctrl-C at node 1's launcher
        _finish(node0, node1, timeout=60)
    finally:
        _finish(node0, node1)
    assert node0.returncode != 0 and node1.returncode != 0
    assert _leftovers(token) == []


def test_launcher_command_line():
    from torchlite.distributed import run
    args = run.parse_args(["--nproc-per-node", "3", "train.py", "--lr", "0.1"])
    assert args.nproc_per_node == 3 and args.training_script == "train.py"
    assert args.training_script_args == ["--lr", "0.1"]
    assert run.parse_args(["--nproc_per_node=2", "--standalone", "t.py"]).nproc_per_node == 2
    assert run.parse_args(["--nproc-per-node", "cpu", "t.py"]).nproc_per_node == (os.cpu_count() or 1)
    a = run.parse_args(["--nnodes", "2", "--node-rank", "1", "--nproc-per-node", "2", "t.py"])
    assert (a.nnodes, a.node_rank) == (2, 1) and run.parse_args(["--nnodes", "3:3", "t.py"]).nnodes == 3
    for bad in (["--nnodes", "1:4"], ["--nnodes", "2", "--node-rank", "2"], ["--nproc-per-node", "0"],
                ["--nnodes", "0"], ["--rdzv-timeout", "0"]):
        with pytest.raises(SystemExit):
            run.parse_args(bad + ["t.py"])
    if _mpiexec() is None:
        pytest.skip("mpiexec is not installed")
    cmd = run.mpiexec_command(run.parse_args(["--nproc-per-node", "2", "-m", "pkg.train", "x"]))
    assert cmd[1:3] == ["-n", "2"] and "--oversubscribe" in cmd
    assert ("--allow-run-as-root" in cmd) == (os.geteuid() == 0)
    assert cmd[-3:] == ["-m", "pkg.train", "x"] and "torchlite.distributed._entry" in cmd
    # node 0 after the rendezvous: every node's ranks, one --host entry each, in node order;
    # the variables the ranks need forwarded to other machines
    cmd = run.mpiexec_command(run.parse_args(["--nnodes", "2", "--nproc-per-node", "2", "t.py"]),
                              hosts=["localhost", "10.0.0.7"])
    assert cmd[1:3] == ["-n", "4"] and cmd[cmd.index("--host") + 1] == "localhost:2,10.0.0.7:2"
    assert ["-x", "OMP_NUM_THREADS"] == cmd[cmd.index("-x"):cmd.index("-x") + 2]


def test_import_does_not_start_mpi():
    code = ("import sys, torchlite.distributed as dist, torchlite.nn.parallel\n"
            "assert 'mpi4py.MPI' not in sys.modules, 'imported mpi4py.MPI'\n"
            "assert not dist.is_initialized() and dist.ReduceOp.SUM is dist.ReduceOp.RedOpType.SUM\n"
            "print('fine')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=TIMEOUT)
    assert out.returncode == 0 and "fine" in out.stdout, out.stderr


@pytest.mark.parametrize("n", [2, 4])
def test_powerSGD_hooks_match_the_numpy_formula_and_train(n):
    """powerSGD_hook and batched_powerSGD_hook: one bucket against the formula recomputed in
    NumPy (warm start, error feedback, uncompressed small tensors), full rank equal to plain
    DDP, low rank training to the same parameters on every rank."""
    _need_mpi()
    rc, out, _ = _mpirun("powersgd.py", n)
    assert rc == 0, out
    for name in ("powerSGD formula:", "powerSGD full rank:", "batched powerSGD formula",
                 "powerSGD state checks", "ddp powerSGD:"):
        assert out.count(f"OK {name}") == n, (name, out)
    for r in range(n):
        assert f"OK powerSGD all (rank {r})" in out, out


def test_gloo_is_available_wherever_its_mpi_transport_is():
    import torchlite.distributed as dist
    assert dist.is_gloo_available() == dist.is_mpi_available()
