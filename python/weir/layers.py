"""``flow.layers``: ops that create their own variables, named "<name>-weight" and
"<name>-bias" (also their checkpoint folder names)."""

from __future__ import annotations

import warnings

import numpy as np

from weir import _C, _context, distribute, dtypes, initializers
from weir import math as _math
from weir import nn as _nn
from weir import ops as _ops
from weir._image import check_format, pair, padding_spec
from weir._ops_util import add_op, check_blob, wrap

__all__ = ["dense", "conv2d", "batch_normalization", "batch_normalization_relu", "batch_normalization_add_relu",
           "layer_norm", "upsample_2d", "prelu", "conv1d", "conv3d", "categorical_ordinal_encoder"]

_warned_zero_dense = False  # flow.layers.dense's zero-kernel warning is given once per process


def _regularizer(value, what):
    if value is None:
        return _C.Regularizer()
    if not isinstance(value, _C.Regularizer):
        raise TypeError(f"{what}: expected a flow.regularizers value, got {value!r}")
    return value


def _activate(out, activation, name):
    if activation is None:
        return out
    if not callable(activation):
        raise TypeError(f"activation must be callable (e.g. flow.nn.relu), got {activation!r}")
    return activation(out, name=f"{name}-activation")


def dense(inputs, units, activation=None, use_bias=True, kernel_initializer=None, bias_initializer=None,
          kernel_regularizer=None, bias_regularizer=None, trainable=True, name=None, model_distribute=None):
    """inputs (N, in) · weightᵀ + bias with weight (units, in) and bias (units); inputs of rank > 2
    are flattened to (-1, last) and reshaped back. Both initializers default to constant 0, as in
    OneFlow: a model whose dense weights all start at zero does not learn (every unit gets the same
    gradient), so the first such layer of a process says so in a warning."""
    global _warned_zero_dense
    x = check_blob(inputs, "flow.layers.dense", "inputs")
    if int(units) <= 0:
        raise ValueError(f"flow.layers.dense: units must be positive, got {units}")
    full = _context.layer_name(name, "flow.layers.dense", "Dense")
    if kernel_initializer is None and trainable and not _warned_zero_dense:
        _warned_zero_dense = True
        warnings.warn(
            f"flow.layers.dense({full!r}) has no kernel_initializer: its weight starts at zero, as in OneFlow, and "
            "a model whose dense weights all start at zero does not learn; pass one, e.g. "
            "kernel_initializer=flow.truncated_normal(0.1) (this warning is given once)", UserWarning, stacklevel=2)
    out = wrap(
        _C.dense(
            x._c, int(units), "none", bool(use_bias),
            initializers.resolve(kernel_initializer, "flow.layers.dense: kernel_initializer"),
            # Without a bias its initializer is not read (OneFlow's AlexNet passes False there).
            initializers.resolve(bias_initializer if use_bias else None, "flow.layers.dense: bias_initializer"),
            _regularizer(kernel_regularizer, "flow.layers.dense: kernel_regularizer"),
            _regularizer(bias_regularizer, "flow.layers.dense: bias_regularizer"),
            bool(trainable), full, distribute.to_c(model_distribute, "flow.layers.dense: model_distribute"),
        ),
        x,
    )
    return _activate(out, activation, full)


def conv2d(inputs, filters, kernel_size=1, strides=1, padding="VALID", data_format="NCHW", dilation_rate=None,
           groups=1, activation=None, use_bias=True, kernel_initializer=None, bias_initializer=None,
           kernel_regularizer=None, bias_regularizer=None, trainable=True, name=None, weight_name=None,
           bias_name=None):
    """2-D convolution with variables "<name>-weight" (filters, C/groups, kh, kw) for NCHW or
    (filters, kh, kw, C/groups) for NHWC, and "<name>-bias" (filters), or the variables `weight_name`
    and `bias_name` when given (inside the active name scopes, as flow.get_variable names them). The
    kernel initializer defaults to xavier_uniform over the data format's fans (OneFlow's default), the
    bias to zeros."""
    op = "flow.layers.conv2d"
    x = check_blob(inputs, op, "inputs")
    if weight_name is not None or bias_name is not None:
        return _conv2d_named(x, filters, kernel_size, strides, padding, data_format, dilation_rate, groups, activation,
                             use_bias, kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer,
                             trainable, name, weight_name, bias_name)
    data_format = check_format(data_format, op)
    kind, pads = padding_spec(padding, op, data_format)
    full = _context.layer_name(name, op, "Conv2d")
    kernel_init = None if kernel_initializer is None else initializers.resolve(kernel_initializer, f"{op}: kernel_initializer")
    out = wrap(
        _C.conv2d_layer(
            x._c, int(filters), pair(kernel_size, "kernel_size", op, data_format),
            pair(strides, "strides", op, data_format), kind, pads, data_format,
            pair(1 if dilation_rate is None else dilation_rate, "dilation_rate", op, data_format), int(groups), "none",
            bool(use_bias), kernel_init, initializers.resolve(bias_initializer, f"{op}: bias_initializer"),
            _regularizer(kernel_regularizer, f"{op}: kernel_regularizer"),
            _regularizer(bias_regularizer, f"{op}: bias_regularizer"), bool(trainable), full,
        ),
        x,
    )
    return _activate(out, activation, full)


