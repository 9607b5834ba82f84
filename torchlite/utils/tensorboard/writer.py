"""SummaryWriter (PyTorch's torch.utils.tensorboard.SummaryWriter) and FileWriter, the event file
of one run.  Values may be torchlite tensors (requiring grad or not, on any device), NumPy
arrays or Python numbers; _summary.py builds the records, _tb.py's EventFileWriter writes them."""
from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

import numpy as np

from . import _convert, _summary
from ._tb import EventFileWriter, event_pb2, projector_config_pb2

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from ..._tensor import Tensor
    from ...nn.modules.module import Module

__all__ = ["SummaryWriter", "FileWriter"]


class FileWriter:
    """One event file in log_dir (tensorboard's EventFileWriter: a queue of max_queue events,
    written to disk at least every flush_secs seconds), taking Summary and Event protos."""

    def __init__(self, log_dir: str | os.PathLike[str], max_queue: int = 10, flush_secs: int = 120,
                 filename_suffix: str = "") -> None:
        """Create log_dir if needed and open a new event file in it."""
        self.event_writer = EventFileWriter(str(log_dir), max_queue, flush_secs, filename_suffix)

    def get_logdir(self) -> str:
        """The directory the event file is in."""
        return self.event_writer.get_logdir()

    def add_event(self, event: event_pb2.Event, step: int | None = None, walltime: float | None = None) -> None:
        """Write event, stamped with walltime (default: now) and step (when given)."""
        event.wall_time = time.time() if walltime is None else float(walltime)
        if step is not None:
            event.step = int(step)
        self.event_writer.add_event(event)

    def add_summary(self, summary: Any, global_step: int | None = None, walltime: float | None = None) -> None:
        """Write a Summary proto as an event."""
        self.add_event(event_pb2.Event(summary=summary), global_step, walltime)

    def add_graph(self, graph_profile: tuple[Any, Any], walltime: float | None = None) -> None:
        """Write a (GraphDef, RunMetadata) pair: the graph, then its run metadata tagged 'step1'."""
        graph_def, run_metadata = graph_profile
        self.add_event(event_pb2.Event(graph_def=graph_def.SerializeToString()), None, walltime)
        tagged = event_pb2.TaggedRunMetadata(tag="step1", run_metadata=run_metadata.SerializeToString())
        self.add_event(event_pb2.Event(tagged_run_metadata=tagged), None, walltime)

    def flush(self) -> None:
        """Write the queued events to disk."""
        self.event_writer.flush()

    def close(self) -> None:
        """Flush and close the event file."""
        self.event_writer.close()


def _default_log_dir(comment):
    import socket
    from datetime import datetime
    return os.path.join("runs", datetime.now().strftime("%b%d_%H-%M-%S") + "_" + socket.gethostname() + comment)


def _hparam_value(value):
    import torchlite
    if isinstance(value, (torchlite.Tensor, np.ndarray, np.generic)):
        array = _convert.to_numpy(value)
        if array.size != 1:
            raise ValueError(f"an hparam tensor holds one value, got shape {array.shape}")
        return array.reshape(-1)[0].item()
    return value


