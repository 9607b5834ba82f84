"""add_embedding's files for TensorBoard's projector: under <log_dir>/<step, 5 digits>/<tag>/,
tensors.tsv (one row a point), metadata.tsv (labels; a header row when there are several
columns) and sprite.png (the label images in a square grid), and projector_config.pbtxt in
log_dir listing every embedding the writer has added."""
import math
import warnings

import numpy as np

from . import _convert
from ._tb import gfile, projector_config_pb2

__all__ = ["write_embedding"]


def _write(path, data):
    with gfile.GFile(path, "wb") as f:
        f.write(data)


def _escape(tag):
    """tag as one folder name: '%', '/' and '\\' written as %xx."""
    return "".join(f"%{ord(c):02x}" if c in "%/\\" else c for c in tag)


def _metadata_tsv(metadata, header):
    if not header:
        rows = [str(x) for x in metadata]
    else:
        if any(len(row) != len(header) for row in metadata):
            raise ValueError("add_embedding: each metadata row needs one value per metadata_header column")
        rows = ["\t".join(str(x) for x in row) for row in [list(header)] + list(metadata)]
    return ("\n".join(rows) + "\n").encode("utf-8")


def _sprite_png(label_img):
    nrow = math.ceil(math.sqrt(label_img.shape[0]))
    if label_img.shape[1] == 1:
        label_img = np.repeat(label_img, 3, axis=1)
    tiled = _convert.grid(label_img.transpose(0, 2, 3, 1), ncols=nrow)
    square = np.zeros((tiled.shape[1], tiled.shape[1], tiled.shape[2]), tiled.dtype)   # rows to make it square
    square[:tiled.shape[0]] = tiled
    return _convert.encode_png(_convert.to_uint8(square))


def write_embedding(logdir, config, mat, metadata=None, label_img=None, global_step=None, tag="default",
                    metadata_header=None):
    """Write one embedding's files (mat: N x D; metadata: N labels or rows; label_img: N x C x H x W
    in [0, 1] or uint8) and add it to config (a ProjectorConfig) before rewriting the config file."""
    if mat.ndim != 2:
        raise ValueError(f"add_embedding: mat must be 2-D (points x dimensions), got shape {mat.shape}")
    step = 0 if global_step is None else int(global_step)
    subdir = f"{str(step).zfill(5)}/{_escape(tag)}"
    path = f"{logdir}/{subdir}"
    if gfile.exists(path):
        if not gfile.isdir(path):
            raise NotADirectoryError(f"add_embedding: {path} exists and is not a directory")
        warnings.warn(f"add_embedding: {path} exists and is overwritten (pass a new global_step for each "
                      f"embedding with the same tag)", stacklevel=3)
    else:
        gfile.makedirs(path)
    info = projector_config_pb2.EmbeddingInfo(tensor_name=f"{tag}:{str(step).zfill(5)}",
                                              tensor_path=f"{subdir}/tensors.tsv")
    if metadata is not None:
        if len(metadata) != mat.shape[0]:
            raise ValueError(f"add_embedding: {len(metadata)} metadata rows for {mat.shape[0]} points")
        _write(f"{path}/metadata.tsv", _metadata_tsv(metadata, metadata_header))
        info.metadata_path = f"{subdir}/metadata.tsv"
    if label_img is not None:
        if label_img.ndim != 4 or label_img.shape[0] != mat.shape[0]:
            raise ValueError(f"add_embedding: label_img must be N x C x H x W with N = {mat.shape[0]}, "
                             f"got shape {label_img.shape}")
        _write(f"{path}/sprite.png", _sprite_png(label_img))
        info.sprite.image_path = f"{subdir}/sprite.png"
        info.sprite.single_image_dim.extend([label_img.shape[3], label_img.shape[2]])
    _write(f"{path}/tensors.tsv", "".join("\t".join(str(v) for v in row) + "\n" for row in mat.tolist()).encode())
    config.embeddings.append(info)
    from google.protobuf import text_format
    _write(f"{logdir}/projector_config.pbtxt", text_format.MessageToString(config).encode("utf-8"))