def _conv_layer(x, op, default_name, filters, taps, channels_first, groups, activation, use_bias, kernel_initializer,
                bias_initializer, kernel_regularizer, bias_regularizer, trainable, name, data_format, convolve,
                weight_name=None, bias_name=None):
    """A convolution layer's variables and ops: "<name>-weight" (filters, C/groups, *taps) channels
    first or (filters, *taps, C/groups) channels last (xavier_uniform over the data format's fans by
    default), convolve(weight), then "<name>-bias" (filters; zeros by default) and the activation.
    The variables may take the caller's names (weight_name, bias_name)."""
    channels = x.shape[1] if channels_first else x.shape[-1]
    if int(groups) <= 0 or channels % int(groups) != 0 or int(filters) % int(groups) != 0:
        raise ValueError(f"{op}: groups ({groups}) must divide the channels ({channels}) and filters ({filters})")
    full = _context.layer_name(name, op, default_name)
    layer = full[len(_context.scoped_name("")):]  # get_variable adds the namespaces again
    per_group = channels // int(groups)
    shape = [int(filters), per_group, *taps] if channels_first else [int(filters), *taps, per_group]
    fans = "channels_first" if channels_first else "channels_last"
    weight = _ops.get_variable(weight_name or f"{layer}-weight", shape=shape, dtype=x.dtype,
                               initializer=kernel_initializer or initializers.xavier_uniform_initializer(fans),
                               regularizer=kernel_regularizer, trainable=bool(trainable))
    out = convolve(weight, layer)
    if use_bias:
        bias = _ops.get_variable(bias_name or f"{layer}-bias", shape=[int(filters)], dtype=x.dtype,
                                 initializer=bias_initializer or initializers.zeros_initializer(),
                                 regularizer=bias_regularizer, trainable=bool(trainable))
        out = _nn.bias_add(out, bias, data_format=data_format)
    return _activate(out, activation, full)


def _conv2d_named(x, filters, kernel_size, strides, padding, data_format, dilation_rate, groups, activation, use_bias,
                  kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer, trainable, name,
                  weight_name, bias_name):
    """conv2d with variables of the caller's names: the variables, then flow.nn.conv2d and bias_add."""
    op = "flow.layers.conv2d"
    data_format = check_format(data_format, op)
    return _conv_layer(
        x, op, "Conv2d", filters, pair(kernel_size, "kernel_size", op, data_format), data_format == "NCHW", groups,
        activation, use_bias, kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer, trainable, name,
        data_format, lambda weight, layer: _nn.conv2d(x, weight, strides, padding, data_format=data_format,
                                                      dilations=1 if dilation_rate is None else dilation_rate,
                                                      groups=groups, name=f"{layer}-conv"),
        weight_name, bias_name)


def batch_normalization(inputs, axis=-1, momentum=0.99, epsilon=0.001, center=True, scale=True,
                        beta_initializer=None, gamma_initializer=None, beta_regularizer=None, gamma_regularizer=None,
                        moving_mean_initializer=None, moving_variance_initializer=None, trainable=True, training=True,
                        name=None):
    """Batch normalization with variables "<name>-gamma", "<name>-beta" and the moving statistics
    "<name>-moving_mean", "<name>-moving_variance". In train jobs it normalizes with the batch
    statistics and updates the moving ones; in predict jobs (or with training=False) it uses the
    moving statistics. Unnamed layers are "BatchNorm", "BatchNorm_1", ... as dense and conv2d."""
    op = "flow.layers.batch_normalization"
    x = check_blob(inputs, op, "inputs")
    full = _context.layer_name(name, op, "BatchNorm")
    zeros, ones = _C.constant_initializer(0.0), _C.constant_initializer(1.0)
    context = _context.current(op)
    # OneFlow trains the statistics only where a backward pass runs: train jobs.
    use_batch_statistics = bool(training) and context.is_train
    return wrap(
        _C.batch_normalization_layer(
            x._c, int(axis), float(momentum), float(epsilon), bool(center), bool(scale),
            initializers.resolve(beta_initializer, f"{op}: beta_initializer", zeros),
            initializers.resolve(gamma_initializer, f"{op}: gamma_initializer", ones),
            initializers.resolve(moving_mean_initializer, f"{op}: moving_mean_initializer", zeros),
            initializers.resolve(moving_variance_initializer, f"{op}: moving_variance_initializer", ones),
            _regularizer(beta_regularizer, f"{op}: beta_regularizer"),
            _regularizer(gamma_regularizer, f"{op}: gamma_regularizer"),
            bool(trainable), use_batch_statistics, full,
        ),
        x,
    )


