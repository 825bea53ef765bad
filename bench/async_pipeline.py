#!/usr/bin/python3
"""Sync vs async calls in a training loop fed by a host data loader, through Weir's C++ API
(bench/async_pipeline) and its Python API (this file, --worker, run with .venv/bin/python).

The loader augments real MNIST batches on the calling thread, as bench/async_pipeline.cpp does: a
random shift of up to 2 pixels per image; for a share of the images also an elastic distortion
(Simard et al. 2003: a random displacement field smoothed by a Gaussian of sigma 4, scaled by 34,
bilinear resampling) and Gaussian pixel noise (sigma 0.05), clamped to [0, 1]. The share is calibrated
so that loading a batch takes about one train step. Sync calls (`-> tp.Numpy`) load and train in
turn; async calls (`-> tp.Callback[tp.Numpy]`) load the next batch while the runtime trains.

  /usr/bin/python3 bench/async_pipeline.py --build build     # the driver: both APIs, alternated
  .venv/bin/python bench/async_pipeline.py --worker          # the Python side alone

The driver runs each side --reps times in its own process, alternated, on a quiet machine (see
benchlib.py), and prints medians and the speed-ups (target: async >= 1.3x sync). Last line: JSON.
"""
import argparse
import json
import os
import resource
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

BATCH = 100
SIDE = 28
RADIUS = 12
SIGMA = 4.0
ALPHA = 34.0
NOISE = 0.05
PAD = 2


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", action="store_true", help="run the Python side in this process")
    parser.add_argument("--steps", type=int, default=200, help="train calls per timed run")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per mode inside a process")
    parser.add_argument("--elastic-share", type=float, default=-1, help="0..1; default: calibrated")
    parser.add_argument("--build", default="build", help="driver: Meson build folder with bench/async_pipeline")
    parser.add_argument("--reps", type=int, default=3, help="driver: processes per side")
    parser.add_argument("--weir-python", default=None, help="driver: the Python with weir (default .venv/bin/python)")
    parser.add_argument("--weir-pythonpath", default=None, help="driver: PYTHONPATH for --weir-python")
    parser.add_argument("--no-python", action="store_true", help="driver: only the C++ side")
    parser.add_argument("--timeout", type=float, default=600, help="driver: seconds per process")
    parser.add_argument("--max-foreign", type=float, default=0.15, help="driver: see compare_pytorch.py")
    parser.add_argument("--retries", type=int, default=2)
    parser.add_argument("--quiet-budget", type=float, default=300)
    args = parser.parse_args()
    if args.steps < 1 or args.repeats < 1 or args.reps < 1 or args.elastic_share > 1:
        parser.error("--steps, --repeats, --reps must be >= 1 and --elastic-share <= 1")
    return args


class AugmentingLoader:
    """Real MNIST batches (file order, cycled) augmented with numpy into fresh arrays."""

    def __init__(self, images, labels, np):
        self.np = np
        self.images = images.reshape(images.shape[0], BATCH, SIDE, SIDE)
        self.labels = labels
        self.random = np.random.default_rng(42)
        taps = np.arange(-RADIUS, RADIUS + 1)
        kernel = np.exp(-0.5 * taps ** 2 / SIGMA ** 2)
        self.kernel = (kernel / kernel.sum()).astype(np.float32)
        self.int_y, self.int_x = np.meshgrid(np.arange(SIDE), np.arange(SIDE), indexing="ij")
        self.grid_y = self.int_y.astype(np.float32)
        self.grid_x = self.int_x.astype(np.float32)
        self.elastic_share = 0.0
        self.next = 0

    def _smooth(self, field, axis):
        """Gaussian smoothing along `axis` (1 or 2) with zeros outside the image."""
        np = self.np
        pad = [(0, 0), (0, 0), (0, 0)]
        pad[axis] = (RADIUS, RADIUS)
        padded = np.pad(field, pad)
        out = np.zeros_like(field)
        for k, weight in enumerate(self.kernel):
            out += weight * (padded[:, k:k + SIDE, :] if axis == 1 else padded[:, :, k:k + SIDE])
        return out

    def _field(self, count):
        field = self.random.uniform(-1.0, 1.0, (count, SIDE, SIDE)).astype(self.np.float32)
        return ALPHA * self._smooth(self._smooth(field, 2), 1)

    def next_batch(self):
        np = self.np
        index = self.next % self.images.shape[0]
        self.next += 1
        # Zeros around the images: room for shifts of 2 and for the bilinear taps of displaced pixels.
        source = np.pad(self.images[index], [(0, 0), (PAD, PAD + 2), (PAD, PAD + 2)])
        shift = self.random.integers(-2, 3, (BATCH, 2, 1, 1))
        n = np.arange(BATCH)[:, None, None]
        out = source[n, self.int_y[None] - shift[:, 0] + PAD, self.int_x[None] - shift[:, 1] + PAD]
        elastic = np.flatnonzero(self.random.random(BATCH) < self.elastic_share)
        if elastic.size:
            count = elastic.size
            # Bilinear sampling at the displaced positions; outside the image reads the zero border.
            sy = np.clip(self.grid_y[None] - shift[elastic, 0] + self._field(count), -PAD, SIDE) + PAD
            sx = np.clip(self.grid_x[None] - shift[elastic, 1] + self._field(count), -PAD, SIDE) + PAD
            y0 = np.floor(sy).astype(np.int64)
            x0 = np.floor(sx).astype(np.int64)
            fy = sy - y0
            fx = sx - x0
            e = elastic[:, None, None]
            warped = ((1 - fy) * ((1 - fx) * source[e, y0, x0] + fx * source[e, y0, x0 + 1])
                      + fy * ((1 - fx) * source[e, y0 + 1, x0] + fx * source[e, y0 + 1, x0 + 1]))
            warped += self.random.normal(0.0, NOISE, warped.shape)
            out[elastic] = np.clip(warped, 0.0, 1.0)
        return out.reshape(BATCH, 1, SIDE, SIDE).astype(np.float32), self.labels[index]


