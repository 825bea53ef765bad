"""The docs' consistent_strategy.py (extended topics): LeNet in the consistent view, the default, on
2 devices: the job is written for one device with the whole batch of 100, and Weir splits the batch
over the devices (data parallel: images and labels split, variables broadcast, weight gradients
all-reduced). It uses OneFlow 0.2's legacy training API (flow.losses.add_loss, primary_lr,
.get().ndarray()); prints the mean loss every 20 steps. Written for 2 GPUs; without CUDA kernels
Weir runs it on 2 CPU devices.

    .venv/bin/python examples/python/consistent_strategy.py [--epochs 50] [--max-steps N]
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import weir as flow  # noqa: E402
import weir.typing as oft  # noqa: E402
from mnist_util import load_data  # noqa: E402

BATCH_SIZE = 100


def lenet(data, train=False):
    initializer = flow.truncated_normal(0.1)
    conv1 = flow.layers.conv2d(data, 32, 5, padding="SAME", activation=flow.nn.relu,
                               kernel_initializer=initializer, name="conv1")
    pool1 = flow.nn.max_pool2d(conv1, ksize=2, strides=2, padding="SAME", name="pool1")
    conv2 = flow.layers.conv2d(pool1, 64, 5, padding="SAME", activation=flow.nn.relu,
                               kernel_initializer=initializer, name="conv2")
    pool2 = flow.nn.max_pool2d(conv2, ksize=2, strides=2, padding="SAME", name="pool2")
    reshape = flow.reshape(pool2, [pool2.shape[0], -1])
    hidden = flow.layers.dense(reshape, 512, activation=flow.nn.relu, kernel_initializer=initializer, name="hidden")
    if train:
        hidden = flow.nn.dropout(hidden, rate=0.5)
    return flow.layers.dense(hidden, 10, kernel_initializer=initializer, name="outlayer")


def get_train_config():
    config = flow.function_config()
    config.default_distribute_strategy(flow.distribute.consistent_strategy())
    config.default_data_type(flow.float)
    config.train.primary_lr(0.1)
    config.train.model_update_conf({"naive_conf": {}})
    return config


@flow.global_function(get_train_config())
def train_job(images: oft.Numpy.Placeholder((BATCH_SIZE, 1, 28, 28), dtype=flow.float, name="myimages"),
              labels: oft.Numpy.Placeholder((BATCH_SIZE,), dtype=flow.int32, name="mylabels")):
    logits = lenet(images, train=True)
    loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits, name="softmax_loss")
    flow.losses.add_loss(loss)
    return loss


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=50)
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
            loss = train_job(images, labels).get().ndarray()
            step += 1
            if i % 20 == 0:
                print(loss.mean())