def batch_normalization_relu(inputs, axis=-1, momentum=0.99, epsilon=0.001, center=True, scale=True,
                             beta_initializer=None, gamma_initializer=None, beta_regularizer=None,
                             gamma_regularizer=None, moving_mean_initializer=None, moving_variance_initializer=None,
                             trainable=True, training=True, name=None):
    """relu(batch_normalization(inputs, ...)): OneFlow's fused form (ResNet-50's train_fp32.sh), here
    the two ops, with the same variables as batch_normalization."""
    normalized = batch_normalization(inputs, axis, momentum, epsilon, center, scale, beta_initializer, gamma_initializer,
                                     beta_regularizer, gamma_regularizer, moving_mean_initializer,
                                     moving_variance_initializer, trainable, training, name)
    return _math.relu(normalized)


def batch_normalization_add_relu(inputs, addend=None, axis=-1, momentum=0.99, epsilon=0.001, center=True, scale=True,
                                 beta_initializer=None, gamma_initializer=None, beta_regularizer=None,
                                 gamma_regularizer=None, moving_mean_initializer=None, moving_variance_initializer=None,
                                 trainable=True, training=True, name=None):
    """relu(batch_normalization(inputs, ...) + addend), addend None: batch_normalization_relu
    (OneFlow's fused residual form, ResNet-50's)."""
    normalized = batch_normalization(inputs, axis, momentum, epsilon, center, scale, beta_initializer, gamma_initializer,
                                     beta_regularizer, gamma_regularizer, moving_mean_initializer,
                                     moving_variance_initializer, trainable, training, name)
    if addend is not None:
        normalized = normalized + check_blob(addend, "flow.layers.batch_normalization_add_relu", "addend")
    return _math.relu(normalized)


def layer_norm(inputs, center=True, scale=True, trainable=True, begin_norm_axis=1, begin_params_axis=-1,
               epsilon=1e-5, name=None):
    """Layer normalization (OneFlow's): each example normalized over the axes from `begin_norm_axis`
    on, y = (x - mean) / sqrt(variance + epsilon), then scaled by "<name>-gamma" and shifted by
    "<name>-beta" (variables of shape inputs.shape[begin_params_axis:], ones and zeros at first).
    Unnamed layers are "LayerNorm", "LayerNorm_1", ... The normalization is flow.nn.layer_norm's one
    layer_norm op."""
    op = "flow.layers.layer_norm"
    x = check_blob(inputs, op, "inputs")
    rank = len(x.shape)
    if not -rank <= int(begin_norm_axis) < rank:
        raise ValueError(f"{op}: begin_norm_axis must be in [{-rank}, {rank}) for inputs of shape {tuple(x.shape)}, "
                         f"got {begin_norm_axis}")
    if not -rank <= int(begin_params_axis) < rank:
        raise ValueError(f"{op}: begin_params_axis must be in [{-rank}, {rank}) for inputs of shape "
                         f"{tuple(x.shape)}, got {begin_params_axis}")
    full = _context.layer_name(name, op, "LayerNorm")
    layer = full[len(_context.scoped_name("")):]  # get_variable adds the namespaces again
    params_shape = list(x.shape[int(begin_params_axis) % rank:])
    gamma = beta = None
    if scale:
        gamma = _ops.get_variable(f"{layer}-gamma", shape=params_shape, dtype=x.dtype,
                                  initializer=initializers.ones_initializer(), trainable=bool(trainable))
    if center:
        beta = _ops.get_variable(f"{layer}-beta", shape=params_shape, dtype=x.dtype,
                                 initializer=initializers.zeros_initializer(), trainable=bool(trainable))
    return _nn.layer_norm(x, gamma, beta, int(begin_norm_axis), int(begin_params_axis), epsilon)


