"""``image``: image files as rows, decoded, in Spark's image schema (column ``image``: origin,
height, width, nChannels, mode, data with the pixels in OpenCV's BGR order)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from ..files import data_files
from ...options import Param, flag
from .base import DataSource

# OpenCV type codes Spark's image schema puts in `mode`, by channel count (8-bit unsigned)
_CV_8U = {1: 0, 3: 16, 4: 24}
IMAGE_TYPE = pa.struct([("origin", pa.string()), ("height", pa.int32()), ("width", pa.int32()),
                        ("nChannels", pa.int32()), ("mode", pa.int32()), ("data", pa.binary())])


def _decode(file: str) -> dict | None:
    from PIL import Image, UnidentifiedImageError  # Pillow: loaded on first use

    try:
        with Image.open(file) as img:
            img = img.convert({"1": "L", "L": "L", "RGBA": "RGBA", "LA": "RGBA", "PA": "RGBA"}.get(img.mode, "RGB"))
            pixels = np.asarray(img)
    except (UnidentifiedImageError, OSError):
        return None
    if pixels.ndim == 2:
        pixels = pixels[:, :, None]
    channels = pixels.shape[2]
    bgr = pixels[:, :, [2, 1, 0, 3][:channels]] if channels >= 3 else pixels
    return {"origin": Path(file).as_uri(), "height": pixels.shape[0], "width": pixels.shape[1],
            "nChannels": channels, "mode": _CV_8U[channels], "data": np.ascontiguousarray(bgr).tobytes()}


def _load(session, s) -> None:
    drop_invalid = flag(s.options, "dropInvalid", False)
    rows = []
    for file in data_files(session.local_path(s.path), "image"):
        decoded = _decode(file)
        if decoded is None and drop_invalid:
            continue
        rows.append(decoded or {"origin": Path(file).as_uri(), "height": -1, "width": -1, "nChannels": -1,
                                "mode": -1, "data": b""})
    session.catalog.add_arrow(s.table, pa.table({"image": pa.array(rows, IMAGE_TYPE)}), f"image.`{s.path}`")


SOURCE = DataSource(
    "image", "image files (a file or a folder) as rows of decoded pixels, Spark's image schema; load only", _load,
    params=(Param("dropInvalid", "false", "leave out files that are not images (otherwise: a row with height -1)"),),
)