def worker(args):
    import numpy as np

    import weir as flow
    import weir.typing as tp

    def mlp(images):
        initializer = flow.truncated_normal(0.1)
        reshape = flow.reshape(images, [images.shape[0], -1])
        hidden = flow.layers.dense(reshape, 512, activation=flow.nn.relu, kernel_initializer=initializer,
                                   name="hidden")
        return flow.layers.dense(hidden, 10, kernel_initializer=initializer, name="output")

    def train(images, labels):
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, mlp(images), name="softmax_loss")
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
        return loss

    # Two job functions over the same variables: one returns the loss, one hands it to a callback.
    @flow.global_function(type="train")
    def train_sync(images: tp.Numpy.Placeholder((BATCH, 1, 28, 28), dtype=flow.float),
                   labels: tp.Numpy.Placeholder((BATCH,), dtype=flow.int32)) -> tp.Numpy:
        return train(images, labels)

    @flow.global_function(type="train")
    def train_async(images: tp.Numpy.Placeholder((BATCH, 1, 28, 28), dtype=flow.float),
                    labels: tp.Numpy.Placeholder((BATCH,), dtype=flow.int32)) -> tp.Callback[tp.Numpy]:
        return train(images, labels)

    (train_images, train_labels), _ = flow.data.load_mnist(BATCH, BATCH)
    loader = AugmentingLoader(train_images, train_labels, np)

    def loader_seconds(batches):
        start = time.perf_counter()
        for _ in range(batches):
            loader.next_batch()
        return (time.perf_counter() - start) / batches

    preloaded = [loader.next_batch() for _ in range(8)]
    for i in range(30):
        train_sync(*preloaded[i % 8])
    step_samples = []
    for _ in range(3):
        start = time.perf_counter()
        for i in range(50):
            train_sync(*preloaded[i % 8])
        step_samples.append((time.perf_counter() - start) / 50)
    step_s = statistics.median(step_samples)
    if args.elastic_share >= 0:
        loader.elastic_share = args.elastic_share
    else:
        loader.elastic_share = 0.0
        plain_s = loader_seconds(20)
        loader.elastic_share = 1.0
        elastic_s = loader_seconds(20)
        loader.elastic_share = min(1.0, max(0.0, (step_s - plain_s) / (elastic_s - plain_s)))
    loader_s = loader_seconds(50)

    last_loss = [0.0]
    callbacks = [0]

    def on_loss(loss):
        last_loss[0] = float(loss.mean())
        callbacks[0] += 1

    sync_s, async_s = [], []
    for _ in range(args.repeats):
        start = time.perf_counter()
        for _ in range(args.steps):
            loss = train_sync(*loader.next_batch())
            last_loss[0] = float(loss.mean())
        sync_s.append(time.perf_counter() - start)
        start = time.perf_counter()
        for _ in range(args.steps):
            train_async(*loader.next_batch())(on_loss)
        flow.sync_default_session()
        async_s.append(time.perf_counter() - start)
    if callbacks[0] != args.steps * args.repeats:
        sys.exit(f"async_pipeline: {args.steps * args.repeats} async calls, {callbacks[0]} callbacks")
    if not np.isfinite(last_loss[0]):
        sys.exit(f"async_pipeline: the loss is {last_loss[0]}")
    sync_med, async_med = statistics.median(sync_s), statistics.median(async_s)
    print(f"weir python async_pipeline: MLP, batch {BATCH}, real MNIST augmented with numpy; "
          f"{args.steps} steps per run, median of {args.repeats}")
    print(f"  train step alone {1e3 * step_s:.3f} ms, loader alone {1e3 * loader_s:.3f} ms per batch "
          f"(elastic share {loader.elastic_share:.2f})")
    print(f"  sync  (-> tp.Numpy):    {args.steps / sync_med:8.1f} steps/s  {1e3 * sync_med / args.steps:.3f} ms/step")
    print(f"  async (tp.Callback):    {args.steps / async_med:8.1f} steps/s  {1e3 * async_med / args.steps:.3f} ms/step")
    print(f"  async speed-up {sync_med / async_med:.2f}x (target >= 1.3x; final loss {last_loss[0]:.4f})")
    print(json.dumps({
        "bench": "async_pipeline", "impl": "weir_python", "steps": args.steps, "repeats": args.repeats,
        "step_ms": round(1e3 * step_s, 4), "loader_ms": round(1e3 * loader_s, 4),
        "elastic_share": round(loader.elastic_share, 3),
        "sync_steps_per_s": round(args.steps / sync_med, 2), "async_steps_per_s": round(args.steps / async_med, 2),
        "async_speedup": round(sync_med / async_med, 4), "final_loss": round(last_loss[0], 4),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1),
    }))


