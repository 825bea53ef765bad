"""DCGAN (Radford et al., 2015) on MNIST in OneFlow's job-function API, as OneFlow's DCGAN program lays
it out: a generator of a dense projection and transposed convolutions with batch normalization and
leaky relus (tanh out), a discriminator of strided convolutions with leaky relus, and two train jobs
that share the variables by name: the discriminator's (real digits against the generator's, the
generator's layers not trainable there) and the generator's (the discriminator's layers not trainable
there), each with Adam(2e-4, beta1 0.5). The real digits come from OFRecord files of MNIST JPEGs,
read and normalized to [-1, 1] by the discriminator's job; the noise is drawn inside the jobs
(flow.data.decode_random). No placeholder.

Afterwards it writes a PNG grid of 64 samples (--samples) and scores them as an Inception-score-like
check would: a LeNet trained here on MNIST's labels classifies them, and the program prints
"samples: confidence C, classes N": the mean top probability the classifier gives the samples and how
many of the ten digits they cover (noise scores a low confidence, a collapsed generator few classes).

  python examples/python/zoo/dcgan.py --steps 1500 --samples dcgan.png
"""

import argparse
import os
import random
import struct
import zlib

import numpy as np

import weir as flow
import weir.typing as tp
from weir.data import ofrecord

NOISE = 64
BATCH = 64


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=os.path.join(os.path.expanduser("~"), ".cache", "weir", "mnist-ofrecord"))
    parser.add_argument("--train-examples", type=int, default=12000, help="MNIST training digits to write")
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--samples", default="dcgan_samples.png", help="the PNG grid of samples to write")
    parser.add_argument("--seed", type=int, default=0,
                        help="seeds Python's random module, whence the jobs' random ops draw their seeds: a run repeats")
    return parser.parse_args()


def _bn_leaky(x, name, trainable):
    # training=True: batch statistics in both jobs, so the discriminator sees what the generator makes.
    x = flow.layers.batch_normalization(x, axis=1, momentum=0.9, epsilon=1e-5, training=True, trainable=trainable,
                                        name=name)
    return flow.nn.leaky_relu(x, alpha=0.2)


def _deconv(x, filters, name, trainable):
    """A 5x5 transposed convolution of stride 2 (SAME): twice the height and width."""
    weight = flow.get_variable(f"{name}-weight", shape=(x.shape[1], filters, 5, 5), dtype=flow.float,
                               initializer=flow.random_normal_initializer(0.0, 0.02), trainable=trainable)
    return flow.nn.conv2d_transpose(x, weight, output_shape=(x.shape[0], filters, 2 * x.shape[2], 2 * x.shape[3]),
                                    strides=2, padding="SAME", name=name)


def generator(z, trainable):
    """Images (batch, 1, 28, 28) in [-1, 1] from noise (batch, NOISE)."""
    init = flow.random_normal_initializer(0.0, 0.02)
    x = flow.layers.dense(z, 7 * 7 * 128, use_bias=False, kernel_initializer=init, trainable=trainable, name="g-fc")
    x = _bn_leaky(flow.reshape(x, (z.shape[0], 128, 7, 7)), "g-bn0", trainable)
    x = _bn_leaky(_deconv(x, 64, "g-deconv1", trainable), "g-bn1", trainable)
    return flow.math.tanh(_deconv(x, 1, "g-deconv2", trainable))


def discriminator(images, trainable):
    """A logit (batch, 1): real or made."""
    init = flow.random_normal_initializer(0.0, 0.02)
    x = images
    for i, filters in enumerate((64, 128)):
        x = flow.layers.conv2d(x, filters, 5, strides=2, padding="SAME", kernel_initializer=init, trainable=trainable,
                               name=f"d-conv{i}")
        x = flow.nn.leaky_relu(x, alpha=0.2)
    x = flow.reshape(x, (x.shape[0], -1))
    return flow.layers.dense(x, 1, kernel_initializer=init, trainable=trainable, name="d-fc")


def noise(batch):
    return flow.data.decode_random(shape=(NOISE,), dtype=flow.float, batch_size=batch,
                                   initializer=flow.random_normal_initializer(0.0, 1.0))


def real_digits(folder):
    records = flow.data.ofrecord_reader(folder, batch_size=BATCH, data_part_num=4, part_name_suffix_length=5,
                                        random_shuffle=True, shuffle_after_epoch=True)
    images = flow.data.OFRecordImageDecoder(records, "encoded", color_space="GRAY")
    return flow.image.CropMirrorNormalize(images, color_space="GRAY", output_layout="NCHW", crop_h=28, crop_w=28,
                                          mean=[127.5], std=[127.5])


