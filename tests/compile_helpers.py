"""What the torchlite.compile test files share: a fresh compiler state around each test and
the fused kernels a compiled callable holds."""
import pytest

import torchlite._dynamo as dynamo


@pytest.fixture(autouse=True)
def fresh_compiler():
    """Every test starts and ends with no compiled graphs (imported by a test module, it
    applies to each of its tests)."""
    dynamo.reset()
    yield
    dynamo.reset()


def kernels_of(compiled):
    """The fused kernels of every graph a compiled callable (or OptimizedModule) holds."""
    c = compiled._compiled if hasattr(compiled, "_compiled") else compiled
    entries = list(c.cache.values()) + list(getattr(c, "dynamic_cache", {}).values())
    return [k for e in entries for k in getattr(e, "kernels", [])]
