"""``flow.nn``: activations, dropout and losses."""

from __future__ import annotations

import numpy as np

from weir import _C, _context, dtypes, ops
from weir import random as _draws
from weir import initializers as _init
from weir._image import check_format, pair, padding_spec
from weir._ops_util import add_op, check_blob, constant_like, op_name
from weir import math as _math
from weir.math import fused_scale_tril, relu, sigmoid, tanh

__all__ = [
    "relu", "sigmoid", "tanh", "softmax", "logsoftmax", "dropout", "bias_add", "conv2d", "compat_conv2d", "max_pool2d",
    "avg_pool2d", "batch_normalization", "sparse_softmax_cross_entropy_with_logits",
    "softmax_cross_entropy_with_logits", "sigmoid_cross_entropy_with_logits", "leaky_relu", "elu", "relu6",
    "hardtanh", "hardsigmoid", "hardswish", "mish", "swish", "sparse_cross_entropy", "moments",
    "L1Loss", "MSELoss", "BCELoss", "MarginRankingLoss", "TripletMarginLoss", "conv2d_transpose",
    "BCEWithLogitsLoss", "KLDivLoss", "PixelShuffle", "PixelShufflev2", "InstanceNorm1d", "InstanceNorm2d",
    "InstanceNorm3d", "GroupNorm", "conv1d", "fused_scale_tril", "layer_norm", "conv3d", "random_mask_like",
    "fused_bias_add_gelu", "fused_bias_add_dropout", "selu", "softsign", "silu", "fused_scale_tril_softmax_dropout",
    "max_pool3d", "avg_pool3d", "conv2d_transpose_V2",
]


def softmax(logits, axis=None, name=None):
    x = check_blob(logits, "flow.nn.softmax", "logits")
    return add_op("softmax", [x], op_name(name), axis=-1 if axis is None else int(axis))


def logsoftmax(logits, axis=None, name=None):
    """log(softmax(logits)) along `axis` (default the last), as OneFlow computes it."""
    x = check_blob(logits, "flow.nn.logsoftmax", "logits")
    return _math.log(softmax(x, axis), name)


# Activations built from the ops above: each is what OneFlow's kernel computes, and its gradient is
# the ops' own (the one-sided derivative at a kink may differ from OneFlow's).

def leaky_relu(x, alpha=0.2, name=None):
    """x where x > 0, alpha * x elsewhere."""
    x = check_blob(x, "flow.nn.leaky_relu", "x")
    scaled = _math.multiply(x, float(alpha))
    extremum = _math.maximum if float(alpha) <= 1.0 else _math.minimum
    return extremum(x, scaled, name)


def elu(x, alpha=1.0, name=None):
    """x where x > 0, alpha * (e^x - 1) elsewhere."""
    x = check_blob(x, "flow.nn.elu", "x")
    negative = _math.multiply(_math.expm1(_math.minimum(x, 0.0)), float(alpha))
    return _math.add(relu(x), negative, name)


def selu(x, scale=1.0507009873554805, alpha=1.6732632423543772, name=None):
    """scale * x where x > 0, scale * alpha * (e^x - 1) elsewhere (self-normalising ELU; OneFlow's
    defaults)."""
    x = check_blob(x, "flow.nn.selu", "x")
    return _math.multiply(elu(x, alpha), float(scale), name)


def softsign(x, name=None):
    """x / (1 + |x|)."""
    x = check_blob(x, "flow.nn.softsign", "x")
    return _math.divide(x, _math.add(_math.abs(x), 1.0), name)


def hardtanh(x, min_val=-1.0, max_val=1.0, name=None):
    """x clamped to [min_val, max_val]; the gradient passes strictly between them (OneFlow's)."""
    x = check_blob(x, "flow.nn.hardtanh", "x")
    if not float(min_val) < float(max_val):
        raise ValueError(f"flow.nn.hardtanh: min_val must be below max_val, got {min_val} and {max_val}")
    return add_op("clip_by_value", [x], op_name(name), min=float(min_val), max=float(max_val), open_gradient=True)


def relu6(x, name=None):
    """x clamped to [0, 6]."""
    return hardtanh(check_blob(x, "flow.nn.relu6", "x"), 0.0, 6.0, name)


def hardsigmoid(x, name=None):
    """0 for x <= -3, 1 for x >= 3, x / 6 + 1/2 between; the gradient dy / 6 strictly between."""
    x = check_blob(x, "flow.nn.hardsigmoid", "x")
    return add_op("unary", [x], op_name(name), kind="hardsigmoid")


def hardswish(x, name=None):
    """x * hardsigmoid(x): 0 for x <= -3, x for x >= 3, x (x + 3) / 6 between."""
    x = check_blob(x, "flow.nn.hardswish", "x")
    return add_op("unary", [x], op_name(name), kind="hardswish")


def mish(x, name=None):
    """x * tanh(softplus(x))."""
    x = check_blob(x, "flow.nn.mish", "x")
    return _math.multiply(x, tanh(_math.softplus(x)), name)


def swish(x, beta=1.0, name=None):
    """x * sigmoid(beta * x)."""
    x = check_blob(x, "flow.nn.swish", "x")
    inner = x if float(beta) == 1.0 else _math.multiply(x, float(beta))
    return _math.multiply(x, sigmoid(inner), name)


def silu(x, name=None):
    """x * sigmoid(x) (swish with beta 1)."""
    x = check_blob(x, "flow.nn.silu", "x")
    return _math.multiply(x, sigmoid(x), name)


# OneFlow exports the fused causal-attention softmax under flow.nn as well.
fused_scale_tril_softmax_dropout = _math.fused_scale_tril_softmax_dropout


