"""``flow.data``: datasets as numpy batches."""

from __future__ import annotations

import os

import numpy as np

from weir import _C

__all__ = ["load_mnist"]


def _data_dir(out_dir):
    if out_dir:
        return out_dir
    return os.environ.get("WEIR_DATA_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "weir", "mnist")


_announced = set()  # the folders load_mnist has named


def load_mnist(train_batch_size=100, test_batch_size=100, data_format="NCHW", url=None, hash_check=None,
               out_dir=None):
    """MNIST in batches, as OneFlow's load_mnist: images float32 / 255 shaped (batches, batch, 1, 28, 28)
    (NCHW) or (batches, batch, 28, 28, 1) (NHWC), labels int32 (batches, batch); file order, unshuffled.

    The data comes from `out_dir` (a folder with the four IDX files or a mnist.npz, or an .npz path),
    else $WEIR_DATA_DIR, else ~/.cache/weir/mnist, where `make data` puts it. Weir never downloads:
    `url` and `hash_check` are accepted for compatibility (`make data` checks sha256 sums)."""
    if data_format not in ("NCHW", "NHWC"):
        raise ValueError(f"flow.data.load_mnist: data_format must be 'NCHW' or 'NHWC', got {data_format!r}")
    path = _data_dir(out_dir)
    (train_images, train_labels), (test_images, test_labels) = _C.load_mnist(int(train_batch_size), path)
    if test_batch_size != train_batch_size:
        _, (test_images, test_labels) = _C.load_mnist(int(test_batch_size), path)
    if path not in _announced:  # OneFlow's line, once per folder rather than at every call
        _announced.add(path)
        print(f"File mnist already exist, path: {path}")
    if data_format == "NHWC":
        train_images = np.ascontiguousarray(np.moveaxis(train_images, 2, -1))
        test_images = np.ascontiguousarray(np.moveaxis(test_images, 2, -1))
    return (train_images, train_labels), (test_images, test_labels)