class SummaryWriter:
    """Writes TensorBoard event files in log_dir, for `tensorboard --logdir`.

    log_dir: the run's directory, by default runs/CURRENT_DATETIME_HOSTNAME followed by comment
    (comment is used only then).  purge_step: when resuming a run that stopped at a later step,
    TensorBoard hides the older events at purge_step and after.  max_queue, flush_secs: events
    are queued and written when max_queue are pending or every flush_secs seconds (and on flush
    and close).  filename_suffix: appended to the event files' names."""

    def __init__(self, log_dir: str | os.PathLike[str] | None = None, comment: str = "", purge_step: int | None = None,
                 max_queue: int = 10, flush_secs: int = 120, filename_suffix: str = "") -> None:
        """Open the run's event file (see the class docstring)."""
        self.log_dir = str(log_dir) if log_dir else _default_log_dir(comment)
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self.file_writer = self.all_writers = None
        self._get_file_writer()

    def _get_file_writer(self):
        """The run's FileWriter, opened again after close()."""
        if self.all_writers is None or self.file_writer is None:
            self.file_writer = FileWriter(self.log_dir, self.max_queue, self.flush_secs, self.filename_suffix)
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
            if self.purge_step is not None:
                step, self.purge_step = self.purge_step, None
                self.file_writer.add_event(event_pb2.Event(file_version="brain.Event:2"), step)
                start = event_pb2.SessionLog(status=event_pb2.SessionLog.START)
                self.file_writer.add_event(event_pb2.Event(session_log=start), step)
        return self.file_writer

    def get_logdir(self) -> str:
        """The run's directory."""
        return self.log_dir

    def _write(self, summary, global_step=None, walltime=None):
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def add_scalar(self, tag: str, scalar_value: Tensor | np.ndarray | float, global_step: int | None = None,
                   walltime: float | None = None, new_style: bool = False, double_precision: bool = False) -> None:
        """Log one number under tag at global_step; walltime (seconds since the epoch) defaults to
        now.  new_style: store it as a tensor of the scalars plugin (float64 with double_precision)
        rather than as a simple value."""
        self._write(_summary.scalar(tag, _convert.to_numpy(scalar_value), new_style, double_precision),
                    global_step, walltime)

    def add_scalars(self, main_tag: str, tag_scalar_dict: dict[str, Tensor | np.ndarray | float],
                    global_step: int | None = None, walltime: float | None = None) -> None:
        """Log several numbers as one chart: each {tag: value} goes, under main_tag, to its own run
        <log_dir>/<main_tag with '/' as '_'>_<tag> (a FileWriter of its own)."""
        walltime = time.time() if walltime is None else walltime
        logdir = self._get_file_writer().get_logdir()
        for tag, value in tag_scalar_dict.items():
            sub = f"{logdir}/{main_tag.replace('/', '_')}_{tag}"
            if sub not in self.all_writers:
                self.all_writers[sub] = FileWriter(sub, self.max_queue, self.flush_secs, self.filename_suffix)
            self.all_writers[sub].add_summary(_summary.scalar(main_tag, _convert.to_numpy(value)), global_step,
                                              walltime)

    def add_histogram(self, tag: str, values: Tensor | np.ndarray, global_step: int | None = None,
                      bins: str | int | Sequence[float] = "tensorflow", walltime: float | None = None,
                      max_bins: int | None = None) -> None:
        """Log the histogram of values (any shape).  bins: 'tensorflow' (TensorFlow's exponential
        edges), or what np.histogram takes (a count, edges, or a rule such as 'auto', 'fd').
        max_bins: merge neighbouring bins until at most max_bins are left."""
        bins = _summary.default_bins() if isinstance(bins, str) and bins == "tensorflow" else bins
        self._write(_summary.histogram(tag, _convert.to_numpy(values), bins, max_bins), global_step, walltime)

    def add_histogram_raw(self, tag: str, min: float, max: float, num: int, sum: float, sum_squares: float,
                          bucket_limits: Sequence[float], bucket_counts: Sequence[float],
                          global_step: int | None = None, walltime: float | None = None) -> None:
        """Log a histogram computed elsewhere: its statistics and its buckets (right edges and
        counts, lists of the same length)."""
        self._write(_summary.histogram_raw(tag, min, max, num, sum, sum_squares, bucket_limits, bucket_counts),
                    global_step, walltime)

    def _image(self, tag, img_tensor, global_step, walltime, dataformats):
        hwc = _convert.to_uint8(_convert.to_hwc(_convert.to_numpy(img_tensor), dataformats))
        self._write(_summary.image(tag, hwc, _convert.encode_png(hwc)), global_step, walltime)

    def add_image(self, tag: str, img_tensor: Tensor | np.ndarray, global_step: int | None = None,
                  walltime: float | None = None, dataformats: str = "CHW") -> None:
        """Log one image laid out as dataformats ('CHW', 'HWC' or 'HW'; C is 1, 3 or 4), as a PNG.
        Floating-point pixels are read as [0, 1] (scaled by 255), uint8 ones as [0, 255]."""
        self._image(tag, img_tensor, global_step, walltime, dataformats)

    def add_images(self, tag: str, img_tensor: Tensor | np.ndarray, global_step: int | None = None,
                   walltime: float | None = None, dataformats: str = "NCHW") -> None:
        """Log a batch of images (dataformats 'NCHW' or 'NHWC') as one image: a grid of 8 a row,
        with no padding.  Pixels as for add_image."""
        self._image(tag, img_tensor, global_step, walltime, dataformats)

    def add_figure(self, tag: str, figure: Any | list[Any], global_step: int | None = None, close: bool = True,
                   walltime: float | None = None) -> None:
        """Log a matplotlib figure (or a list of them, as a grid) rendered as an image; close: close
        the figures afterwards.  Needs matplotlib."""
        if isinstance(figure, (list, tuple)):
            images = np.stack([_convert.figure_to_chw(f, close) for f in figure])
            self.add_images(tag, images, global_step, walltime, dataformats="NCHW")
        else:
            self.add_image(tag, _convert.figure_to_chw(figure, close), global_step, walltime, dataformats="CHW")

    def add_audio(self, tag: str, snd_tensor: Tensor | np.ndarray, global_step: int | None = None,
                  sample_rate: int = 44100, walltime: float | None = None) -> None:
        """Log a mono clip: snd_tensor holds the samples (shape (L,) or (1, L)) in [-1, 1]."""
        self._write(_summary.audio(tag, _convert.to_numpy(snd_tensor), sample_rate), global_step, walltime)

    def add_text(self, tag: str, text_string: str, global_step: int | None = None,
                 walltime: float | None = None) -> None:
        """Log a string (rendered as Markdown by TensorBoard's text tab)."""
        self._write(_summary.text(tag, text_string), global_step, walltime)

    def add_graph(self, model: Module, input_to_model: Tensor | tuple[Tensor, ...] | None = None, verbose: bool = False,
                  use_strict_trace: bool = True) -> None:
        """Log the model's graph: the ops torchlite.jit.trace records running model (in eval mode,
        its modes restored after) on input_to_model, a tensor or a tuple of them (without it, the
        graph torchlite.fx.symbolic_trace captures, with no shapes).  verbose: print the graph;
        use_strict_trace: trace's strict."""
        from ._graph import graph
        self._get_file_writer().add_graph(graph(model, input_to_model, verbose, use_strict_trace))

    def add_hparams(self, hparam_dict: dict[str, Any], metric_dict: dict[str, Any],
                    hparam_domain_discrete: dict[str, list[Any]] | None = None, run_name: str | None = None,
                    global_step: int | None = None) -> None:
        """Log one trial for the HParams tab, in the run <log_dir>/<run_name> (default: the time):
        hparam_dict {name: bool, int, float, str or None}, metric_dict {metric tag: value} (each
        logged there as a scalar at global_step), hparam_domain_discrete {name: the values it may
        take}."""
        if type(hparam_dict) is not dict or type(metric_dict) is not dict:
            raise TypeError("hparam_dict and metric_dict should be dictionary.")
        if hparam_domain_discrete is not None and type(hparam_domain_discrete) is not dict:
            raise TypeError("hparam_domain_discrete should be a dictionary.")
        values = {k: _hparam_value(v) for k, v in hparam_dict.items()}
        summaries = _summary.hparams(values, list(metric_dict), hparam_domain_discrete)
        logdir = os.path.join(self._get_file_writer().get_logdir(), run_name or str(time.time()))
        with SummaryWriter(log_dir=logdir) as run:
            for s in summaries:
                run.file_writer.add_summary(s, global_step)
            for k, v in metric_dict.items():
                run.add_scalar(k, v, global_step)

    def add_embedding(self, mat: Tensor | np.ndarray, metadata: list[Any] | Tensor | np.ndarray | None = None,
                      label_img: Tensor | np.ndarray | None = None, global_step: int | None = None,
                      tag: str = "default", metadata_header: list[str] | None = None) -> None:
        """Log points for the Projector tab: mat (N x D), metadata (N labels, or N rows of columns
        named by metadata_header), label_img (N x C x H x W images, shown as a sprite), in
        <log_dir>/<global_step, 5 digits>/<tag>/, listed in <log_dir>/projector_config.pbtxt."""
        from ._embedding import write_embedding
        import torchlite
        if isinstance(metadata, (torchlite.Tensor, np.ndarray)):
            metadata = _convert.to_numpy(metadata).tolist()
        if not hasattr(self, "_projector_config"):
            self._projector_config = projector_config_pb2.ProjectorConfig()
        write_embedding(self._get_file_writer().get_logdir(), self._projector_config, _convert.to_numpy(mat),
                        metadata, None if label_img is None else _convert.to_numpy(label_img), global_step, tag,
                        metadata_header)

    def add_pr_curve(self, tag: str, labels: Tensor | np.ndarray, predictions: Tensor | np.ndarray,
                     global_step: int | None = None, num_thresholds: int = 127,
                     weights: Tensor | np.ndarray | None = None, walltime: float | None = None) -> None:
        """Log a precision-recall curve: labels (true/false), predictions (probabilities in [0, 1]),
        optional weights, at num_thresholds (at most 127) evenly spaced thresholds."""
        weights = None if weights is None else _convert.to_numpy(weights)
        self._write(_summary.pr_curve(tag, _convert.to_numpy(labels), _convert.to_numpy(predictions), num_thresholds,
                                      weights), global_step, walltime)

    def add_pr_curve_raw(self, tag: str, true_positive_counts: Tensor | np.ndarray,
                         false_positive_counts: Tensor | np.ndarray, true_negative_counts: Tensor | np.ndarray,
                         false_negative_counts: Tensor | np.ndarray, precision: Tensor | np.ndarray,
                         recall: Tensor | np.ndarray, global_step: int | None = None, num_thresholds: int = 127,
                         weights: Any = None, walltime: float | None = None) -> None:
        """Log a precision-recall curve computed elsewhere: six arrays, one value per threshold
        (weights is accepted for PyTorch's signature and unused)."""
        curves = [_convert.to_numpy(c) for c in (true_positive_counts, false_positive_counts, true_negative_counts,
                                                  false_negative_counts, precision, recall)]
        self._write(_summary.pr_curve_raw(tag, *curves, num_thresholds), global_step, walltime)

    def add_custom_scalars(self, layout: dict[str, dict[str, list[Any]]]) -> None:
        """Lay out the Custom Scalars tab: {category: {chart title: ['Multiline', [tag regexes]]
        or ['Margin', [value tag, lower tag, upper tag]]}}."""
        self._write(_summary.custom_scalars(layout))

    def add_custom_scalars_multilinechart(self, tags: list[str], category: str = "default",
                                          title: str = "untitled") -> None:
        """A Custom Scalars chart of several tags in one category."""
        self.add_custom_scalars({category: {title: ["Multiline", tags]}})

    def add_custom_scalars_marginchart(self, tags: list[str], category: str = "default",
                                       title: str = "untitled") -> None:
        """A Custom Scalars chart of a value with its lower and upper bounds (three tags)."""
        self.add_custom_scalars({category: {title: ["Margin", tags]}})

    def flush(self) -> None:
        """Write every pending event of the run (and of add_scalars' runs) to disk."""
        for writer in (self.all_writers or {}).values():
            writer.flush()

    def close(self) -> None:
        """Flush and close the event files; logging again opens new ones."""
        for writer in (self.all_writers or {}).values():
            writer.flush()
            writer.close()
        self.file_writer = self.all_writers = None

    def __enter__(self) -> SummaryWriter:
        """The writer itself (closed when the with block ends)."""
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc_val: BaseException | None, exc_tb: Any) -> None:
        """Close the writer."""
        self.close()
