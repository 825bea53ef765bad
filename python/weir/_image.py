"""Argument parsing shared by the image ops (conv2d, pooling): sizes, strides and padding in
OneFlow's accepted forms."""

from __future__ import annotations

__all__ = ["pair", "padding_spec", "check_format"]


def check_format(data_format, op: str) -> str:
    if data_format not in ("NCHW", "NHWC", "channels_first", "channels_last"):
        raise ValueError(f"{op}: data_format must be 'NCHW' or 'NHWC', got {data_format!r}")
    return {"channels_first": "NCHW", "channels_last": "NHWC"}.get(data_format, data_format)


def pair(value, what: str, op: str, data_format: str = "NCHW"):
    """An int or an (h, w) pair; also (1, 1, h, w) / (1, h, w, 1) in the data format's order."""
    if isinstance(value, int) and not isinstance(value, bool):
        return [value, value]
    try:
        items = [int(v) for v in value]
    except TypeError:
        raise TypeError(f"{op}: {what} must be an int or a pair of ints, got {value!r}") from None
    if len(items) == 4:
        items = items[2:] if data_format == "NCHW" else items[1:3]
    if len(items) != 2:
        raise ValueError(f"{op}: {what} must have 2 entries (height, width), got {value!r}")
    return items


def padding_spec(padding, op: str, data_format: str = "NCHW"):
    """("VALID" | "SAME" | "EXPLICIT", [top, bottom, left, right]) from "SAME"/"VALID", explicit
    per-axis (before, after) pairs for the 2 spatial axes or for all 4 axes (batch and channel
    pads must be 0), an int, or an (h, w) pair of symmetric pads."""
    if isinstance(padding, str):
        upper = padding.upper()
        if upper in ("SAME", "SAME_UPPER"):
            return "SAME", [0, 0, 0, 0]
        if upper == "VALID":
            return "VALID", [0, 0, 0, 0]
        raise ValueError(f"{op}: padding must be 'SAME', 'VALID' or explicit pads, got {padding!r}")
    if isinstance(padding, int) and not isinstance(padding, bool):
        return "EXPLICIT", [padding] * 4
    items = list(padding)
    if len(items) == 4 and all(isinstance(p, (list, tuple)) for p in items):
        spatial = items[2:] if data_format == "NCHW" else items[1:3]
        others = items[:2] if data_format == "NCHW" else [items[0], items[3]]
        if any(tuple(p) != (0, 0) for p in others):
            raise ValueError(f"{op}: only the spatial axes may be padded, got {padding!r}")
        items = spatial
    if len(items) == 2 and all(isinstance(p, (list, tuple)) and len(p) == 2 for p in items):
        return "EXPLICIT", [int(items[0][0]), int(items[0][1]), int(items[1][0]), int(items[1][1])]
    if len(items) == 2 and all(isinstance(p, int) for p in items):
        return "EXPLICIT", [items[0], items[0], items[1], items[1]]
    raise ValueError(f"{op}: padding must be 'SAME', 'VALID', an int, (h, w) or ((top, bottom), (left, right)), "
                     f"got {padding!r}")