def _resize_matrix(size, scale, interpolation, dtype):
    """(size·scale, size): row o holds the weights of the input positions output position o reads.
    Nearest: input floor(o / scale). Bilinear: half-pixel centers, src = max((o + 0.5) / scale - 0.5, 0),
    lerped between floor(src) and the next position (clamped to the last)."""
    out = int(size * scale)
    matrix = np.zeros((out, size), dtype=dtype)
    for o in range(out):
        if interpolation == "nearest":
            matrix[o, min(int(np.floor(o / scale)), size - 1)] = 1
        else:
            src = max((o + 0.5) / scale - 0.5, 0.0)
            low = min(int(np.floor(src)), size - 1)
            high = min(low + 1, size - 1)
            weight = src - low
            matrix[o, low] += 1 - weight
            matrix[o, high] += weight
    return matrix


def upsample_2d(x, size=(2, 2), data_format="NCHW", interpolation="nearest", name=None):
    """Images scaled up by integer factors `size` (an int, or (height, width)): nearest neighbour or
    bilinear (half-pixel centers, as OneFlow's and PyTorch's align_corners=False). Built as products with
    constant interpolation matrices along each axis, so the gradient is theirs. Unnamed ops are numbered
    (OneFlow names every one "Upsample2D", so that a second one in a job clashes)."""
    op = "flow.layers.upsample_2d"
    x = check_blob(x, op, "x")
    raw = [size, size] if np.isscalar(size) else list(size)
    if len(raw) != 2 or any(isinstance(s, bool) or not float(s).is_integer() or s < 1 for s in raw):
        raise ValueError(f"{op}: size must be a positive integer scale factor or a pair of them, got {size!r}")
    scales = [int(s) for s in raw]
    if interpolation not in ("nearest", "bilinear"):
        raise ValueError(f"{op}: interpolation must be 'nearest' or 'bilinear', got {interpolation!r}")
    if data_format not in ("NCHW", "NHWC"):
        raise ValueError(f"{op}: data_format must be 'NCHW' or 'NHWC', got {data_format!r}")
    if len(x.shape) != 4:
        raise ValueError(f"{op}: x must be 4-D, got shape {tuple(x.shape)}")
    if data_format == "NHWC":
        x = _ops.transpose(x, [0, 3, 1, 2])
    batch, channels, height, width = x.shape
    scale_h, scale_w = int(scales[0]), int(scales[1])
    dtype = x.dtype.numpy_dtype
    rows = _ops.reshape(x, [batch * channels * height, width])
    along_w = _ops.matmul(rows, _ops.constant(_resize_matrix(width, scale_w, interpolation, dtype), dtype=x.dtype), transpose_b=True)
    columns = _ops.transpose(_ops.reshape(along_w, [batch * channels, height, width * scale_w]), [0, 2, 1])
    along_h = _ops.matmul(_ops.reshape(columns, [-1, height]),
                          _ops.constant(_resize_matrix(height, scale_h, interpolation, dtype), dtype=x.dtype), transpose_b=True)
    images = _ops.transpose(_ops.reshape(along_h, [batch * channels, width * scale_w, height * scale_h]), [0, 2, 1])
    y = _ops.reshape(images, [batch, channels, height * scale_h, width * scale_w])
    return _ops.transpose(y, [0, 2, 3, 1], name=name) if data_format == "NHWC" else _ops.identity(y, name=name)


def prelu(inputs, alpha_initializer=None, alpha_regularizer=None, shared_axes=None, trainable=True, name="PRelu",
          model_distribute=None):
    """max(x, 0) + alpha · min(x, 0) with a learned "<name>-alpha" of inputs.shape[1:] (1 along each of
    `shared_axes`, counted on the inputs' axes from 1), constant 0 at first unless `alpha_initializer`."""
    op = "flow.layers.prelu"
    x = check_blob(inputs, op, "inputs")
    shape = list(x.shape[1:])
    for axis in shared_axes or []:
        if not 1 <= int(axis) < len(x.shape):
            raise ValueError(f"{op}: shared_axes must be in [1, {len(x.shape)}), got {shared_axes!r}")
        shape[int(axis) - 1] = 1
    full = _context.layer_name(name, op, "PRelu")
    layer = full[len(_context.scoped_name("")):]
    alpha = _ops.get_variable(f"{layer}-alpha", shape=shape, dtype=x.dtype,
                              initializer=alpha_initializer or initializers.constant_initializer(0.0),
                              regularizer=alpha_regularizer, trainable=bool(trainable),
                              distribute=model_distribute)
    return _math.relu(x) - alpha * _math.relu(_math.negative(x))