def random_mask_like(like, rate, seed=None, noise_shape=None, name=None):
    """An int8 mask of `like`'s shape, each element 1 with probability 1 - rate and 0 otherwise, drawn
    anew at every call (OneFlow's flow.nn.random_mask_like: the mask of a dropout). Seeded as
    flow.random.CoinFlip is, on whose draws it is built."""
    op = "flow.nn.random_mask_like"
    x = check_blob(like, op, "like")
    if noise_shape is not None:
        raise ValueError(f"{op}: noise_shape is not supported; the mask has like's shape")
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0.0 <= rate < 1.0:
        raise ValueError(f"{op}: rate must be a number in [0, 1), got {rate!r}")
    count = 1
    for d in x.shape:
        count *= d
    flips = _draws.CoinFlip(batch_size=count, seed=seed, probability=1.0 - float(rate))
    return ops.reshape(flips, list(x.shape), name=name)


def dropout(x, rate, noise_shape=None, seed=None, name=None):
    """Zeroes each element with probability `rate` and scales the rest by 1/(1-rate) in train
    jobs; the identity in predict jobs. The mask changes at every call. Its sequence repeats from run
    to run when `seed` is given; without it, the op draws its seed from Python's `random` module when
    the job is traced (as OneFlow does), so `random.seed(n)` before the first call makes it repeat."""
    x = check_blob(x, "flow.nn.dropout", "x")
    if noise_shape is not None:
        raise ValueError("flow.nn.dropout: noise_shape is not supported; the mask has x's shape")
    return _math._dropout(x, rate, seed, op_name(name))


def fused_bias_add_gelu(a, b, data_format=None, name=None):
    """gelu(bias_add(a, b, data_format)), as OneFlow's fused op; composed of the two here."""
    return _math.gelu(bias_add(a, b, data_format), name)


def fused_bias_add_dropout(a, b, data_format=None, rate=0.0, noise_shape=None, seed=None, name=None):
    """dropout(bias_add(a, b, data_format), rate), as OneFlow's fused op (the dropout acts in train
    jobs only); composed of the two here."""
    added = bias_add(a, b, data_format, name if rate <= 0 else None)
    return dropout(added, rate, noise_shape, seed, name) if rate > 0 else added


def bias_add(value, bias, data_format=None, name=None):
    """value + bias along the channel axis: 1 for NCHW / NC..., the last one for N...C."""
    x = check_blob(value, "flow.nn.bias_add", "value")
    b = check_blob(bias, "flow.nn.bias_add", "bias")
    if data_format is None or data_format.startswith("NC"):
        axis = 1
    elif data_format.startswith("N") and data_format.endswith("C"):
        axis = len(x.shape) - 1
    else:
        raise ValueError(f"flow.nn.bias_add: data_format must be like NCHW or NHWC, got {data_format!r}")
    return add_op("bias_add", [x, b], op_name(name), axis=axis)


def sparse_cross_entropy(labels, prediction, name=None):
    """-log(prediction[label]) per example: prediction (..., C) holds probabilities, labels (...) or
    (..., 1) integer classes."""
    op = "flow.nn.sparse_cross_entropy"
    labels = check_blob(labels, op, "labels")
    prediction = check_blob(prediction, op, "prediction")
    if len(labels.shape) == len(prediction.shape):
        if labels.shape[-1] != 1:
            raise ValueError(f"{op}: labels {tuple(labels.shape)} of prediction's rank must end in 1")
        labels = ops.reshape(labels, labels.shape[:-1])
    elif len(labels.shape) != len(prediction.shape) - 1:
        raise ValueError(f"{op}: labels {tuple(labels.shape)} must have one axis fewer than prediction "
                         f"{tuple(prediction.shape)}")
    picked = _math.reduce_sum(_math.multiply(ops.one_hot(labels, prediction.shape[-1], dtype=prediction.dtype),
                                             _math.log(prediction)), axis=-1)
    return _math.negative(picked, name)


def sparse_softmax_cross_entropy_with_logits(labels, logits, name=None):
    """Per-example cross entropy of softmax(logits) (N, C) against integer labels (N) or (N, 1)."""
    labels = check_blob(labels, "flow.nn.sparse_softmax_cross_entropy_with_logits", "labels")
    logits = check_blob(logits, "flow.nn.sparse_softmax_cross_entropy_with_logits", "logits")
    if len(labels.shape) == 2 and labels.shape[1] == 1:
        labels = add_op("reshape", [labels], shape=[labels.shape[0]])
    return add_op("sparse_softmax_cross_entropy", [labels, logits], op_name(name))




def softmax_cross_entropy_with_logits(labels, logits, name=None):
    """Cross entropy of softmax(logits) against dense label distributions along the last axis."""
    labels = check_blob(labels, "flow.nn.softmax_cross_entropy_with_logits", "labels")
    logits = check_blob(logits, "flow.nn.softmax_cross_entropy_with_logits", "logits")
    return add_op("softmax_cross_entropy", [labels, logits], op_name(name))


def sigmoid_cross_entropy_with_logits(labels=None, logits=None, name=None):
    """Elementwise logistic loss of logits against labels in [0, 1]."""
    labels = check_blob(labels, "flow.nn.sigmoid_cross_entropy_with_logits", "labels")
    logits = check_blob(logits, "flow.nn.sigmoid_cross_entropy_with_logits", "logits")
    return add_op("sigmoid_cross_entropy", [labels, logits], op_name(name))


def conv2d(input, filters, strides, padding, data_format="NCHW", dilations=None, groups=1, name=None,  # noqa: A002
           bias=None):
    """2-D cross-correlation of input with the weight blob `filters` (out, C/groups, kh, kw) for
    NCHW or (out, kh, kw, C/groups) for NHWC; `bias` (out,), if given, added to each channel (OneFlow
    0.4's keyword)."""
    op = "flow.nn.conv2d"
    x = check_blob(input, op, "input")
    w = check_blob(filters, op, "filters")
    data_format = check_format(data_format, op)
    out = add_op("conv2d", [x, w], op_name(name), strides=pair(strides, "strides", op, data_format),
                 dilations=pair(1 if dilations is None else dilations, "dilations", op, data_format),
                 padding=_padding(padding, op, data_format), data_format=data_format, groups=int(groups))
    if bias is None:
        return out
    bias = check_blob(bias, op, "bias")
    if tuple(bias.shape) != (w.shape[0],):
        raise ValueError(f"{op}: bias must have shape ({w.shape[0]},), one value per output channel, got "
                         f"{tuple(bias.shape)}")
    return bias_add(out, bias, data_format)


