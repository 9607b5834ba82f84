"""Fetchers (torch.utils.data._utils.fetch): read one batch (or one sample, when batching is
off) from a dataset and collate it.  The same code runs in the main process and in workers."""

__all__ = ["_DatasetKind"]


class _MapDatasetFetcher:
    """Indexes a map-style dataset: with batching, one `__getitems__(indices)` call when the
    dataset has it, else one `dataset[i]` per index."""

    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        getitems = getattr(dataset, "__getitems__", None)
        self._getitems = getitems if getitems else None

    def fetch(self, possibly_batched_index):
        if not self.auto_collation:
            return self.collate_fn(self.dataset[possibly_batched_index])
        if self._getitems is not None:
            data = self._getitems(possibly_batched_index)
        else:
            dataset = self.dataset
            data = [dataset[idx] for idx in possibly_batched_index]
        return self.collate_fn(data)


class _IterableDatasetFetcher:
    """Draws from an iterable dataset's iterator: with batching, up to len(index) samples
    (StopIteration when none are left, or when the batch is short and drop_last is set)."""

    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.dataset_iter = iter(dataset)
        self.ended = False

    def fetch(self, possibly_batched_index):
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.dataset_iter))
        data = []
        for _ in possibly_batched_index:
            try:
                data.append(next(self.dataset_iter))
            except StopIteration:
                self.ended = True
                break
        if not data or (self.drop_last and len(data) < len(possibly_batched_index)):
            raise StopIteration
        return self.collate_fn(data)


class _DatasetKind:
    """Whether a loader reads a map-style or an iterable dataset."""
    Map = 0
    Iterable = 1

    @staticmethod
    def create_fetcher(kind, dataset, auto_collation, collate_fn, drop_last):
        fetcher = _MapDatasetFetcher if kind == _DatasetKind.Map else _IterableDatasetFetcher
        return fetcher(dataset, auto_collation, collate_fn, drop_last)
