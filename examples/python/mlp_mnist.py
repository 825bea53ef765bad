"""The quick start (quickstart_in_3_min): an MLP 784-500-10 trained with Adam (lr 0.001) and sync
calls, printing "Epoch [e/N], Loss: x.xxxx" every 20 steps, then the test accuracy.

    .venv/bin/python examples/python/mlp_mnist.py [--epochs 20]
"""

import argparse
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import weir as flow  # noqa: E402
import weir.typing as tp  # noqa: E402
from progress import Progress  # noqa: E402

BATCH_SIZE = 100


def mlp(data):
    reshape = flow.reshape(data, [data.shape[0], -1])
    initializer1 = flow.random_uniform_initializer(-1 / 28.0, 1 / 28.0)
    hidden = flow.layers.dense(reshape, 500, activation=flow.nn.relu, kernel_initializer=initializer1,
                               bias_initializer=initializer1, name="dense1")
    initializer2 = flow.random_uniform_initializer(-math.sqrt(1 / 500.0), math.sqrt(1 / 500.0))
    return flow.layers.dense(hidden, 10, kernel_initializer=initializer2, bias_initializer=initializer2,
                             name="dense2")


@flow.global_function(type="train")
def train_job(
    images: tp.Numpy.Placeholder((BATCH_SIZE, 1, 28, 28), dtype=flow.float),
    labels: tp.Numpy.Placeholder((BATCH_SIZE,), dtype=flow.int32),
) -> tp.Numpy:
    with flow.scope.placement("cpu", "0:0"):
        logits = mlp(images)
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits, name="softmax_loss")
    lr_scheduler = flow.optimizer.PiecewiseConstantScheduler([], [0.001])
    flow.optimizer.Adam(lr_scheduler).minimize(loss)
    return loss


# Defined after training started: Weir compiles it at its first call (OneFlow could not).
def make_eval_job():
    @flow.global_function(type="predict")
    def eval_job(images: tp.Numpy.Placeholder((BATCH_SIZE, 1, 28, 28), dtype=flow.float)) -> tp.Numpy:
        return mlp(images)

    return eval_job


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=20)
    args = parser.parse_args()

    (train_images, train_labels), (test_images, test_labels) = flow.data.load_mnist(BATCH_SIZE, BATCH_SIZE)
    progress = Progress(args.epochs * len(train_images), "train")
    for epoch in range(args.epochs):
        for i, (images, labels) in enumerate(zip(train_images, train_labels)):
            loss = train_job(images, labels)
            if i % 20 == 0:
                progress.print(f"Epoch [{epoch + 1}/{args.epochs}], Loss: {loss.mean():.4f}")
            progress.step()
    progress.close()
    eval_job = make_eval_job()
    correct = sum(int(np.sum(np.argmax(eval_job(images), 1) == labels))
                  for images, labels in zip(test_images, test_labels))
    print("accuracy: {:.1f}%".format(100.0 * correct / (len(test_images) * BATCH_SIZE)))


if __name__ == "__main__":
    main()