def categorical_ordinal_encoder(input_tensor, capacity, hash_precomputed=True, name="CategoricalOrdinalEncoder"):
    """Each key of `input_tensor` (int32/int64, any shape) as its ordinal, 1, 2, ... in the order the
    keys are first seen, across calls: a wide feature's raw ids made dense for an embedding. The
    ordinals live in "<name>-Table" (2 x capacity entries, a hash table of keys and ordinals) and
    "<name>-Size" (1), variables of the keys' dtype saved with the model. A new key beyond `capacity`
    fails the call. `hash_precomputed` is accepted as OneFlow's: keys are always mixed before they
    pick a slot, so raw ids and hashes alike spread over the table."""
    op = "flow.layers.categorical_ordinal_encoder"
    x = check_blob(input_tensor, op, "input_tensor")
    if x.dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"{op}: input_tensor must be int32 or int64, got {x.dtype.name}")
    if isinstance(capacity, bool) or not isinstance(capacity, (int, np.integer)) or capacity < 1:
        raise ValueError(f"{op}: capacity must be an int >= 1, got {capacity!r}")
    if not isinstance(hash_precomputed, bool):
        raise TypeError(f"{op}: hash_precomputed must be True or False, got {hash_precomputed!r}")
    full = _context.layer_name(name, op, "CategoricalOrdinalEncoder")
    layer = full[len(_context.scoped_name("")):]
    zeros = initializers.zeros_initializer(x.dtype)
    table = _ops.get_variable(f"{layer}-Table", shape=(2 * int(capacity),), dtype=x.dtype, initializer=zeros,
                              trainable=False)
    size = _ops.get_variable(f"{layer}-Size", shape=(1,), dtype=x.dtype, initializer=zeros, trainable=False)
    return add_op("categorical_ordinal_encode", [table, size, x])


def _conv_input(inputs, op, data_format, formats):
    """The checked input blob of a conv1d/conv3d layer: one of its two data formats, rank to match."""
    x = check_blob(inputs, op, "inputs")
    if data_format not in formats:
        raise ValueError(f"{op}: data_format must be {formats[0]!r} or {formats[1]!r}, got {data_format!r}")
    if len(x.shape) != len(formats[0]):
        raise ValueError(f"{op}: inputs must be {len(formats[0])}-D, got shape {tuple(x.shape)}")
    return x


def conv1d(inputs, filters, kernel_size=1, strides=1, padding="VALID", data_format="NCW", dilation_rate=1, groups=1,
           activation=None, use_bias=True, kernel_initializer=None, bias_initializer=None, kernel_regularizer=None,
           bias_regularizer=None, trainable=True, name=None, weight_name=None, bias_name=None):
    """1-D convolution with variables "<name>-weight" (filters, C/groups, k) for NCW or (filters, k,
    C/groups) for NWC, and "<name>-bias" (filters), or `weight_name` and `bias_name` when given;
    initializers as conv2d's (xavier_uniform over the data format's fans, zeros). Runs as conv2d over
    images of height 1."""
    op = "flow.layers.conv1d"
    x = _conv_input(inputs, op, data_format, ("NCW", "NWC"))
    size = _nn._one(kernel_size, "kernel_size", op)
    return _conv_layer(x, op, "Conv1d", filters, [size], data_format == "NCW", groups, activation, use_bias,
                       kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer, trainable, name,
                       data_format, lambda weight, _: _nn.conv1d(x, weight, strides, padding, data_format=data_format,
                                                                 dilations=dilation_rate, groups=groups),
                       weight_name, bias_name)


def conv3d(inputs, filters, kernel_size=1, strides=1, padding="VALID", data_format="NCDHW", dilation_rate=1, groups=1,
           activation=None, use_bias=True, kernel_initializer=None, bias_initializer=None, kernel_regularizer=None,
           bias_regularizer=None, trainable=True, name=None, weight_name=None, bias_name=None):
    """3-D convolution with variables "<name>-weight" (filters, C/groups, kd, kh, kw) for NCDHW or
    (filters, kd, kh, kw, C/groups) for NDHWC, and "<name>-bias" (filters), or `weight_name` and
    `bias_name` when given; initializers as conv2d's (xavier_uniform over the data format's fans,
    zeros). Runs as flow.nn.conv3d (built from conv2d)."""
    op = "flow.layers.conv3d"
    x = _conv_input(inputs, op, data_format, ("NCDHW", "NDHWC"))
    size = _nn._triple(kernel_size, "kernel_size", op, data_format == "NCDHW")
    return _conv_layer(x, op, "Conv3d", filters, size, data_format == "NCDHW", groups, activation, use_bias,
                       kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer, trainable, name,
                       data_format, lambda weight, _: _nn.conv3d(x, weight, strides, padding, data_format=data_format,
                                                                 dilations=dilation_rate, groups=groups),
                       weight_name, bias_name)
