"""torchlite.autograd.profiler: PyTorch's older profiler API, on the same recorder as
torchlite.profiler: `with profile() as prof:` ... `prof.key_averages().table()`,
`prof.function_events`, `export_chrome_trace`, `record_function`."""
from ..profiler import EventList, record_function
from ..profiler import profile as _profile

__all__ = ["profile", "record_function", "emit_nvtx", "EventList"]


class profile:
    """torch.autograd.profiler.profile(enabled=True, *, use_cuda=False, record_shapes=False,
    ...): records between __enter__ and __exit__ (nothing when enabled=False)."""

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False,
                 with_flops=False, profile_memory=False, with_stack=False, with_modules=False,
                 use_kineto=True, use_cpu=True, experimental_config=None, acc_events=False,
                 custom_trace_id_callback=None):
        self.enabled = enabled
        self._prof = _profile(record_shapes=record_shapes, use_cuda=use_cuda)

    def __enter__(self):
        if self.enabled:
            self._prof.start()
        return self

    def __exit__(self, *exc):
        if self.enabled:
            self._prof.stop()
        return False

    @property
    def function_events(self):
        return self._prof.events()

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0):
        return self._prof.key_averages(group_by_input_shape)

    def table(self, sort_by=None, row_limit=100, **kwargs):
        return self.key_averages().table(sort_by=sort_by, row_limit=row_limit, **kwargs)

    def export_chrome_trace(self, path):
        self._prof.export_chrome_trace(path)

    @property
    def self_cpu_time_total(self):
        return self.function_events.self_cpu_time_total


class emit_nvtx:
    """torch.autograd.profiler.emit_nvtx: a context manager; torchlite emits no NVTX ranges,
    so it only marks the block (record_function ranges still reach a running profile)."""

    def __init__(self, enabled=True, record_shapes=False):
        self.enabled = enabled

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