def compat_conv2d(input, filters, strides, padding, data_format="NCHW", dilations=None, groups=1, name=None):  # noqa: A002
    """OneFlow's TensorFlow-style conv2d: `padding` "SAME" (the odd pixel padded at the end, as
    TensorFlow) or "VALID", in either case; otherwise flow.nn.conv2d."""
    if not isinstance(padding, str) or padding.upper() not in ("SAME", "VALID"):
        raise ValueError(f'flow.nn.compat_conv2d: padding must be "SAME" or "VALID", got {padding!r}')
    return conv2d(input, filters, strides, padding.upper(), data_format, dilations, groups, name)


def _one(value, what, op):
    """An int or a one-element list (conv1d's strides, dilations, kernel size)."""
    items = [value] if isinstance(value, int) and not isinstance(value, bool) else list(value)
    if len(items) != 1 or not isinstance(items[0], int) or isinstance(items[0], bool):
        raise TypeError(f"{op}: {what} must be an int or a one-element list of ints, got {value!r}")
    return items[0]


def _conv1d_padding(padding, op, data_format):
    """conv1d's padding as conv2d's over (1, L): "SAME"/"VALID", an int, a (before, after) pair for
    the length, or one pair per axis (batch and channel pads 0)."""
    if isinstance(padding, str):
        return padding
    if isinstance(padding, int) and not isinstance(padding, bool):
        return [[0, 0], [padding, padding]]
    items = [tuple(p) for p in padding]
    if len(items) == 3:
        others = items[:2] if data_format == "NCW" else [items[0], items[2]]
        if any(p != (0, 0) for p in others):
            raise ValueError(f"{op}: only the length axis may be padded, got {padding!r}")
        items = [items[2] if data_format == "NCW" else items[1]]
    if len(items) != 1 or len(items[0]) != 2:
        raise ValueError(f"{op}: padding must be 'SAME', 'VALID', an int, (before, after) or one pair per axis, "
                         f"got {padding!r}")
    return [[0, 0], list(items[0])]


def conv1d(input, filters, strides, padding, data_format="NCW", dilations=None, groups=1, name=None):  # noqa: A002
    """1-D cross-correlation of input (N, C, L) or, NWC, (N, L, C) with the weight blob `filters`
    (out, C/groups, k) or, NWC, (out, k, C/groups); no bias. Runs as conv2d over images of height 1."""
    op = "flow.nn.conv1d"
    x = check_blob(input, op, "input")
    w = check_blob(filters, op, "filters")
    if data_format not in ("NCW", "NWC"):
        raise ValueError(f"{op}: data_format must be 'NCW' or 'NWC', got {data_format!r}")
    if len(x.shape) != 3 or len(w.shape) != 3:
        raise ValueError(f"{op}: input and filters must be 3-D, got {tuple(x.shape)} and {tuple(w.shape)}")
    axis = 2 if data_format == "NCW" else 1  # where the height of 1 goes
    image = ops.reshape(x, [*x.shape[:axis], 1, *x.shape[axis:]])
    kernel = ops.reshape(w, [*w.shape[:axis], 1, *w.shape[axis:]])
    dilation = 1 if dilations is None else _one(dilations, "dilations", op)
    y = conv2d(image, kernel, [1, _one(strides, "strides", op)], _conv1d_padding(padding, op, data_format),
               data_format="NCHW" if data_format == "NCW" else "NHWC", dilations=[1, dilation], groups=groups)
    return ops.reshape(y, [*y.shape[:axis], *y.shape[axis + 1:]], name=name)


def _triple(value, what, op, channels_first):
    """conv3d's and the 3-D poolings' sizes: an int, (d, h, w), one entry for all three, or five
    entries in the data format's order."""
    items = [value] * 3 if isinstance(value, int) and not isinstance(value, bool) else list(value)
    if len(items) == 1:
        items = items * 3
    if len(items) == 5:
        items = items[2:] if channels_first else items[1:4]
    if len(items) != 3 or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in items):
        raise ValueError(f"{op}: {what} must be a positive int or three of them (depth, height, width), got {value!r}")
    return items


