"""OFRecord datasets: write them from numpy arrays, image folders or MNIST, and read them back.

An OFRecord file holds records one after another, each an 8-byte little-endian length and a
serialized ``OFRecord`` protobuf message (a map from feature names to a bytes, float, double, int32
or int64 list). A dataset is a folder of part files ``part-0``, ``part-1``, ... (or zero-padded,
``part-00000``), which ``flow.data.ofrecord_reader`` reads.

As a tool::

    python -m weir.data.ofrecord arrays OUT_DIR --npz data.npz [--jpeg images] [--parts 4]
    python -m weir.data.ofrecord images OUT_DIR --folder DIR [--parts 4]
    python -m weir.data.ofrecord mnist OUT_DIR [--split train] [--size 32] [--parts 4]

``arrays``: each array of the .npz is a feature, its first axis the records (float32 arrays become
float_list, float64 double_list, int32 int32_list, int64 int64_list, uint8 bytes_list; arrays named
by ``--jpeg`` are images, written as JPEG bytes). ``images``: a folder of class folders of JPEG or PNG files
(ImageNet's layout), written as features ``encoded`` (the JPEG) and ``class/label`` (int32, the class
folder's index in sorted order). ``mnist``: the MNIST digits (``make data``) as JPEG images of
``--size`` pixels with their labels, the features OneFlow's image classification programs read.
"""

from __future__ import annotations

import argparse
import os
import struct
import sys

import numpy as np

from weir import _C
from weir.data import load_mnist

__all__ = ["encode_record", "parse_record", "write", "write_images", "write_mnist", "read", "part_path"]

# The kinds of OFRecord's Feature oneof, by field number.
_KINDS = {"bytes_list": 1, "float_list": 2, "double_list": 3, "int32_list": 4, "int64_list": 5}


def _varint(value: int) -> bytes:
    out = bytearray()
    value &= (1 << 64) - 1  # negative int32/int64 values are 10-byte two's complement varints
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return _varint((number << 3) | 2) + _varint(len(payload)) + payload


def _list(kind: str, values) -> bytes:
    if kind == "bytes_list":
        return b"".join(_field(1, bytes(v)) for v in values)
    array = np.asarray(values).reshape(-1)
    if kind == "float_list":
        packed = array.astype("<f4").tobytes()
    elif kind == "double_list":
        packed = array.astype("<f8").tobytes()
    else:
        packed = b"".join(_varint(int(v)) for v in array.tolist())
    return _field(1, packed)


def _kind_of(value) -> str:
    if isinstance(value, (bytes, bytearray)):
        return "bytes_list"
    if isinstance(value, (list, tuple)) and value and isinstance(value[0], (bytes, bytearray)):
        return "bytes_list"
    dtype = np.asarray(value).dtype
    if dtype == np.float32:
        return "float_list"
    if dtype == np.float64:
        return "double_list"
    if dtype == np.int32:
        return "int32_list"
    if dtype in (np.int64, np.int16, np.int8, np.uint16, np.uint32):
        return "int64_list"
    if dtype == np.uint8:
        return "bytes_list"
    raise TypeError(f"an OFRecord feature holds bytes, float32, float64, int32 or int64 values, got {dtype}")


def encode_record(features: dict) -> bytes:
    """The serialized OFRecord of `features`: {name: value}, a value being bytes (a bytes_list of one),
    a list of bytes, a uint8 array (its bytes), or numbers (a float32 array: float_list, float64:
    double_list, int32: int32_list, other integers: int64_list); or {name: (kind, values)}."""
    out = bytearray()
    for name, value in features.items():
        if isinstance(value, tuple) and len(value) == 2 and value[0] in _KINDS:
            kind, values = value
        else:
            kind = _kind_of(value)
            values = value
            if kind == "bytes_list":
                if isinstance(value, np.ndarray):
                    values = [value.tobytes()]
                elif isinstance(value, (bytes, bytearray)):
                    values = [value]
        entry = _field(1, str(name).encode()) + _field(2, _field(_KINDS[kind], _list(kind, values)))
        out += _field(1, entry)
    return bytes(out)


