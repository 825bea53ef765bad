"""Weir's Python API peer of bench/train_step: the seeds' MNIST MLP or LeNet as
@flow.global_function jobs, timed with sync calls on random data (batch 100, SGD lr 0.1 momentum 0,
sparse softmax cross entropy, truncated_normal(0.1) kernels; LeNet without dropout, as train_step).

    .venv/bin/python bench/weir_python_models.py --model mlp|lenet [--steps N] [--repeats R] [--amp]

--amp: func_config.enable_auto_mixed_precision(True) (bfloat16 products on CPUs that have them).

Each repeat times --steps train calls (numpy in, the loss as numpy out) and --steps inference calls
(argmax predictions out); the figures are medians over --repeats. Last line: one JSON object.
"""
import argparse
import json
import resource
import statistics
import sys
import time

import numpy as np

import weir as flow
import weir.typing as tp

BATCH = 100
POOL_BATCHES = 8  # distinct random batches, cycled, as in train_step


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=["mlp", "lenet"], default="mlp")
    parser.add_argument("--steps", type=int, default=-1, help="timed steps per repeat (default 200 MLP, 20 LeNet)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=-1, help="default: max(steps / 5, 20 MLP, 3 LeNet)")
    parser.add_argument("--no-async", action="store_true", help="accepted for symmetry with train_step; ignored")
    parser.add_argument("--amp", action="store_true", help="enable_auto_mixed_precision(True)")
    args = parser.parse_args()
    if args.steps == -1:
        args.steps = 200 if args.model == "mlp" else 20
    if args.steps < 1 or args.repeats < 1:
        parser.error("--steps and --repeats must be >= 1")
    if args.warmup < 0:
        args.warmup = max(20 if args.model == "mlp" else 3, args.steps // 5)
    return args


def mlp(images):
    initializer = flow.truncated_normal(0.1)
    reshape = flow.reshape(images, [images.shape[0], -1])
    hidden = flow.layers.dense(reshape, 512, activation=flow.nn.relu, kernel_initializer=initializer, name="hidden")
    return flow.layers.dense(hidden, 10, kernel_initializer=initializer, name="output")


def lenet(images):
    initializer = flow.truncated_normal(0.1)
    conv1 = flow.layers.conv2d(images, 32, 5, padding="SAME", activation=flow.nn.relu, name="conv1",
                               kernel_initializer=initializer)
    pool1 = flow.nn.max_pool2d(conv1, ksize=2, strides=2, padding="SAME", name="pool1", data_format="NCHW")
    conv2 = flow.layers.conv2d(pool1, 64, 5, padding="SAME", activation=flow.nn.relu, name="conv2",
                               kernel_initializer=initializer)
    pool2 = flow.nn.max_pool2d(conv2, ksize=2, strides=2, padding="SAME", name="pool2", data_format="NCHW")
    reshape = flow.reshape(pool2, [pool2.shape[0], -1])
    hidden = flow.layers.dense(reshape, 512, activation=flow.nn.relu, kernel_initializer=initializer, name="dense1")
    return flow.layers.dense(hidden, 10, kernel_initializer=initializer, name="dense2")


def make_jobs(model, amp=False, channels_last=None):
    """channels_last: None leaves the layout to Weir (NHWC convolutions on the CPU, NCHW on a GPU)."""
    config = flow.FunctionConfig()
    config.enable_auto_mixed_precision(amp)
    if channels_last is not None:
        config.channels_last_convolutions(channels_last)

    @flow.global_function(type="train", function_config=config)
    def train_job(images: tp.Numpy.Placeholder((BATCH, 1, 28, 28), dtype=flow.float),
                  labels: tp.Numpy.Placeholder((BATCH,), dtype=flow.int32)) -> tp.Numpy:
        logits = model(images)
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits, name="softmax_loss")
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
        return loss

    @flow.global_function(type="predict", function_config=config)
    def infer_job(images: tp.Numpy.Placeholder((BATCH, 1, 28, 28), dtype=flow.float)) -> tp.Numpy:
        return flow.math.argmax(model(images))

    return train_job, infer_job


def main():
    args = parse_args()
    try:
        train_job, infer_job = make_jobs(mlp if args.model == "mlp" else lenet, args.amp)
    except AttributeError as error:  # an op the Python API does not have yet
        sys.exit(f"weir_python_models: {args.model} needs {error}")
    random = np.random.default_rng(1234)
    batches = [(random.random((BATCH, 1, 28, 28), dtype=np.float32),
                random.integers(0, 10, BATCH, dtype=np.int32)) for _ in range(POOL_BATCHES)]
    last_loss = [0.0]

    def train(steps):
        start = time.perf_counter()
        for i in range(steps):
            loss = train_job(*batches[i % POOL_BATCHES])
        seconds = time.perf_counter() - start
        last_loss[0] = float(loss.mean())
        return seconds

    def infer(steps):
        start = time.perf_counter()
        for i in range(steps):
            predictions = infer_job(batches[i % POOL_BATCHES][0])
        seconds = time.perf_counter() - start
        assert predictions.shape == (BATCH,), predictions.shape
        return seconds

    train(args.warmup)
    infer(args.warmup)
    train_s, infer_s = [], []
    for _ in range(args.repeats):
        train_s.append(train(args.steps))
        infer_s.append(infer(args.steps))
    if not np.isfinite(last_loss[0]):
        sys.exit(f"weir_python_models: the loss is {last_loss[0]}")

    train_med = statistics.median(train_s)
    infer_med = statistics.median(infer_s)
    print(f"weir python {args.model}{' amp' if args.amp else ''}: batch {BATCH}, {args.steps} steps per run, "
          f"median of {args.repeats} runs")
    print(f"{'':<28} {'per s':>10} {'ms':>10}")
    print(f"{'train step, sync':<28} {args.steps / train_med:>10.1f} {1e3 * train_med / args.steps:>10.3f}")
    print(f"{'inference, sync':<28} {args.steps / infer_med:>10.1f} {1e3 * infer_med / args.steps:>10.3f}")
    print(json.dumps({
        "bench": "train_step", "impl": "weir_python", "model": args.model, "amp": args.amp,
        "batch": BATCH, "steps": args.steps, "repeats": args.repeats,
        "train_steps_per_s": round(args.steps / train_med, 2),
        "train_ms_per_step": round(1e3 * train_med / args.steps, 4),
        "infer_calls_per_s": round(args.steps / infer_med, 2),
        "infer_ms_per_call": round(1e3 * infer_med / args.steps, 4),
        "final_loss": round(last_loss[0], 4),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1),
    }))


if __name__ == "__main__":
    main()
