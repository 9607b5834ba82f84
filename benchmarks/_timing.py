"""What the benchmark scripts share: the best of n timed calls."""
import time


def best_of(fn, n):
    """The shortest of n calls of fn, in seconds."""
    best = float("inf")
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best
