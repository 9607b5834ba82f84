"""What the benchmark scripts share: the best of n timed calls, a percentile of them."""
import time


def best_of(fn, n):
    """The shortest of n calls of fn, in seconds."""
    best = float("inf")
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def percentile_time(fn, n, q):
    """The q-th percentile of n timed calls of fn (after two untimed ones), in seconds: less
    swayed by one lucky call than the best, less by other processes than the median."""
    fn()
    fn()
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    times.sort()
    return times[min(n - 1, int(n * q / 100))]