def parse_record(record: bytes) -> dict:
    """{name: (kind, values)} of a serialized OFRecord (Weir's own decoder): bytes lists as lists of
    bytes, numbers as numpy arrays. ValueError for a malformed record."""
    return _C.parse_ofrecord(record)


def part_path(out_dir, index: int, prefix: str = "part-", suffix_length: int = -1) -> str:
    """The path of part file `index`, named as flow.data.ofrecord_reader looks for it."""
    number = str(index) if suffix_length < 0 else str(index).zfill(suffix_length)
    return os.path.join(os.fspath(out_dir), f"{prefix}{number}")


def _write_parts(out_dir, records, count: int, parts: int, prefix: str, suffix_length: int):
    """Writes `count` records (an iterable of bytes) into `parts` part files, contiguous runs of about
    count / parts records each; returns the paths."""
    if parts < 1 or parts > max(count, 1):
        raise ValueError(f"parts must be within [1, {max(count, 1)}] (the records), got {parts}")
    os.makedirs(os.fspath(out_dir), exist_ok=True)
    paths = [part_path(out_dir, p, prefix, suffix_length) for p in range(parts)]
    iterator = iter(records)
    for p, path in enumerate(paths):
        begin, end = count * p // parts, count * (p + 1) // parts
        tmp = f"{path}.tmp-{os.getpid()}"
        with open(tmp, "wb") as f:
            for _ in range(begin, end):
                record = next(iterator)
                f.write(struct.pack("<q", len(record)))
                f.write(record)
        os.replace(tmp, path)  # a reader never sees half a part file
    return paths


def _jpeg(image: np.ndarray, quality: int) -> bytes:
    return _C.encode_jpeg(np.ascontiguousarray(image, dtype=np.uint8), int(quality))


def write(out_dir, features: dict, parts: int = 1, jpeg=(), quality: int = 95, prefix: str = "part-",
          suffix_length: int = -1):
    """Writes one record per index of the arrays in `features` ({name: array}, every array's first axis
    the records) into `parts` part files in `out_dir`. Names in `jpeg` are images ((n, h, w) or
    (n, h, w, 1 or 3) uint8, RGB), written as JPEG bytes. Returns the part files' paths."""
    if not features:
        raise ValueError("write: features is empty")
    arrays = {name: np.asarray(value) for name, value in features.items()}
    counts = {name: len(array) for name, array in arrays.items()}
    count = next(iter(counts.values()))
    if any(c != count for c in counts.values()):
        raise ValueError(f"write: every feature needs one entry per record, got {counts}")
    unknown = set(jpeg) - set(arrays)
    if unknown:
        raise ValueError(f"write: jpeg names features that are not given: {sorted(unknown)}")

    def records():
        for i in range(count):
            record = {}
            for name, array in arrays.items():
                record[name] = ("bytes_list", [_jpeg(array[i], quality)]) if name in jpeg else array[i]
            yield encode_record(record)

    return _write_parts(out_dir, records(), count, parts, prefix, suffix_length)


def write_images(out_dir, folder, parts: int = 1, prefix: str = "part-", suffix_length: int = -1):
    """Writes the JPEG and PNG files of `folder`'s class folders (``folder/<class>/<file>.jpg``, ``.png``) as records
    {"encoded": the file's bytes, "class/label": the class's index in sorted order (int32)}, in
    sorted order, into `parts` part files. Returns (paths, class names)."""
    classes = sorted(d for d in os.listdir(folder) if os.path.isdir(os.path.join(folder, d)))
    if not classes:
        raise ValueError(f"write_images: {folder} has no class folders")
    files = []
    for label, name in enumerate(classes):
        directory = os.path.join(folder, name)
        for file in sorted(os.listdir(directory)):
            if file.lower().endswith((".jpg", ".jpeg", ".png")):
                files.append((os.path.join(directory, file), label))
    if not files:
        raise ValueError(f"write_images: no .jpg, .jpeg or .png files in the class folders of {folder}")

    def records():
        for path, label in files:
            with open(path, "rb") as f:
                encoded = f.read()
            yield encode_record({"encoded": ("bytes_list", [encoded]), "class/label": ("int32_list", [label])})

    return _write_parts(out_dir, records(), len(files), parts, prefix, suffix_length), classes


