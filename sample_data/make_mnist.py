"""Convert the MNIST test set (IDX gz) into the project's sample parquet.

Run once: ``python sample_data/make_mnist.py [SRC_DIR]``. SRC_DIR defaults to
``../shared/data/mnist`` beside the checkout. Writes ``sample_data/mnist/train.parquet``
(first 8 000 images) and ``sample_data/mnist/test.parquet`` (last 2 000), columns
``image`` (fixed-size list of 784 uint8 pixels, row-major 28x28) and ``label`` (int64).
"""

import gzip
import struct
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
TRAIN_ROWS = 8000


def read_idx(path: Path) -> np.ndarray:
    """Parse an IDX file: big-endian magic (dtype code, ndim), then the dims, then the data."""
    data = gzip.decompress(path.read_bytes())
    _, dtype_code, ndim = struct.unpack(">HBB", data[:4])
    if dtype_code != 0x08:
        raise ValueError(f"{path}: expected unsigned-byte data, got type code {dtype_code:#x}")
    dims = struct.unpack(f">{ndim}I", data[4 : 4 + 4 * ndim])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def to_table(images: np.ndarray, labels: np.ndarray) -> pa.Table:
    flat = pa.array(images.reshape(-1), type=pa.uint8())
    return pa.table({
        "image": pa.FixedSizeListArray.from_arrays(flat, 28 * 28),
        "label": pa.array(labels.astype(np.int64)),
    })


def main(src: Path) -> None:
    images = read_idx(src / "t10k-images-idx3-ubyte.gz")
    labels = read_idx(src / "t10k-labels-idx1-ubyte.gz")
    if len(images) != len(labels):
        raise ValueError(f"{len(images)} images but {len(labels)} labels")
    out = HERE / "mnist"
    out.mkdir(exist_ok=True)
    pq.write_table(to_table(images[:TRAIN_ROWS], labels[:TRAIN_ROWS]), out / "train.parquet")
    pq.write_table(to_table(images[TRAIN_ROWS:], labels[TRAIN_ROWS:]), out / "test.parquet")
    print(f"wrote {TRAIN_ROWS} train and {len(images) - TRAIN_ROWS} test rows to {out}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE.parent.parent / "shared" / "data" / "mnist")
