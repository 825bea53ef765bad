"""Trains ResNet-50 or MobileNetV2 on MNIST read from OFRecord files of JPEG images, as OneFlow's CNN
trainer reads ImageNet: the job itself reads the records, decodes each JPEG in RGB, takes a random
crop (training) or the whole image (evaluation), resizes and normalizes it (no mirroring: digits are
not left-right symmetric) and trains, with no placeholder. Then it evaluates on the test digits and
prints "accuracy: <percent>%".

  python examples/python/zoo/train_cnn.py --model resnet50 --steps 200 [--amp]
The OFRecord files are written first if absent (python -m weir.data.ofrecord mnist ...), into --data.
"""

import argparse
import os
import random
import sys
import time
from typing import Tuple

import numpy as np

import weir as flow
import weir.typing as tp
from weir.data import ofrecord

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mobilenet_v2 import mobilenet_v2  # noqa: E402
from resnet50 import resnet50  # noqa: E402

MODELS = {"resnet50": resnet50, "mobilenetv2": mobilenet_v2}


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=sorted(MODELS), default="resnet50")
    parser.add_argument("--data", default=os.path.join(os.path.expanduser("~"), ".cache", "weir", "mnist-ofrecord"))
    parser.add_argument("--image-size", type=int, default=32)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--lr", type=float, default=0.02)
    parser.add_argument("--train-examples", type=int, default=12000, help="MNIST training digits to write")
    parser.add_argument("--test-examples", type=int, default=1000, help="MNIST test digits to evaluate on")
    parser.add_argument("--amp", action="store_true",
                        help="mixed precision (OneFlow's enable_auto_mixed_precision): bf16 convolutions on this CPU")
    parser.add_argument("--seed", type=int, default=0,
                        help="seeds Python's random module, whence the jobs' random ops draw their seeds: a run repeats")
    return parser.parse_args()


def write_dataset(args):
    for split, count, parts in (("train", args.train_examples, 4), ("test", args.test_examples, 1)):
        folder = os.path.join(args.data, f"{split}-{count}")
        if not os.path.exists(ofrecord.part_path(folder, parts - 1, suffix_length=5)):
            ofrecord.write_mnist(folder, split, size=28, parts=parts, limit=count, suffix_length=5)
    return os.path.join(args.data, f"train-{args.train_examples}"), os.path.join(args.data, f"test-{args.test_examples}")


def pipeline(folder, parts, batch, size, training):
    """(labels, images) of the job: MNIST as OneFlow's trainer loads ImageNet."""
    records = flow.data.ofrecord_reader(folder, batch_size=batch, data_part_num=parts, part_name_suffix_length=5,
                                        random_shuffle=training, shuffle_after_epoch=training)
    labels = flow.data.OFRecordRawDecoder(records, "class/label", shape=(), dtype=flow.int32)
    if training:
        images = flow.data.OFRecordImageDecoderRandomCrop(records, "encoded", color_space="RGB",
                                                          random_area=[0.64, 1.0], random_aspect_ratio=[0.8, 1.25])
    else:
        images = flow.data.OFRecordImageDecoder(records, "encoded", color_space="RGB")
    images, _, _ = flow.image.Resize(images, target_size=[size, size])
    images = flow.image.CropMirrorNormalize(images, color_space="RGB", output_layout="NCHW",
                                            mean=[33.3] * 3, std=[78.6] * 3)  # MNIST's pixel mean and std
    return labels, images


def main():
    args = parse_args()
    random.seed(args.seed)
    train_dir, test_dir = write_dataset(args)
    model = MODELS[args.model]
    config = flow.FunctionConfig()
    config.enable_auto_mixed_precision(args.amp)

    @flow.global_function(type="train", function_config=config)
    def train() -> tp.Numpy:
        labels, images = pipeline(train_dir, 4, args.batch, args.image_size, True)
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, model(images, 10, True))
        schedule = flow.optimizer.CosineScheduler(args.lr, args.steps)
        flow.optimizer.SGD(schedule, momentum=0.9).minimize(loss)
        return flow.math.reduce_mean(loss)

    eval_batch = 100

    @flow.global_function(type="predict", function_config=config)
    def evaluate() -> Tuple[tp.Numpy, tp.Numpy]:
        labels, images = pipeline(test_dir, 1, eval_batch, args.image_size, False)
        return flow.math.argmax(model(images, 10, False), 1), labels

    start = time.perf_counter()
    for step in range(args.steps):
        loss = train()
        if step % 20 == 0 or step == args.steps - 1:
            print(f"step {step}: loss {float(loss):.4f}", flush=True)
    trained = time.perf_counter() - start
    correct = 0
    for _ in range(args.test_examples // eval_batch):
        predicted, labels = evaluate()
        correct += int(np.sum(predicted == labels))
    print(f"{args.model}: {args.steps} steps of {args.batch} at {args.image_size}x{args.image_size} in {trained:.1f} s "
          f"({args.steps * args.batch / trained:.1f} images/s)")
    print(f"accuracy: {100.0 * correct / (args.test_examples // eval_batch * eval_batch):.1f}%")


if __name__ == "__main__":
    main()
