"""Summary protos, one builder per kind of record, from NumPy values (the writer converts what it
is given).  Each record's layout is the one PyTorch's SummaryWriter writes, so TensorBoard's
dashboards read it the same way."""
import io
import time
import wave

import numpy as np

from ._tb import (api_pb2, custom_scalar_metadata, hparams_metadata, hparams_plugin_data_pb2, hparams_summary_v2,
                  layout_pb2, make_tensor_proto, pr_curve_metadata, scalar_metadata, summary_pb2, tensor_pb2,
                  tensor_shape_pb2, text_metadata, types_pb2)

__all__ = ["scalar", "histogram", "histogram_raw", "default_bins", "image", "audio", "text", "pr_curve",
           "pr_curve_raw", "custom_scalars", "hparams"]

Summary = summary_pb2.Summary


def _one(tag, **value):
    return Summary(value=[Summary.Value(tag=tag, **value)])


def scalar(tag, value, new_style=False, double_precision=False):
    """One number: a simple_value (new_style=False), or a scalar tensor of the scalars plugin,
    float32 or (double_precision) float64."""
    value = np.asarray(value)
    if value.squeeze().ndim != 0:
        raise ValueError(f"a scalar must hold one number, got an array of shape {value.shape}")
    number = float(value.reshape(-1)[0])
    if not new_style:
        return _one(tag, simple_value=number)
    tensor = make_tensor_proto(np.asarray(number, np.float64 if double_precision else np.float32))
    return _one(tag, tensor=tensor, metadata=scalar_metadata.create_summary_metadata(None, None))


_DEFAULT_BINS = []


def default_bins():
    """bins='tensorflow': TensorFlow's edges, 0 and +-1e-12 growing by a factor 1.1 up to 1e20."""
    if not _DEFAULT_BINS:
        edge, positive = 1e-12, []
        while edge < 1e20:
            positive.append(edge)
            edge *= 1.1
        _DEFAULT_BINS.extend([-e for e in reversed(positive)] + [0.0] + positive)
    return _DEFAULT_BINS


