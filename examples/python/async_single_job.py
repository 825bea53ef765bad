"""The seeds' async_single_job.py: trains the MLP with results delivered to a callback
(tp.Callback[tp.Numpy]), prints the mean loss of every 20th step, saves ./mlp_models_1.

    .venv/bin/python examples/python/async_single_job.py [--epochs 20] [--model ./mlp_models_1]
"""

import argparse
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import weir as flow  # noqa: E402
import weir.typing as tp  # noqa: E402
from mlp import mlp  # noqa: E402
from progress import Progress  # noqa: E402

BATCH_SIZE = 100


@flow.global_function(type="train")
def train_job(
    images: tp.Numpy.Placeholder((BATCH_SIZE, 1, 28, 28), dtype=flow.float),
    labels: tp.Numpy.Placeholder((BATCH_SIZE,), dtype=flow.int32),
) -> tp.Callback[tp.Numpy]:
    logits = mlp(images)
    loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits, name="softmax_loss")
    lr_scheduler = flow.optimizer.PiecewiseConstantScheduler([], [0.1])
    flow.optimizer.SGD(lr_scheduler, momentum=0).minimize(loss)
    return loss


g_i = 0
progress = None


def cb_print_loss(result: tp.Numpy):
    global g_i
    if g_i % 20 == 0:
        progress.print(result.mean())
    progress.step()
    g_i += 1


def main():
    global progress
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--model", default="./mlp_models_1")
    args = parser.parse_args()

    check_point = flow.train.CheckPoint()
    check_point.init()
    (train_images, train_labels), (test_images, test_labels) = flow.data.load_mnist(BATCH_SIZE, BATCH_SIZE)
    progress = Progress(args.epochs * len(train_images), "train")
    for epoch in range(args.epochs):
        for i, (images, labels) in enumerate(zip(train_images, train_labels)):
            train_job(images, labels)(cb_print_loss)
    if os.path.exists(args.model):  # a save needs an empty target, as in OneFlow
        shutil.rmtree(args.model)
    check_point.save(args.model)  # waits for every callback first
    progress.close()
    print("model saved")


if __name__ == "__main__":
    main()
