"""Megatron-LM indexed datasets (the "mmap" format of its preprocess_data.py): write them from token
arrays and read them back, for ``flow.data.megatron_gpt_mmap_data_loader``.

A dataset is two files. ``<prefix>.bin`` holds the tokens, document after document.
``<prefix>.idx`` holds the magic ``MMIDIDX\\0\\0``, a u64 version (1), a u8 token dtype code
(1 uint8, 2 int8, 3 int16, 4 int32, 5 int64, 8 uint16), a u64 count N of sequences, a u64 count of
document boundaries, then N int32 lengths, N int64 byte offsets into the .bin, and the boundaries
(int64: the first sequence of each document, and N). Here each document is one sequence, as
Megatron writes a GPT dataset without sentence splitting.

As a tool::

    python -m weir.data.megatron PREFIX --text tokens.txt [--dtype uint16]
    python -m weir.data.megatron PREFIX --npz documents.npz [--dtype int32]

``--text``: one document per line, its token ids separated by spaces. ``--npz``: each array a
document (1-D integers), in the order of the archive. The token dtype is uint16 where every id fits
(Megatron's choice for vocabularies under 65,500), else int32, unless ``--dtype`` says.
"""

from __future__ import annotations

import argparse
import struct
import sys

import numpy as np

__all__ = ["write", "read"]

_MAGIC = b"MMIDIDX\x00\x00"
_CODES = {np.dtype(np.uint8): 1, np.dtype(np.int8): 2, np.dtype(np.int16): 3, np.dtype(np.int32): 4,
          np.dtype(np.int64): 5, np.dtype(np.uint16): 8}
_DTYPES = {code: dtype for dtype, code in _CODES.items()}


def _token_dtype(documents, dtype):
    if dtype is not None:
        dtype = np.dtype(dtype)
        if dtype not in _CODES:
            raise ValueError(f"weir.data.megatron.write: dtype must be one of {sorted(str(d) for d in _CODES)}, got {dtype}")
        return dtype
    low = min((int(d.min()) for d in documents if d.size), default=0)
    high = max((int(d.max()) for d in documents if d.size), default=0)
    return np.dtype(np.uint16) if low >= 0 and high < 65500 else np.dtype(np.int32)


def write(prefix, documents, dtype=None) -> int:
    """Writes ``<prefix>.bin`` and ``<prefix>.idx`` from `documents` (1-D integer arrays or lists of
    token ids, one per document); returns the number of tokens. Every id must fit `dtype` (default:
    uint16 where they all fit, else int32)."""
    documents = [np.asarray(d) for d in documents]
    for i, document in enumerate(documents):
        if document.ndim != 1 or not (document.size == 0 or np.issubdtype(document.dtype, np.integer)):
            raise ValueError(f"weir.data.megatron.write: document {i} must be a 1-D array of integer token ids, "
                             f"got {document.dtype} of shape {document.shape}")
    token = _token_dtype(documents, dtype)
    info = np.iinfo(token)
    sizes, offsets, offset = [], [], 0
    with open(f"{prefix}.bin", "wb") as out:
        for i, document in enumerate(documents):
            if document.size and (int(document.min()) < info.min or int(document.max()) > info.max):
                raise ValueError(f"weir.data.megatron.write: document {i} has token ids in [{document.min()}, "
                                 f"{document.max()}], outside {token}'s [{info.min}, {info.max}]")
            out.write(document.astype(token).tobytes())
            sizes.append(document.size)
            offsets.append(offset)
            offset += document.size * token.itemsize
    with open(f"{prefix}.idx", "wb") as out:
        out.write(_MAGIC + struct.pack("<QB", 1, _CODES[token]))
        out.write(struct.pack("<QQ", len(sizes), len(sizes) + 1))
        out.write(np.asarray(sizes, dtype="<i4").tobytes())
        out.write(np.asarray(offsets, dtype="<i8").tobytes())
        out.write(np.arange(len(sizes) + 1, dtype="<i8").tobytes())
    return int(sum(sizes))


def read(prefix) -> list:
    """The documents of ``<prefix>.idx`` / ``.bin``: a list of 1-D arrays of the dataset's token dtype."""
    with open(f"{prefix}.idx", "rb") as index:
        data = index.read()
    if data[:len(_MAGIC)] != _MAGIC:
        raise ValueError(f"weir.data.megatron.read: '{prefix}.idx' is not a Megatron index (no MMIDIDX magic)")
    version, code = struct.unpack_from("<QB", data, len(_MAGIC))
    if version != 1 or code not in _DTYPES:
        raise ValueError(f"weir.data.megatron.read: '{prefix}.idx' has version {version} and dtype code {code}; "
                         f"this reader takes version 1 and codes {sorted(_DTYPES)}")
    count, _ = struct.unpack_from("<QQ", data, len(_MAGIC) + 9)
    at = len(_MAGIC) + 25
    sizes = np.frombuffer(data, dtype="<i4", count=count, offset=at)
    offsets = np.frombuffer(data, dtype="<i8", count=count, offset=at + 4 * count)
    tokens = np.fromfile(f"{prefix}.bin", dtype=np.uint8)
    dtype = _DTYPES[code]
    return [tokens[o:o + s * dtype.itemsize].view(dtype) for s, o in zip(sizes.tolist(), offsets.tolist())]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m weir.data.megatron", description=__doc__.split("\n\n")[0])
    parser.add_argument("prefix", help="writes PREFIX.bin and PREFIX.idx")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--text", help="one document per line, token ids separated by spaces")
    source.add_argument("--npz", help="each array a document of token ids")
    parser.add_argument("--dtype", choices=sorted(str(d) for d in _CODES), help="the token dtype (default: uint16 "
                        "where every id fits, else int32)")
    args = parser.parse_args(argv)
    if args.text:
        with open(args.text) as lines:
            documents = [np.array(line.split(), dtype=np.int64) for line in lines if line.strip()]
    else:
        with np.load(args.npz) as archive:
            documents = [archive[key] for key in archive.files]
    tokens = write(args.prefix, documents, args.dtype)
    print(f"wrote {args.prefix}.bin and {args.prefix}.idx: {len(documents)} documents, {tokens} tokens")
    return 0


if __name__ == "__main__":
    sys.exit(main())
