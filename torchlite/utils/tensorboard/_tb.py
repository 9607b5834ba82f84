"""The tensorboard package's protobufs, plugin metadata helpers and event-file writer, imported
in this one place: without tensorboard, importing it raises ImportError with the install hint."""
try:
    from tensorboard.compat import tf as _tf
    from tensorboard.compat.proto import (attr_value_pb2, config_pb2, event_pb2, graph_pb2, node_def_pb2,
                                          step_stats_pb2, summary_pb2, tensor_pb2, tensor_shape_pb2, types_pb2,
                                          versions_pb2)
    from tensorboard.plugins.custom_scalar import layout_pb2
    from tensorboard.plugins.custom_scalar import metadata as custom_scalar_metadata
    from tensorboard.plugins.hparams import api_pb2
    from tensorboard.plugins.hparams import metadata as hparams_metadata
    from tensorboard.plugins.hparams import plugin_data_pb2 as hparams_plugin_data_pb2
    from tensorboard.plugins.hparams import summary_v2 as hparams_summary_v2
    from tensorboard.plugins.pr_curve import metadata as pr_curve_metadata
    from tensorboard.plugins.projector import projector_config_pb2
    from tensorboard.plugins.scalar import metadata as scalar_metadata
    from tensorboard.plugins.text import metadata as text_metadata
    from tensorboard.summary.writer.event_file_writer import EventFileWriter
    from tensorboard.util.tensor_util import make_tensor_proto
except ImportError as e:
    raise ImportError(f"torchlite.utils.tensorboard writes event files with the tensorboard package, which "
                      f"could not be imported ({e}): pip install \"torchlite-dl[tensorboard]\"") from e

gfile = _tf.io.gfile

__all__ = ["attr_value_pb2", "config_pb2", "event_pb2", "graph_pb2", "node_def_pb2", "step_stats_pb2",
           "summary_pb2", "tensor_pb2", "tensor_shape_pb2", "types_pb2", "versions_pb2", "layout_pb2",
           "custom_scalar_metadata", "api_pb2", "hparams_metadata", "hparams_plugin_data_pb2",
           "hparams_summary_v2", "pr_curve_metadata", "projector_config_pb2", "scalar_metadata",
           "text_metadata", "EventFileWriter", "make_tensor_proto", "gfile"]
