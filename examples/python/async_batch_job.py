"""The seeds' async_batch_job.py: loads ./mlp_models_1 and evaluates it on the test set with
results delivered to a callback (tp.Callback[Tuple[tp.Numpy, tp.Numpy]]); prints the accuracy.

    .venv/bin/python examples/python/async_batch_job.py [--model ./mlp_models_1]
"""

import argparse
import os
import sys
from typing import Tuple

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import weir as flow  # noqa: E402
import weir.typing as tp  # noqa: E402
from mlp import mlp  # noqa: E402

BATCH_SIZE = 100


@flow.global_function(type="predict")
def eval_job(
    images: tp.Numpy.Placeholder((BATCH_SIZE, 1, 28, 28), dtype=flow.float),
    labels: tp.Numpy.Placeholder((BATCH_SIZE,), dtype=flow.int32),
) -> tp.Callback[Tuple[tp.Numpy, tp.Numpy]]:
    with flow.scope.placement("cpu", "0:0"):
        logits = mlp(images)
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits, name="softmax_loss")
    return (labels, logits)


g_total = 0
g_correct = 0


def acc(arguments: Tuple[tp.Numpy, tp.Numpy]):
    global g_total
    global g_correct

    labels = arguments[0]
    logits = arguments[1]
    predictions = np.argmax(logits, 1)
    right_count = np.sum(predictions == labels)
    g_total += labels.shape[0]
    g_correct += right_count


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="./mlp_models_1")
    args = parser.parse_args()

    check_point = flow.train.CheckPoint()
    check_point.load(args.model)
    (train_images, train_labels), (test_images, test_labels) = flow.data.load_mnist(BATCH_SIZE, BATCH_SIZE)
    for epoch in range(1):
        for i, (images, labels) in enumerate(zip(test_images, test_labels)):
            eval_job(images, labels)(acc)
    flow.sync_default_session()  # every callback has run (the seed relied on luck here)
    print("accuracy: {:.1f}%".format(g_correct * 100 / g_total))


if __name__ == "__main__":
    main()
