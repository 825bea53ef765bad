"""MobileNetV2 (Sandler et al., 2018: inverted residual blocks, a 1x1 expansion, a 3x3 depthwise
convolution and a linear 1x1 projection, relu6) in OneFlow's job-function API. The head pools
globally, so any image size of 32 or more works."""

import weir as flow

# (expansion, output channels, blocks, stride of the first block): the paper's table 2.
BLOCKS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1))


def _conv_bn(x, filters, kernel, stride, name, training, groups=1, relu6=True):
    x = flow.layers.conv2d(x, filters, kernel, strides=stride, padding="SAME", groups=groups, use_bias=False, name=name,
                           kernel_initializer=flow.variance_scaling_initializer(2.0, "fan_in", "random_normal"))
    x = flow.layers.batch_normalization(x, axis=1, momentum=0.9, epsilon=1e-5, training=training, name=f"{name}-bn")
    return flow.nn.relu6(x) if relu6 else x


def _inverted_residual(x, expansion, filters, stride, name, training):
    channels = x.shape[1]
    y = x
    if expansion != 1:
        y = _conv_bn(y, channels * expansion, 1, 1, f"{name}-expand", training)
    y = _conv_bn(y, y.shape[1], 3, stride, f"{name}-depthwise", training, groups=y.shape[1])
    y = _conv_bn(y, filters, 1, 1, f"{name}-project", training, relu6=False)
    return x + y if stride == 1 and channels == filters else y


def mobilenet_v2(images, classes, training):
    """Logits (batch, classes) of NCHW float images."""
    x = _conv_bn(images, 32, 3, 2, "stem", training)
    for i, (expansion, filters, blocks, stride) in enumerate(BLOCKS):
        for block in range(blocks):
            x = _inverted_residual(x, expansion, filters, stride if block == 0 else 1, f"block{i}-{block}", training)
    x = _conv_bn(x, 1280, 1, 1, "head", training)
    x = flow.math.reduce_mean(x, axis=[2, 3])
    return flow.layers.dense(x, classes, name="fc", kernel_initializer=flow.random_normal_initializer(0.0, 0.01))