def write_mnist(out_dir, split: str = "train", size: int = 28, parts: int = 1, limit: int = 0, quality: int = 95,
                data_dir=None, prefix: str = "part-", suffix_length: int = -1):
    """Writes MNIST's `split` ("train" or "test"; the first `limit` digits when limit > 0) as gray JPEG
    images of `size` x `size` (bilinear) in feature "encoded" and labels in "class/label" (int32)."""
    (train_images, train_labels), (test_images, test_labels) = load_mnist(1, 1, out_dir=data_dir)
    images, labels = (train_images, train_labels) if split == "train" else (test_images, test_labels)
    images = (images.reshape(-1, 28, 28) * 255.0 + 0.5).astype(np.uint8)
    labels = labels.reshape(-1).astype(np.int32)
    if limit > 0:
        images, labels = images[:limit], labels[:limit]

    def records():
        for image, label in zip(images, labels):
            pixels = image if size == 28 else _C.resize_image(image, size, size)[:, :, 0]
            yield encode_record({"encoded": ("bytes_list", [_jpeg(pixels, quality)]),
                                 "class/label": ("int32_list", [int(label)])})

    return _write_parts(out_dir, records(), len(labels), parts, prefix, suffix_length)


def read(path):
    """Yields {name: (kind, values)} for each record of the part file at `path`."""
    with open(path, "rb") as f:
        while True:
            header = f.read(8)
            if not header:
                return
            if len(header) != 8:
                raise ValueError(f"{path}: a record's length is cut off at byte {f.tell() - len(header)}")
            (length,) = struct.unpack("<q", header)
            record = f.read(length)
            if len(record) != length:
                raise ValueError(f"{path}: a record of {length} bytes is cut off")
            yield parse_record(record)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m weir.data.ofrecord", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("out_dir")
    common.add_argument("--parts", type=int, default=1, help="part files to write (default 1)")
    common.add_argument("--prefix", default="part-", help="part file name prefix (default part-)")
    common.add_argument("--suffix-length", type=int, default=-1, help="zero-pad part indices to this many digits")
    arrays = sub.add_parser("arrays", parents=[common], help="features from the arrays of an .npz file")
    arrays.add_argument("--npz", required=True)
    arrays.add_argument("--jpeg", action="append", default=[], help="an array of images to write as JPEG")
    images = sub.add_parser("images", parents=[common], help="JPEG files of a folder of class folders")
    images.add_argument("--folder", required=True)
    mnist = sub.add_parser("mnist", parents=[common], help="MNIST digits as JPEG images")
    mnist.add_argument("--split", choices=["train", "test"], default="train")
    mnist.add_argument("--size", type=int, default=28)
    mnist.add_argument("--limit", type=int, default=0, help="the first N digits only")
    mnist.add_argument("--data-dir", default=None, help="where the MNIST files are (default: make data's)")
    args = parser.parse_args(argv)
    where = {"prefix": args.prefix, "suffix_length": args.suffix_length}
    if args.command == "arrays":
        with np.load(args.npz) as data:
            paths = write(args.out_dir, {k: data[k] for k in data.files}, parts=args.parts, jpeg=args.jpeg, **where)
    elif args.command == "images":
        paths, classes = write_images(args.out_dir, args.folder, parts=args.parts, **where)
        print(f"{len(classes)} classes: {', '.join(classes)}")
    else:
        paths = write_mnist(args.out_dir, args.split, args.size, args.parts, args.limit, data_dir=args.data_dir, **where)
    print(f"wrote {len(paths)} part files to {args.out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
