"""The seeds' MLP (784-512-10, layers "hidden" and "output"), shared by the async examples."""

import weir as flow


def mlp(data):
    initializer = flow.truncated_normal(0.1)
    reshape = flow.reshape(data, [data.shape[0], -1])
    hidden = flow.layers.dense(reshape, 512, activation=flow.nn.relu, kernel_initializer=initializer, name="hidden")
    return flow.layers.dense(hidden, 10, kernel_initializer=initializer, name="output")
