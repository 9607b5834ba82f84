"""Where a training step's host time goes: the benchmark's MLP and small-CNN steps on a device,
with the kernel launches counted and the Python functions that cost the most listed
(cProfile, sorted by own time).  On a GPU the step is bound by this host time when the
kernels are small (issue 15's training-step target); on the CPU, with the tests' stand-in
driver, it shows the same host path without a GPU:

    python benchmarks/profile_step.py --device cuda [--steps 50] [--top 25] [--stand-in]

--stand-in runs the CUDA steps without a GPU, on the tests' stand-in driver
(tests/fake_cuda_driver.py) with every kernel launch and memset a no-op: what is timed is the
host path alone (the Python from the op to the C launch), the part issue 15's step targets
name, so it can be worked on where no GPU is lent; the values computed are meaningless.
"""
import argparse
import cProfile
import os
import pstats
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _cases_nn import _labels, _mlp, _set_weights, _small_cnn  # noqa: E402


class _Lib:
    def __init__(self, mod, device):
        self.mod, self.device = mod, device


def profile(name, make_model, x_shape, device, steps, top):
    import torchlite as tl
    from torchlite.cuda import _launch
    model = make_model(tl.nn)
    _set_weights(_Lib(tl, device), model, 0)
    model.to(device)
    opt = tl.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = tl.nn.CrossEntropyLoss()
    rng = np.random.default_rng(0)
    x = tl.tensor(rng.standard_normal(x_shape, dtype=np.float32)).to(device)
    y = tl.tensor(_labels(rng, x_shape[0])).to(device)

    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    for _ in range(5):
        step()
    tl.cuda.synchronize()
    launches = []
    real = _launch.launch
    _launch.launch = lambda k, *a, **kw: (launches.append(k.name), real(k, *a, **kw))[1]
    try:
        step()
    finally:
        _launch.launch = real
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    tl.cuda.synchronize()
    wall = (time.perf_counter() - t0) / steps
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(steps):
        step()
    tl.cuda.synchronize()
    prof.disable()
    print(f"== {name}: {wall * 1e3:.2f} ms/step, {len(launches)} kernel launches/step "
          f"({wall * 1e6 / max(1, len(launches)):.1f} us of wall time per launch)")
    kinds = {}
    for k in launches:
        kinds[k.split("<")[0]] = kinds.get(k.split("<")[0], 0) + 1
    print("   launches by kernel:", ", ".join(f"{k} {v}" for k, v in sorted(kinds.items(), key=lambda t: -t[1])))
    if device.startswith("cuda") and not STAND_IN:
        _kernel_times(step, steps)
    pstats.Stats(prof).sort_stats("tottime").print_stats(top)


def _kernel_times(step, steps):
    """The device time of each kernel of a step: CUDA events recorded around every launch
    (on the launch's stream), summed by kernel over `steps` steps.  Beside the wall time it
    says whether a step is bound by the host (kernels idle between launches) or the GPU."""
    import torchlite as tl
    from torchlite.cuda import _launch
    marks = []
    real = _launch.launch

    def timed_launch(k, *a, **kw):
        e0, e1 = tl.cuda.Event(enable_timing=True), tl.cuda.Event(enable_timing=True)
        e0.record()
        real(k, *a, **kw)
        e1.record()
        marks.append((k.name.split("<")[0], e0, e1))
    _launch.launch = timed_launch
    try:
        for _ in range(steps):
            step()
        tl.cuda.synchronize()
    finally:
        _launch.launch = real
    per = {}
    for name, e0, e1 in marks:
        per[name] = per.get(name, 0.0) + e0.elapsed_time(e1) / steps
    total = sum(per.values())
    print(f"   device time of the kernels: {total:.3f} ms/step; by kernel (ms/step): "
          + ", ".join(f"{k} {v:.3f}" for k, v in sorted(per.items(), key=lambda t: -t[1])))


STAND_IN = False


def _stand_in():
    """The tests' stand-in driver with no-op launches and memsets (see the docstring)."""
    import contextlib
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
    from fake_cuda_driver import FakeDriver, installed
    import fake_cuda_kernels

    class Patch:
        def setattr(self, obj, name, value):
            setattr(obj, name, value)

    @contextlib.contextmanager
    def ctx():
        with installed(FakeDriver()) as fake:
            fake_cuda_kernels.install(fake, Patch())
            fake.cuLaunchKernel = lambda *a: (0,)
            fake._memset = lambda *a, **k: (0,)
            yield
    return ctx()


def main():
    global STAND_IN
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--stand-in", action="store_true",
                    help="no GPU: the stand-in driver, launches as no-ops (host path alone)")
    a = ap.parse_args()
    STAND_IN = a.stand_in
    import contextlib
    with _stand_in() if a.stand_in else contextlib.nullcontext():
        profile("MLP 784-512-512-10, batch 64", _mlp, (64, 784), a.device, a.steps, a.top)
        profile("small CNN, batch 64", _small_cnn, (64, 1, 28, 28), a.device, a.steps, a.top)


if __name__ == "__main__":
    main()
