"""The seeds' synchronize_single_job.py: trains LeNet with sync calls (-> tp.Numpy), prints the
mean loss every 20 steps, saves ./lenet_models_1. Written for a GPU ("gpu" placement); without
GPU kernels it runs on the CPU.

    .venv/bin/python examples/python/synchronize_single_job.py [--epochs 20] [--model ./lenet_models_1]
"""

import argparse
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import weir as flow  # noqa: E402
import weir.typing as tp  # noqa: E402
from lenet import lenet  # noqa: E402
from progress import Progress  # noqa: E402

BATCH_SIZE = 100


@flow.global_function(type="train")
def train_job(
    images: tp.Numpy.Placeholder((BATCH_SIZE, 1, 28, 28), dtype=flow.float),
    labels: tp.Numpy.Placeholder((BATCH_SIZE,), dtype=flow.int32),
) -> tp.Numpy:
    with flow.scope.placement("gpu", "0:0"):
        logits = lenet(images, train=True)
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits, name="softmax_loss")
    lr_scheduler = flow.optimizer.PiecewiseConstantScheduler([], [0.1])
    flow.optimizer.SGD(lr_scheduler, momentum=0).minimize(loss)
    return loss


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--steps", type=int, default=0, help="stop each epoch after this many steps (0: all)")
    parser.add_argument("--model", default="./lenet_models_1")
    args = parser.parse_args()

    check_point = flow.train.CheckPoint()
    check_point.init()
    (train_images, train_labels), (test_images, test_labels) = flow.data.load_mnist(BATCH_SIZE, BATCH_SIZE)
    steps = args.steps or len(train_images)
    progress = Progress(args.epochs * steps, "train")
    for epoch in range(args.epochs):
        for i, (images, labels) in enumerate(zip(train_images[:steps], train_labels[:steps])):
            loss = train_job(images, labels)
            if i % 20 == 0:
                progress.print(loss.mean())
            progress.step()
    progress.close()
    if os.path.exists(args.model):  # a save needs an empty target, as in OneFlow
        shutil.rmtree(args.model)
    check_point.save(args.model)
    print("model saved")


if __name__ == "__main__":
    main()