def adam():
    return flow.optimizer.Adam(flow.optimizer.PiecewiseConstantScheduler([], [2e-4]), beta1=0.5)


def cross_entropy(logits, label):
    labels = flow.constant_like(logits, float(label))
    return flow.math.reduce_mean(flow.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits))


def write_png(path, image):
    """A gray uint8 image (height, width) as a PNG file."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff)

    height, width = image.shape
    rows = b"".join(b"\x00" + image[row].tobytes() for row in range(height))  # filter 0 on every row
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b""))


def grid(samples, columns=8, gap=2):
    """(n, 1, 28, 28) images in [-1, 1] as one uint8 grid with gaps."""
    rows = -(-len(samples) // columns)
    out = np.zeros((rows * (28 + gap) + gap, columns * (28 + gap) + gap), np.uint8)
    for i, image in enumerate(samples):
        top, left = gap + (i // columns) * (28 + gap), gap + (i % columns) * (28 + gap)
        out[top:top + 28, left:left + 28] = np.clip((image[0] + 1) * 127.5 + 0.5, 0, 255).astype(np.uint8)
    return out


def score(samples):
    """(mean top probability, digits covered) of the samples under a LeNet trained on MNIST here."""
    (images, labels), _ = flow.data.load_mnist(100, 100)
    init = flow.truncated_normal(0.1)

    def lenet(x):
        for i, filters in enumerate((32, 64)):
            x = flow.layers.conv2d(x, filters, 5, padding="SAME", activation=flow.nn.relu, kernel_initializer=init,
                                   name=f"score-conv{i}")
            x = flow.nn.max_pool2d(x, 2, 2, "SAME")
        x = flow.layers.dense(flow.reshape(x, (x.shape[0], -1)), 256, activation=flow.nn.relu, kernel_initializer=init,
                              name="score-fc0")
        return flow.layers.dense(x, 10, kernel_initializer=init, name="score-fc1")

    @flow.global_function(type="train")
    def train_scorer(x: tp.Numpy.Placeholder((100, 1, 28, 28)), y: tp.Numpy.Placeholder((100,), dtype=flow.int32)
                     ) -> tp.Numpy:
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(y, lenet(x))
        flow.optimizer.Adam(flow.optimizer.PiecewiseConstantScheduler([], [1e-3])).minimize(loss)
        return loss

    @flow.global_function(type="predict")
    def classify(x: tp.Numpy.Placeholder((len(samples), 1, 28, 28))) -> tp.Numpy:
        return flow.nn.softmax(lenet(x))

    for step in range(300):  # the digits in [-1, 1], as the samples are
        train_scorer(images[step] * 2 - 1, labels[step])
    probabilities = classify(samples.astype(np.float32))
    return float(probabilities.max(1).mean()), len(set(probabilities.argmax(1).tolist()))


def main():
    args = parse_args()
    random.seed(args.seed)
    folder = os.path.join(args.data, f"train-{args.train_examples}")
    if not os.path.exists(ofrecord.part_path(folder, 3, suffix_length=5)):
        ofrecord.write_mnist(folder, "train", size=28, parts=4, limit=args.train_examples, suffix_length=5)

    @flow.global_function(type="train")
    def train_discriminator() -> tp.Numpy:
        # One pass over the real digits and the made ones together (the discriminator has no batch norm).
        images = flow.concat([real_digits(folder), generator(noise(BATCH), trainable=False)], axis=0)
        logits = discriminator(images, trainable=True)
        real, made = flow.slice(logits, [0, 0], [BATCH, 1]), flow.slice(logits, [BATCH, 0], [BATCH, 1])
        loss = cross_entropy(real, 1.0) + cross_entropy(made, 0.0)
        adam().minimize(loss)
        return loss

    @flow.global_function(type="train")
    def train_generator() -> tp.Numpy:
        loss = cross_entropy(discriminator(generator(noise(BATCH), trainable=True), trainable=False), 1.0)
        adam().minimize(loss)
        return loss

    @flow.global_function(type="predict")
    def sample() -> tp.Numpy:
        return generator(noise(BATCH), trainable=False)

    for step in range(args.steps):
        d_loss = train_discriminator()
        g_loss = train_generator()
        if step % 100 == 0 or step == args.steps - 1:
            print(f"step {step}: discriminator loss {float(d_loss):.4f}, generator loss {float(g_loss):.4f}",
                  flush=True)
    samples = sample()
    write_png(args.samples, grid(samples))
    print(f"wrote {args.samples}")
    flow.clear_default_session()
    confidence, classes = score(samples)
    print(f"samples: confidence {confidence:.3f}, classes {classes}")


if __name__ == "__main__":
    main()