def driver(args):
    from benchlib import ROOT, QuietRunner, median_of, rounded

    binary = os.path.join(args.build, "bench", "async_pipeline")
    if not os.access(binary, os.X_OK):
        sys.exit(f"async_pipeline: {binary} not found; build it with `ninja -C {args.build} bench/async_pipeline`")
    common = ["--steps", str(args.steps), "--repeats", str(args.repeats)]
    if args.elastic_share >= 0:
        common += ["--elastic-share", str(args.elastic_share)]
    sides = {"cpp": [binary] + common}
    if not args.no_python:
        python = args.weir_python or os.path.join(ROOT, ".venv", "bin", "python")
        sides["python"] = [python, os.path.abspath(__file__), "--worker"] + common
    runner = QuietRunner(args.max_foreign, args.retries, args.quiet_budget, args.timeout)
    samples = {side: [] for side in sides}
    print(f"async pipeline, MLP on augmented real MNIST: {len(sides)} sides x {args.reps} processes, "
          f"{args.steps} steps x {args.repeats} runs per mode per process", flush=True)
    for rep in range(args.reps):
        names = list(sides) if rep % 2 == 0 else list(reversed(sides))
        for side in names:
            env = {"PYTHONPATH": args.weir_pythonpath} if side == "python" and args.weir_pythonpath else None
            figures = runner.run(sides[side], env)
            samples[side].append(figures)
            print(f"  round {rep + 1}/{args.reps}  {side:<6} step {figures['step_ms']:.3f} ms, loader "
                  f"{figures['loader_ms']:.3f} ms: sync {figures['sync_steps_per_s']:7.1f}/s, async "
                  f"{figures['async_steps_per_s']:7.1f}/s, speed-up {figures['async_speedup']:.2f}x  "
                  f"foreign {figures.get('foreign_cores', 0):.2f}", flush=True)
    result = {}
    print()
    for side in sides:
        label = "C++ Call / CallAsync" if side == "cpp" else "Python tp.Numpy / tp.Callback"
        figures = {field: median_of(samples[side], field) for field in
                   ("step_ms", "loader_ms", "sync_steps_per_s", "async_steps_per_s", "async_speedup", "peak_rss_mb")}
        print(f"{label:<32} step {figures['step_ms']:.3f} ms, loader {figures['loader_ms']:.3f} ms; sync "
              f"{figures['sync_steps_per_s']:.1f}/s, async {figures['async_steps_per_s']:.1f}/s: "
              f"speed-up {figures['async_speedup']:.2f}x (target >= 1.3x)")
        result.update({f"{side}_{field}": value for field, value in figures.items()})
    note = runner.noise_note()
    if note:
        print(note)
    result.update({"max_foreign_cores": runner.max_kept_foreign, "retried_processes": runner.retried,
                   "reps": args.reps, "steps": args.steps, "repeats": args.repeats})
    print(json.dumps(rounded(result)))


def main():
    args = parse_args()
    if args.worker:
        worker(args)
    else:
        driver(args)


if __name__ == "__main__":
    main()