def histogram(tag, values, bins, max_bins=None):
    """A HistogramProto of values (any shape) over np.histogram's bins (edges, a count or a
    NumPy rule name).  max_bins: neighbouring bins merged until at most max_bins are left.
    Only the buckets from the first to the last non-empty one are kept, each as its right
    edge, after an empty bucket ending at the left edge of the first."""
    values = np.asarray(values, np.float64).reshape(-1)
    if values.size == 0:
        raise ValueError("add_histogram: values holds no element")
    counts, edges = np.histogram(values, bins=bins)
    if max_bins is not None and len(counts) > max_bins:
        group = -(-len(counts) // max_bins)
        edges = np.append(edges[:-1:group], edges[-1])
        counts = np.pad(counts, (0, -len(counts) % group)).reshape(-1, group).sum(axis=1)
    filled = np.flatnonzero(counts)
    if filled.size == 0:
        raise ValueError("add_histogram: no value falls inside the bins")
    first, last = filled[0], filled[-1]
    return histogram_raw(tag, values.min(), values.max(), values.size, values.sum(), values @ values,
                         edges[first:last + 2], np.concatenate([[0], counts[first:last + 1]]))


def histogram_raw(tag, min, max, num, sum, sum_squares, bucket_limits, bucket_counts):
    """A HistogramProto from its statistics and buckets (right edges, counts) as given."""
    if len(bucket_limits) != len(bucket_counts):
        raise ValueError("add_histogram_raw: bucket_limits and bucket_counts must have the same length")
    histo = summary_pb2.HistogramProto(min=float(min), max=float(max), num=float(num), sum=float(sum),
                                       sum_squares=float(sum_squares),
                                       bucket_limit=np.asarray(bucket_limits, np.float64).tolist(),
                                       bucket=np.asarray(bucket_counts, np.float64).tolist())
    return _one(tag, histo=histo)


def image(tag, hwc, png):
    """An image summary: hwc, the H x W x C uint8 array, encoded as the PNG bytes png."""
    height, width, channels = hwc.shape
    return _one(tag, image=Summary.Image(height=height, width=width, colorspace=channels,
                                         encoded_image_string=png))


def audio(tag, samples, sample_rate=44100):
    """A mono 16-bit WAV clip of samples (amplitudes in [-1, 1], clipped to it)."""
    samples = np.asarray(samples, np.float64).squeeze()
    if samples.ndim != 1:
        raise ValueError(f"add_audio: expected one channel of samples, got an array of shape {samples.shape}")
    pcm = (samples.clip(-1, 1) * np.iinfo(np.int16).max).astype("<i2")
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(sample_rate)
        w.writeframes(pcm.tobytes())
    return _one(tag, audio=Summary.Audio(sample_rate=sample_rate, num_channels=1, length_frames=len(pcm),
                                         encoded_audio_string=buf.getvalue(), content_type="audio/wav"))


def _string_tensor(data, shape):
    dims = [tensor_shape_pb2.TensorShapeProto.Dim(size=n) for n in shape]
    return tensor_pb2.TensorProto(dtype=types_pb2.DT_STRING, string_val=[data],
                                  tensor_shape=tensor_shape_pb2.TensorShapeProto(dim=dims))


def text(tag, string):
    """A text-plugin summary of one string, under the tag `tag + '/text_summary'`."""
    return _one(f"{tag}/text_summary", tensor=_string_tensor(string.encode("utf-8"), [1]),
                metadata=text_metadata.create_summary_metadata(None, None))


def pr_curve(tag, labels, predictions, num_thresholds=127, weights=None):
    """The PR-curves plugin's 6 x T tensor (TP, FP, TN, FN, precision, recall at T thresholds,
    T = min(num_thresholds, 127)): each prediction p counts at threshold floor(p (T - 1)) and
    every lower one, as a positive with weight label * w, as a negative with (1 - label) * w."""
    n = min(int(num_thresholds), 127)
    labels = np.asarray(labels, np.float64).reshape(-1)
    predictions = np.asarray(predictions, np.float64).reshape(-1)
    weights = np.broadcast_to(np.asarray(1.0 if weights is None else weights, np.float64).reshape(-1),
                              labels.shape)
    with np.errstate(invalid="ignore"):
        index = np.floor(predictions * (n - 1))
    keep = (index >= 0) & (index <= n - 1)
    index = index[keep].astype(np.int64)
    tp_at = np.bincount(index, weights=(labels * weights)[keep], minlength=n)
    fp_at = np.bincount(index, weights=((1 - labels) * weights)[keep], minlength=n)
    tp, fp = np.cumsum(tp_at[::-1])[::-1], np.cumsum(fp_at[::-1])[::-1]
    tn, fn = fp[0] - fp, tp[0] - tp
    precision = tp / np.maximum(1e-7, tp + fp)
    recall = tp / np.maximum(1e-7, tp + fn)
    return pr_curve_raw(tag, tp, fp, tn, fn, precision, recall, n)


def pr_curve_raw(tag, tp, fp, tn, fn, precision, recall, num_thresholds=127):
    """The PR-curves plugin's summary from the six curves as given (float32)."""
    data = np.stack([np.asarray(c, np.float32).reshape(-1) for c in (tp, fp, tn, fn, precision, recall)])
    meta = pr_curve_metadata.create_summary_metadata(None, None, min(int(num_thresholds), 127))
    return _one(tag, tensor=make_tensor_proto(data), metadata=meta)


def custom_scalars(layout):
    """The custom-scalars plugin's layout: {category: {chart title: ['Multiline', [tag regexes]] or
    ['Margin', [value tag, lower tag, upper tag]]}}."""
    categories = []
    for category, charts in layout.items():
        content = []
        for title, (kind, tags) in charts.items():
            if kind == "Multiline":
                content.append(layout_pb2.Chart(title=title, multiline=layout_pb2.MultilineChartContent(tag=tags)))
            elif kind == "Margin":
                if len(tags) != 3:
                    raise ValueError(f"a Margin chart takes 3 tags (value, lower, upper), got {tags!r}")
                series = layout_pb2.MarginChartContent.Series(value=tags[0], lower=tags[1], upper=tags[2])
                content.append(layout_pb2.Chart(title=title, margin=layout_pb2.MarginChartContent(series=[series])))
            else:
                raise ValueError(f"chart {title!r}: the kind is 'Multiline' or 'Margin', not {kind!r}")
        categories.append(layout_pb2.Category(title=category, chart=content))
    data = layout_pb2.Layout(category=categories).SerializeToString()
    return _one(custom_scalar_metadata.CONFIG_SUMMARY_TAG, tensor=_string_tensor(data, []),
                metadata=custom_scalar_metadata.create_summary_metadata())


_HPARAM_TYPES = {bool: api_pb2.DATA_TYPE_BOOL, int: api_pb2.DATA_TYPE_FLOAT64, float: api_pb2.DATA_TYPE_FLOAT64,
                 str: api_pb2.DATA_TYPE_STRING}


def _hparams_summary(tag, **plugin_data):
    data = hparams_plugin_data_pb2.HParamsPluginData(**plugin_data)
    return _one(tag, tensor=hparams_metadata.NULL_TENSOR, metadata=hparams_metadata.create_summary_metadata(data))


def hparams(values, metrics, domains=None):
    """The hparams plugin's three summaries (experiment, session start, session end) for values,
    {name: bool, int, float or str; None skipped}, metric tags `metrics` and domains,
    {name: [the values it may take]}."""
    domains = domains or {}
    infos = []
    values = {k: v for k, v in values.items() if v is not None}
    for name, value in values.items():
        if type(value) not in _HPARAM_TYPES:
            raise ValueError(f"hparam_dict[{name!r}] is a {type(value).__name__}: a value is a bool, int, "
                             f"float, str, None or a one-element tensor")
        info = api_pb2.HParamInfo(name=name, type=_HPARAM_TYPES[type(value)])
        if name in domains:
            allowed = domains[name]
            kind = (int, float) if info.type == api_pb2.DATA_TYPE_FLOAT64 else type(value)
            if not isinstance(allowed, (list, tuple)) or not all(
                    isinstance(v, kind) and isinstance(v, bool) == isinstance(value, bool) for v in allowed):
                raise TypeError(f"hparam_domain_discrete[{name!r}] should be a list of values of the type of "
                                f"hparam_dict[{name!r}]")
            info.domain_discrete.extend(list(allowed))
        infos.append(info)
    experiment = api_pb2.Experiment(hparam_infos=infos, time_created_secs=time.time(),
                                    metric_infos=[api_pb2.MetricInfo(name=api_pb2.MetricName(tag=t))
                                                  for t in metrics])
    end = hparams_plugin_data_pb2.SessionEndInfo(status=api_pb2.STATUS_SUCCESS, end_time_secs=time.time())
    return (_hparams_summary(hparams_metadata.EXPERIMENT_TAG, experiment=experiment),
            hparams_summary_v2.hparams_pb(values),
            _hparams_summary(hparams_metadata.SESSION_END_INFO_TAG, session_end_info=end))
