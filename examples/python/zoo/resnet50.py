"""ResNet-50 (He et al., 2015: bottleneck blocks of 1x1, 3x3, 1x1 convolutions in stages of 3, 4, 6
and 3 blocks, 256 to 2048 channels) in OneFlow's job-function API, as OneFlow's CNN trainer builds it:
a 7x7 stride-2 stem and a 3x3 max pool, batch normalization after every convolution, the stride on the
3x3 convolution, a projection shortcut where the shape changes. The head pools globally (a mean over
height and width), so any image size of 32 or more works."""

import weir as flow

STAGES = ((3, 64), (4, 128), (6, 256), (3, 512))  # (blocks, bottleneck width); the output is 4x the width


def _conv(x, filters, kernel, stride, name):
    return flow.layers.conv2d(x, filters, kernel, strides=stride, padding="SAME", use_bias=False, name=name,
                              kernel_initializer=flow.variance_scaling_initializer(2.0, "fan_in", "random_normal"))


def _bn(x, name, training, relu=True, gamma=1.0):
    x = flow.layers.batch_normalization(x, axis=1, momentum=0.9, epsilon=1e-5, training=training, name=name,
                                        gamma_initializer=flow.constant_initializer(gamma))
    return flow.nn.relu(x) if relu else x


def _bottleneck(x, width, stride, name, training):
    shortcut = x
    if stride != 1 or x.shape[1] != 4 * width:
        shortcut = _bn(_conv(x, 4 * width, 1, stride, f"{name}-proj"), f"{name}-proj-bn", training, relu=False)
    y = _bn(_conv(x, width, 1, 1, f"{name}-a"), f"{name}-a-bn", training)
    y = _bn(_conv(y, width, 3, stride, f"{name}-b"), f"{name}-b-bn", training)
    # The last batch norm of each block starts at zero (Goyal et al.): each block begins as its shortcut.
    y = _bn(_conv(y, 4 * width, 1, 1, f"{name}-c"), f"{name}-c-bn", training, relu=False, gamma=0.0)
    return flow.nn.relu(y + shortcut)


def resnet50(images, classes, training):
    """Logits (batch, classes) of NCHW float images."""
    x = _bn(_conv(images, 64, 7, 2, "stem"), "stem-bn", training)
    x = flow.nn.max_pool2d(x, 3, 2, "SAME")
    for stage, (blocks, width) in enumerate(STAGES):
        for block in range(blocks):
            stride = 2 if block == 0 and stage > 0 else 1
            x = _bottleneck(x, width, stride, f"res{stage + 2}{chr(ord('a') + block)}", training)
    x = flow.math.reduce_mean(x, axis=[2, 3])
    return flow.layers.dense(x, classes, name="fc", kernel_initializer=flow.random_normal_initializer(0.0, 0.01))
