"""The docs' hybrid_parallelism_mlp.py (extended topics): the MLP in the consistent view on 2 devices,
its hidden layer data parallel and its output layer model parallel: the output layer's weight
(10, 512) and bias are split by output units (model_distribute=flow.distribute.split(axis=0)), each
device holding and updating its rows. OneFlow 0.2's legacy API (add_loss, primary_lr, async_get);
prints the mean loss every 20 steps. Written for 2 GPUs; without CUDA kernels Weir runs it on 2 CPU
devices.

    .venv/bin/python examples/python/hybrid_parallelism_mlp.py [--epochs 3] [--max-steps N]
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import weir as flow  # noqa: E402
import weir.typing as oft  # noqa: E402
from mnist_util import load_data  # noqa: E402

BATCH_SIZE = 100


def mlp(data):
    initializer = flow.truncated_normal(0.1)
    reshape = flow.reshape(data, [data.shape[0], -1])
    hidden = flow.layers.dense(reshape, 512, activation=flow.nn.relu, kernel_initializer=initializer)
    return flow.layers.dense(hidden,
                             10,
                             kernel_initializer=initializer,
                             # the dense weight is (units, in): split(0) splits the output units
                             model_distribute=flow.distribute.split(axis=0)
                             )


def get_train_config():
    config = flow.function_config()
    config.default_data_type(flow.float)
    config.train.primary_lr(0.1)
    config.train.model_update_conf({"naive_conf": {}})
    config.default_distribute_strategy(flow.distribute.consistent_strategy())
    return config


@flow.global_function(get_train_config())
def train_job(images: oft.Numpy.Placeholder((BATCH_SIZE, 1, 28, 28), dtype=flow.float),
              labels: oft.Numpy.Placeholder((BATCH_SIZE,), dtype=flow.int32)):
    logits = mlp(images)
    loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits, name="softmax_loss")
    flow.losses.add_loss(loss)
    return loss


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--max-steps", type=int, default=None, help="stop after this many steps in all")
    args = parser.parse_args()

    flow.config.gpu_device_num(2)
    check_point = flow.train.CheckPoint()
    check_point.init()

    (train_images, train_labels), (test_images, test_labels) = load_data(BATCH_SIZE)

    step = 0
    for epoch in range(args.epochs):
        for i, (images, labels) in enumerate(zip(train_images, train_labels)):
            if args.max_steps is not None and step >= args.max_steps:
                break
            step += 1

            def callback(loss):
                if i % 20 == 0:
                    print(loss.mean())

            loss = train_job(images, labels).async_get(callback)
    flow.sync_default_session()