def _conv3d_pads(padding, op, channels_first, depth, size, stride, dilation):
    """((depth before, after), conv2d's padding for height and width): "SAME" (the odd plane at the end,
    as for conv2d), "VALID", an int, or (before, after) pairs for the three spatial axes (or all five)."""
    if isinstance(padding, str):
        if padding.upper() == "VALID":
            return (0, 0), "VALID"
        if padding.upper() not in ("SAME", "SAME_UPPER"):
            raise ValueError(f"{op}: padding must be 'SAME', 'VALID' or explicit pads, got {padding!r}")
        total = max((-(-depth // stride) - 1) * stride + (size - 1) * dilation + 1 - depth, 0)
        return (total // 2, total - total // 2), "SAME"
    if isinstance(padding, int) and not isinstance(padding, bool):
        return (padding, padding), [[padding, padding], [padding, padding]]
    pairs = [tuple(p) for p in padding]
    if len(pairs) == 5:
        others = pairs[:2] if channels_first else [pairs[0], pairs[4]]
        if any(p != (0, 0) for p in others):
            raise ValueError(f"{op}: only the spatial axes may be padded, got {padding!r}")
        pairs = pairs[2:] if channels_first else pairs[1:4]
    if len(pairs) != 3 or any(len(p) != 2 for p in pairs):
        raise ValueError(f"{op}: padding must be 'SAME', 'VALID', an int or ((d0, d1), (h0, h1), (w0, w1)), got {padding!r}")
    return pairs[0], [list(pairs[1]), list(pairs[2])]


def conv3d(input, filters, strides, padding, data_format="NCDHW", dilations=None, groups=1, name=None):  # noqa: A002
    """3-D cross-correlation of input (N, C, D, H, W) or, NDHWC, (N, D, H, W, C) with the weight blob
    `filters` (out, C/groups, kd, kh, kw) or, NDHWC, (out, kd, kh, kw, C/groups); no bias. Built from
    conv2d: for each of the kd depth taps, the input planes that tap reads (a strided slice of the
    depth-padded input, the output planes folded into the batch) go through conv2d with that tap's
    filter, and the kd results add up: the multiply-adds of a direct 3-D convolution, plus a copy of the
    input per tap. Its gradients are those ops'."""
    op = "flow.nn.conv3d"
    x = check_blob(input, op, "input")
    w = check_blob(filters, op, "filters")
    if data_format not in ("NCDHW", "NDHWC", "channels_first", "channels_last"):
        raise ValueError(f"{op}: data_format must be 'NCDHW' or 'NDHWC', got {data_format!r}")
    channels_first = data_format in ("NCDHW", "channels_first")
    if len(x.shape) != 5 or len(w.shape) != 5:
        raise ValueError(f"{op}: input and filters must be 5-D, got {tuple(x.shape)} and {tuple(w.shape)}")
    if not channels_first:  # to NCDHW and back: conv2d runs NCHW here
        x = ops.transpose(x, [0, 4, 1, 2, 3])
        w = ops.transpose(w, [0, 4, 1, 2, 3])
    n, c, depth, height, width = x.shape
    out_channels, per_group, taps = w.shape[0], w.shape[1], w.shape[2]
    if per_group * int(groups) != c:
        raise ValueError(f"{op}: filters {tuple(w.shape)} take {per_group} channels per group, but input has {c} "
                         f"in {groups} group(s)")
    stride, sh, sw = _triple(strides, "strides", op, channels_first)
    dilation, dh, dw = _triple(1 if dilations is None else dilations, "dilations", op, channels_first)
    (before, after), spatial = _conv3d_pads(padding, op, channels_first, depth, taps, stride, dilation)
    if before or after:
        x = ops.pad(x, [[0, 0], [0, 0], [before, after], [0, 0], [0, 0]])
    padded = depth + before + after
    planes = (padded - (taps - 1) * dilation - 1) // stride + 1
    if planes < 1:
        raise ValueError(f"{op}: the input's depth {depth} (padded {padded}) is smaller than the filter's reach "
                         f"{(taps - 1) * dilation + 1}")
    total = None
    for k in range(taps):
        start = k * dilation
        slab = ops.slice_v2(x, [(None, None, None), (None, None, None), (start, start + (planes - 1) * stride + 1, stride)])
        slab = ops.reshape(ops.transpose(slab, [0, 2, 1, 3, 4]), [n * planes, c, height, width])
        tap = ops.reshape(ops.slice_v2(w, [(None, None, None), (None, None, None), (k, k + 1, 1)]),
                          [out_channels, per_group, w.shape[3], w.shape[4]])
        y = conv2d(slab, tap, [sh, sw], spatial, data_format="NCHW", dilations=[dh, dw], groups=groups)
        total = y if total is None else total + y
    y = ops.transpose(ops.reshape(total, [n, planes, *total.shape[1:]]), [0, 2, 1, 3, 4])
    if not channels_first:
        y = ops.transpose(y, [0, 2, 3, 4, 1])
    return y if name is None else ops.identity(y, name)


def conv2d_transpose(value=None, filter=None, output_shape=None, strides=None, padding="VALID",  # noqa: A002
                     data_format="NCHW", name=None, input=None, filters=None, dilations=None):  # noqa: A002
    """The transposed convolution: the adjoint of conv2d(·, filter, strides, padding) on inputs of
    `output_shape`, applied to `value` (alias `input`), which has that convolution's output shape.
    filter (alias `filters`): (value's channels, output channels, kh, kw) for NCHW, (value's channels,
    kh, kw, output channels) for NHWC. padding: "SAME" or "VALID", with the output's extra rows and
    columns (output_padding) where the convolution's windows do not reach."""
    op = "flow.nn.conv2d_transpose"
    if (value is None) == (input is None):
        raise ValueError(f"{op}: give one of value and input")
    if (filter is None) == (filters is None):
        raise ValueError(f"{op}: give one of filter and filters")
    x = check_blob(value if value is not None else input, op, "value")
    w = check_blob(filter if filter is not None else filters, op, "filter")
    data_format = check_format(data_format, op)
    if output_shape is None or len(output_shape) != 4 or len(x.shape) != 4 or len(w.shape) != 4:
        raise ValueError(f"{op}: value, filter and output_shape must be 4-D, got {tuple(x.shape)}, {tuple(w.shape)} "
                         f"and {output_shape!r}")
    if not isinstance(padding, str) or padding.upper() not in ("SAME", "VALID"):
        raise ValueError(f"{op}: padding must be 'SAME' or 'VALID', got {padding!r}")
    output_shape = [int(d) for d in output_shape]
    stride = pair(strides, "strides", op, data_format)
    dilation = pair(1 if dilations is None else dilations, "dilations", op, data_format)
    nchw = data_format == "NCHW"
    spatial_in = list(x.shape[2:] if nchw else x.shape[1:3])
    spatial_out = output_shape[2:] if nchw else output_shape[1:3]
    kernel = list(w.shape[2:] if nchw else w.shape[1:3])
    for i in range(2):
        extent = (kernel[i] - 1) * dilation[i] + 1
        expected = ((spatial_out[i] + stride[i] - 1) // stride[i] if padding.upper() == "SAME"
                    else (spatial_out[i] - extent) // stride[i] + 1)
        if expected != spatial_in[i]:
            raise ValueError(f"{op}: an output of shape {tuple(output_shape)} convolved with {padding.upper()} "
                             f"padding and strides {tuple(stride)} gives {'height' if i == 0 else 'width'} {expected}, "
                             f"but value {tuple(x.shape)} has {spatial_in[i]}")
    return add_op("conv2d_grad_data", [x, w], op_name(name), shape=output_shape, strides=stride, dilations=dilation,
                  padding=padding.upper(), data_format=data_format, groups=1)


def _padding(padding, op, data_format):
    """The padding attribute: "VALID", "SAME", or explicit [top, bottom, left, right]."""
    kind, pads = padding_spec(padding, op, data_format)
    return list(pads) if kind == "EXPLICIT" else kind


def _pool(op_type, op, input, ksize, strides, padding, data_format, ceil_mode, name):  # noqa: A002
    x = check_blob(input, op, "input")
    data_format = check_format(data_format, op)
    return add_op(op_type, [x], op_name(name), ksize=pair(ksize, "ksize", op, data_format),
                  strides=pair(strides, "strides", op, data_format), padding=_padding(padding, op, data_format),
                  data_format=data_format, ceil_mode=bool(ceil_mode))


def max_pool2d(input, ksize, strides, padding, data_format="NCHW", ceil_mode=False, name=None):  # noqa: A002
    """The largest element of each window; padded positions never win."""
    return _pool("max_pool2d", "flow.nn.max_pool2d", input, ksize, strides, padding, data_format, ceil_mode, name)


def avg_pool2d(input, ksize, strides, padding, data_format="NCHW", ceil_mode=False, name=None):  # noqa: A002
    """The mean of each window over the input pixels it covers (padding is not counted)."""
    return _pool("avg_pool2d", "flow.nn.avg_pool2d", input, ksize, strides, padding, data_format, ceil_mode, name)


def _pool3d(kind, op, input, ksize, strides, padding, data_format, ceil_mode, name):  # noqa: A002
    """A 3-D pooling built from the 2-D one: every depth plane pooled over height and width, then the
    depth windows combined from kd strided slices of those planes (the larger of them, or their sum
    times the window's share of real planes): the 2-D op's work plus a copy of its output per depth
    tap. Gradients are those ops'."""
    x = check_blob(input, op, "input")
    if data_format not in ("NCDHW", "NDHWC", "channels_first", "channels_last"):
        raise ValueError(f"{op}: data_format must be 'NCDHW' or 'NDHWC', got {data_format!r}")
    channels_first = data_format in ("NCDHW", "channels_first")
    if len(x.shape) != 5:
        raise ValueError(f"{op}: input must be 5-D, got shape {tuple(x.shape)}")
    if not channels_first:
        x = ops.transpose(x, [0, 4, 1, 2, 3])
    n, c, depth, height, width = x.shape
    kd, kh, kw = _triple(ksize, "ksize", op, channels_first)
    sd, sh, sw = _triple(strides, "strides", op, channels_first)
    (before, after), spatial = _conv3d_pads(padding, op, channels_first, depth, kd, sd, 1)
    if before >= kd or after >= kd:
        raise ValueError(f"{op}: padding along the depth ({before}, {after}) must be smaller than the window {kd}")
    span = depth + before + after - kd
    if span < 0:
        raise ValueError(f"{op}: the input's depth {depth} (padded {depth + before + after}) is smaller than the "
                         f"window {kd}")
    planes = span // sd + 1
    if ceil_mode and not (isinstance(padding, str) and padding.upper().startswith("SAME")):
        planes = -(-span // sd) + 1
        if (planes - 1) * sd >= depth + before:  # the last window would start past the input
            planes -= 1
    y = _pool(f"{kind}_pool2d", op, ops.reshape(x, [n, c * depth, height, width]), [kh, kw], [sh, sw], spatial,
              "NCHW", ceil_mode, None)
    y = ops.reshape(y, [n, c, depth, *y.shape[2:]])
    if kd > 1 or sd > 1 or before or after:
        reach = (planes - 1) * sd + kd  # padded planes the windows read
        pads = [(0, 0), (0, 0), (before, max(reach - depth - before, 0)), (0, 0), (0, 0)]
        padded = ops.pad(y, pads, -np.inf if kind == "max" else 0) if pads[2] != (0, 0) else y
        taps = [ops.slice_v2(padded, [(None, None, None), (None, None, None), (k, k + (planes - 1) * sd + 1, sd)])
                for k in range(kd)]
        y = taps[0]
        for tap in taps[1:]:
            y = _math.maximum(y, tap) if kind == "max" else y + tap
        if kind == "avg":  # each window's sum over its real planes, divided by how many there are
            starts = np.arange(planes) * sd - before
            counts = np.minimum(starts + kd, depth) - np.maximum(starts, 0)
            y = y * ops.constant((1.0 / counts).reshape(1, 1, planes, 1, 1), x.dtype)
    if not channels_first:
        y = ops.transpose(y, [0, 2, 3, 4, 1])
    return y if name is None else ops.identity(y, name)


def max_pool3d(input, ksize, strides, padding, data_format="NCDHW", ceil_mode=False, name=None):  # noqa: A002
    """The largest element of each 3-D window of input (N, C, D, H, W) or, NDHWC, (N, D, H, W, C);
    padded positions never win (OneFlow's flow.nn.max_pool3d). ksize and strides: an int or (d, h, w);
    padding "SAME", "VALID" or explicit (before, after) pairs; ceil_mode as max_pool2d's."""
    return _pool3d("max", "flow.nn.max_pool3d", input, ksize, strides, padding, data_format, ceil_mode, name)


def avg_pool3d(input, ksize, strides, padding, data_format="NCDHW", ceil_mode=False, name=None):  # noqa: A002
    """The mean of each 3-D window over the input elements it covers (padding is not counted),
    OneFlow's flow.nn.avg_pool3d; arguments as max_pool3d's."""
    return _pool3d("avg", "flow.nn.avg_pool3d", input, ksize, strides, padding, data_format, ceil_mode, name)


def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, axis=-1, name=None):
    """y = scale · (x − mean) / sqrt(variance + epsilon) + offset with given (C) statistics
    (OneFlow's nn.batch_normalization in inference form; offset/scale may be None)."""
    op = "flow.nn.batch_normalization"
    x = check_blob(x, op, "x")
    mean = check_blob(mean, op, "mean")
    variance = check_blob(variance, op, "variance")
    channels = mean.shape
    offset = ops.zeros_like(mean) if offset is None else check_blob(offset, op, "offset")
    scale = ops.ones_like(mean) if scale is None else check_blob(scale, op, "scale")
    for what, blob in (("variance", variance), ("offset", offset), ("scale", scale)):
        if blob.shape != channels:
            raise ValueError(f"{op}: {what} has shape {blob.shape}, mean has {channels}")
    return add_op("batch_norm", [x, scale, offset, mean, variance], op_name(name), axis=int(axis),
                  epsilon=float(variance_epsilon), momentum=0.0, training=False)


def layer_norm(inputs, gamma=None, beta=None, begin_norm_axis=1, begin_params_axis=-1, epsilon=1e-5, name=None):
    """Layer normalization with the caller's scale and shift (OneFlow's flow.nn.layer_norm): each example
    normalized over the axes from `begin_norm_axis` on, y = (x - mean) / sqrt(variance + epsilon), then
    times `gamma` and plus `beta` (blobs of inputs.shape[begin_params_axis:], either may be None). The
    normalization is one layer_norm op (sums in double, its gradient one layer_norm_grad op); gamma and
    beta follow as a broadcast multiply and add. A float16/bfloat16 input is normalized in float32 and
    the result rounded once, as OneFlow's GPU kernel computes it."""
    op = "flow.nn.layer_norm"
    x = check_blob(inputs, op, "inputs")
    low = x.dtype if x.dtype in (dtypes.float16, dtypes.bfloat16) else None
    if low is not None:
        x = ops.cast(x, dtypes.float32)
    rank = len(x.shape)
    for what, axis in (("begin_norm_axis", begin_norm_axis), ("begin_params_axis", begin_params_axis)):
        if isinstance(axis, bool) or not isinstance(axis, int) or not -rank <= axis < rank:
            raise ValueError(f"{op}: {what} must be an int in [{-rank}, {rank}) for inputs of shape {tuple(x.shape)}, "
                             f"got {axis!r}")
    y = add_op("layer_norm", [x], "", begin_norm_axis=begin_norm_axis % rank, epsilon=float(epsilon))
    params_shape = tuple(x.shape[begin_params_axis % rank:])
    broadcast_shape = [1] * (rank - len(params_shape)) + list(params_shape)
    for what, param in (("gamma", gamma), ("beta", beta)):
        if param is None:
            continue
        param = check_blob(param, op, what)
        if tuple(param.shape) != params_shape:
            raise ValueError(f"{op}: {what} must have the shape inputs.shape[begin_params_axis:] = {params_shape}, "
                             f"got {tuple(param.shape)}")
        param = ops.reshape(param if low is None else ops.cast(param, dtypes.float32), broadcast_shape)
        y = y * param if what == "gamma" else y + param
    if low is not None:
        y = ops.cast(y, low)
    return y if name is None else ops.identity(y, name)


def moments(x, axes, keepdims=False, name=None):
    """(mean, variance) of `x` over `axes`: the variance is the mean squared deviation from the mean
    (the population variance, as OneFlow's and TensorFlow's moments)."""
    op = "flow.nn.moments"
    x = check_blob(x, op, "x")
    rank = len(x.shape)
    axes = [axes] if isinstance(axes, int) else list(axes)
    if not all(isinstance(a, int) and -rank <= a < rank for a in axes):
        raise ValueError(f"{op}: axes must be ints in [{-rank}, {rank}) for x of shape {tuple(x.shape)}, got {axes!r}")
    resolved = {a % rank for a in axes}

    def part(suffix):
        return None if name is None else f"{name}_{suffix}"

    mean = _math.reduce_mean(x, axes, keepdims=True, name=part("mean"))
    variance = _math.reduce_mean(_math.square(x - mean), axes, keepdims=bool(keepdims), name=part("variance"))
    if not keepdims:
        mean = ops.reshape(mean, [d for i, d in enumerate(x.shape) if i not in resolved], name=part("mean_reduced"))
    return mean, variance


# --- OneFlow's losses over a batch (flow.nn.L1Loss and the rest): built from elementwise ops and a reduction.


def _reduce_loss(loss, reduction, op, name):
    """`loss` reduced as OneFlow's losses take `reduction`: "none", "mean" or "sum"."""
    if reduction == "none":
        return loss
    part = None if name is None else f"{name}_reduce_{reduction}"
    return _math.reduce_mean(loss, name=part) if reduction == "mean" else _math.reduce_sum(loss, name=part)


def _check_reduction(reduction, op):
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{op}: reduction must be 'none', 'mean' or 'sum', got {reduction!r}")


def _check_same_shape(op, **blobs):
    shapes = {what: tuple(blob.shape) for what, blob in blobs.items()}
    if len(set(shapes.values())) > 1:
        raise ValueError(f"{op}: {' and '.join(shapes)} must have one shape, got "
                         f"{', '.join(str(shape) for shape in shapes.values())}")


def L1Loss(input, target, reduction="mean", name=None):  # noqa: N802, A002 - OneFlow's names
    """|target - input| elementwise, reduced ("none", "mean" or "sum")."""
    op = "flow.nn.L1Loss"
    input, target = check_blob(input, op, "input"), check_blob(target, op, "target")
    _check_same_shape(op, input=input, target=target)
    _check_reduction(reduction, op)
    return _reduce_loss(_math.abs(target - input), reduction, op, name)


def MSELoss(input, target, reduction="mean", name=None):  # noqa: N802, A002 - OneFlow's names
    """(target - input)² elementwise, reduced ("none", "mean" or "sum")."""
    op = "flow.nn.MSELoss"
    input, target = check_blob(input, op, "input"), check_blob(target, op, "target")
    _check_same_shape(op, input=input, target=target)
    _check_reduction(reduction, op)
    return _reduce_loss(_math.squared_difference(target, input), reduction, op, name)


def BCELoss(input, target, weight=None, reduction="mean", name=None):  # noqa: N802, A002 - OneFlow's names
    """Binary cross entropy -(t·ln σ(x) + (1 - t)·ln(1 - σ(x))), optionally weighted, reduced. As OneFlow's
    BCELoss, the input passes through a sigmoid first."""
    op = "flow.nn.BCELoss"
    input, target = check_blob(input, op, "input"), check_blob(target, op, "target")
    _check_same_shape(op, input=input, target=target)
    _check_reduction(reduction, op)
    probability = sigmoid(input)
    loss = _math.negative(target * _math.log(probability) + (1 - target) * _math.log(1 - probability))
    if weight is not None:
        weight = check_blob(weight, op, "weight")
        _check_same_shape(op, weight=weight, input=input)
        loss = weight * loss
    return _reduce_loss(loss, reduction, op, name)


def BCEWithLogitsLoss(input, target, weight=None, pos_weight=None, reduction="mean", name=None):  # noqa: N802, A002
    """Binary cross entropy on logits, -(pos_weight·t·ln σ(x) + (1 - t)·ln(1 - σ(x))), computed stably as
    (1 - t)·x + (1 + (pos_weight - 1)·t)·(ln(1 + e^-|x|) + max(-x, 0)); `pos_weight` (one value per
    class, the last axis) weighs the positive term, `weight` (input's shape) each element; reduced."""
    op = "flow.nn.BCEWithLogitsLoss"
    input, target = check_blob(input, op, "input"), check_blob(target, op, "target")
    _check_same_shape(op, input=input, target=target)
    _check_reduction(reduction, op)
    tail = _math.clip_by_value(_math.negative(input), min_value=0.0)  # max(-x, 0)
    softplus = _math.log(_math.exp(_math.negative(tail)) + _math.exp(_math.negative(input) - tail)) + tail
    positive = 1.0
    if pos_weight is not None:
        pos_weight = check_blob(pos_weight, op, "pos_weight")
        if tuple(pos_weight.shape) != (input.shape[-1],):
            raise ValueError(f"{op}: pos_weight must have one value per class ({input.shape[-1]},), got "
                             f"{tuple(pos_weight.shape)}")
        positive = (pos_weight - 1.0) * target + 1.0
    loss = (1.0 - target) * input + positive * softplus
    if weight is not None:
        weight = check_blob(weight, op, "weight")
        _check_same_shape(op, weight=weight, input=input)
        loss = weight * loss
    return _reduce_loss(loss, reduction, op, name)


def KLDivLoss(input, target, log_target=False, reduction="mean", name=None):  # noqa: N802, A002
    """Kullback-Leibler divergence of `target` from the log-probabilities `input`, elementwise:
    t·(ln t - x) where t > 0 and 0 elsewhere, or e^t·(t - x) for `log_target`; reduced ("mean" over every
    element, as OneFlow's)."""
    op = "flow.nn.KLDivLoss"
    input, target = check_blob(input, op, "input"), check_blob(target, op, "target")
    _check_same_shape(op, input=input, target=target)
    _check_reduction(reduction, op)
    if log_target:
        loss = _math.exp(target) * (target - input)
    else:
        # t ≤ 0 contributes 0; t there is replaced by 1 first, so that no ln of it (nor its gradient) is NaN.
        positive = _math.greater(target, 0)
        safe = ops.where(positive, target, constant_like(1, target))
        loss = ops.where(positive, safe * (_math.log(safe) - input), constant_like(0, input))
    return _reduce_loss(loss, reduction, op, name)


def PixelShufflev2(input, h_upscale_factor, w_upscale_factor, name=None):  # noqa: N802, A002
    """(B, C·h·w, H, W) -> (B, C, H·h, W·w), NCHW: output channel c at (y·h + i, x·w + j) is input channel
    c·h·w + i·w + j at (y, x)."""
    op = "flow.nn.PixelShufflev2"
    x = check_blob(input, op, "input")
    h, w = int(h_upscale_factor), int(w_upscale_factor)
    if h <= 0 or w <= 0:
        raise ValueError(f"{op}: the upscale factors must be > 0, got {h_upscale_factor}, {w_upscale_factor}")
    if len(x.shape) != 4:
        raise ValueError(f"{op}: input must be 4-D (NCHW), got shape {tuple(x.shape)}")
    batch, channels, height, width = x.shape
    if channels % (h * w) != 0:
        raise ValueError(f"{op}: the channels ({channels}) must divide by h_upscale_factor * w_upscale_factor "
                         f"({h * w})")
    out_channels = channels // (h * w)
    split = ops.reshape(x, [batch, out_channels, h, w, height, width])
    moved = ops.transpose(split, [0, 1, 4, 2, 5, 3])  # (B, C, H, h, W, w)
    return ops.reshape(moved, [batch, out_channels, height * h, width * w], name=name)


def PixelShuffle(input, upscale_factor, name=None):  # noqa: N802, A002
    """PixelShufflev2 with one factor for both axes: (B, C·r², H, W) -> (B, C, H·r, W·r)."""
    return PixelShufflev2(input, upscale_factor, upscale_factor, name=name)


def InstanceNorm1d(x, eps=1e-05, affine=True, name=None):  # noqa: N802
    """Instance normalization of (N, C, L): each (example, channel) normalized over its L values,
    (x - mean) / sqrt(variance + eps) with the population variance; with `affine`, times "<name>_gamma"
    and plus "<name>_beta" (variables (1, C, 1), ones and zeros at first). No running statistics."""
    return _instance_norm("flow.nn.InstanceNorm1d", "InstanceNorm1D", 3, x, eps, affine, name)


def InstanceNorm2d(x, eps=1e-05, affine=True, name=None):  # noqa: N802
    """InstanceNorm1d over each channel's H·W values of (N, C, H, W)."""
    return _instance_norm("flow.nn.InstanceNorm2d", "InstanceNorm2D", 4, x, eps, affine, name)


def InstanceNorm3d(x, eps=1e-05, affine=True, name=None):  # noqa: N802
    """InstanceNorm1d over each channel's D·H·W values of (N, C, D, H, W)."""
    return _instance_norm("flow.nn.InstanceNorm3d", "InstanceNorm3D", 5, x, eps, affine, name)


def GroupNorm(x, num_groups=32, eps=1e-05, affine=True, name=None):  # noqa: N802
    """Group normalization of (N, C, ...): the channels split into `num_groups` groups, each (example,
    group) normalized over its values. As OneFlow's, an InstanceNorm1d of the (N, num_groups, -1)
    reshape: with `affine`, "<name>_gamma" and "<name>_beta" hold one value per group."""
    op = "flow.nn.GroupNorm"
    x = check_blob(x, op, "x")
    if len(x.shape) < 3:
        raise ValueError(f"{op}: x must have at least 3 axes (N, C, ...), got shape {tuple(x.shape)}")
    if int(num_groups) <= 0 or x.shape[1] % int(num_groups) != 0:
        raise ValueError(f"{op}: the channels ({x.shape[1]}) must divide into num_groups, got {num_groups}")
    grouped = ops.reshape(x, [x.shape[0], int(num_groups), -1])
    normalized = _instance_norm(op, "GroupNorm", 3, grouped, eps, affine, name)
    return ops.reshape(normalized, list(x.shape))


def _instance_norm(op, default_name, rank, x, eps, affine, name):
    x = check_blob(x, op, "x")
    if len(x.shape) != rank:
        raise ValueError(f"{op}: x must have {rank} axes, got shape {tuple(x.shape)}")
    if x.dtype not in (dtypes.float32, dtypes.float64):
        raise TypeError(f"{op}: x must be float32 or float64, got {x.dtype.name}")
    full = _context.layer_name(name, op, default_name)
    flat = ops.reshape(x, [x.shape[0], x.shape[1], -1]) if rank != 3 else x
    mean, variance = moments(flat, [2], keepdims=True)
    y = (flat - mean) * _math.rsqrt(variance + float(eps))
    if affine:
        layer = full[len(_context.scoped_name("")):]  # get_variable adds the namespaces again
        params = [1, x.shape[1], 1]
        gamma = ops.get_variable(f"{layer}_gamma", shape=params, dtype=x.dtype, initializer=_init.ones_initializer())
        beta = ops.get_variable(f"{layer}_beta", shape=params, dtype=x.dtype, initializer=_init.zeros_initializer())
        y = y * gamma + beta
    return ops.reshape(y, list(x.shape)) if rank != 3 else y


def MarginRankingLoss(input1, input2, target, margin=0.0, reduction="mean", name=None):  # noqa: N802
    """max(0, -target·(input1 - input2) + margin) elementwise, reduced."""
    op = "flow.nn.MarginRankingLoss"
    input1, input2 = check_blob(input1, op, "input1"), check_blob(input2, op, "input2")
    target = check_blob(target, op, "target")
    _check_same_shape(op, input1=input1, input2=input2)
    _check_reduction(reduction, op)
    loss = _math.clip_by_value(_math.negative(target * (input1 - input2)) + float(margin), min_value=0.0)
    return _reduce_loss(loss, reduction, op, name)


def TripletMarginLoss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False, reduction="mean",
                      name=None):  # noqa: N802 - OneFlow's name
    """max(‖a - p + eps‖_p - ‖a - n + eps‖_p + margin, 0) per row (the norms over axis 1), reduced."""
    op = "flow.nn.TripletMarginLoss"
    anchor = check_blob(anchor, op, "anchor")
    positive, negative = check_blob(positive, op, "positive"), check_blob(negative, op, "negative")
    _check_same_shape(op, anchor=anchor, positive=positive, negative=negative)
    _check_reduction(reduction, op)
    if swap:
        raise NotImplementedError(f"{op}: swap=True is not supported (nor is it by OneFlow)")

    def norm(x):
        magnitude = _math.abs(x)
        if float(p) == 2.0:
            return _math.sqrt(_math.reduce_sum(_math.square(magnitude), axis=1))
        return _math.pow(_math.reduce_sum(_math.pow(magnitude, float(p)), axis=1), 1.0 / float(p))

    loss = _math.clip_by_value(norm(anchor - positive + float(eps)) - norm(anchor - negative + float(eps)) + float(margin),
                               min_value=0.0)
    return _reduce_loss(loss, reduction, op, name)


def conv2d_transpose_V2(value=None, filter=None, output_shape=None, strides=None, padding="VALID",  # noqa: A002, N802
                        data_format="NCHW", name=None, input=None, filters=None, dilations=None):  # noqa: A002
    """OneFlow 0.1's name of conv2d_transpose (the same arguments)."""
    return conv2d_transpose(value, filter, output_shape, strides, padding, data_format, name, input, filters, dilations)
