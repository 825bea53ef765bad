"""Weir's side of bench/data_parallel.py, one configuration per process (run with .venv/bin/python):

  --config dp     the seeds' MLP or LeNet (--model), train steps, global batch 100, SGD lr 0.1
                  momentum 0, sparse softmax cross entropy, truncated_normal(0.1) kernels, LeNet
                  without dropout (as bench/weir_python_models.py). --devices 1: the default session
                  (one device, every core, consistent view). --devices N --view mirrored: N CPU
                  devices, flow.scope.mirrored_view(), tp.ListNumpy placeholders of 100/N examples
                  per device. --devices N --view consistent: N CPU devices, the job written for the
                  whole batch, the compiler splits it. --processes N (bench/multi_process.py): N
                  processes of one device and one core each (this process starts them with weir-launch's
                  environment, each pinned to its core): the mirrored view, 100/N examples per process,
                  or with --view consistent the whole batch passed to every process, which computes on
                  its rows; rank 0's figures are reported.
  --config pipe   a two-stage MLP, stage 0 on device 0 and stage 1 on device 1 (flow.scope.placement),
                  predict (default) or train (--pipe-job), timed with sync calls (-> tp.Numpy) and
                  async calls (-> tp.Callback[tp.Numpy], then flow.sync_default_session()), alternated
                  inside the process. --devices 1 runs the same model on one device (every core).

Random data, fixed per run (seeded), a pool of 8 batches cycled. Each repeat times --steps calls; the
figures are medians over --repeats. A profiled pass after the timed runs reports each device's busy
time per call (weir.profiler). Last line: one JSON object.
"""
import argparse
import json
import os
import resource
import statistics
import sys
import time

import numpy as np

import weir as flow
import weir.profiler
import weir.typing as tp
from benchlib import run_ranks  # noqa: E402
from weir_python_models import lenet, mlp  # the same models as compare_pytorch's

BATCH = 100
POOL_BATCHES = 8
# The pipeline's layers: stage 0 = 784 -> H0 relu, stage 1 = H0 -> H1 relu -> 10. Chosen so that the
# stages cost about the same: predict 784*H0 ~ H0*H1 + 10*H1; train (stage 0 has no input gradient)
# 2*784*H0 ~ 3*H0*H1.
PIPE_LAYERS = {"predict": (1024, 784), "train": (1024, 512)}


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", choices=["dp", "pipe"], default="dp")
    parser.add_argument("--model", choices=["mlp", "lenet"], default="mlp")
    parser.add_argument("--devices", type=int, default=1)
    parser.add_argument("--processes", type=int, default=1, help="processes of one device each")
    parser.add_argument("--view", choices=["mirrored", "consistent"], default="mirrored")
    parser.add_argument("--pipe-job", choices=["predict", "train"], default="predict")
    parser.add_argument("--steps", type=int, default=-1, help="timed calls per repeat (default 300 MLP, 20 LeNet, 200 pipe)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=-1)
    parser.add_argument("--profile-steps", type=int, default=-1, help="profiled calls after the timed runs (0 = none)")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--fusion-mb", type=float, default=None,
                        help="flow.config.collective_boxing.nccl_fusion_threshold_mb (0: a collective per gradient)")
    args = parser.parse_args()
    if args.steps < 0:
        args.steps = 200 if args.config == "pipe" else (300 if args.model == "mlp" else 20)
    if args.warmup < 0:
        args.warmup = max(3 if args.model == "lenet" and args.config == "dp" else 20, args.steps // 5)
    if args.profile_steps < 0:
        args.profile_steps = max(3, args.steps // 4)
    if args.steps < 1 or args.repeats < 1 or args.devices < 1:
        parser.error("--steps, --repeats and --devices must be >= 1")
    if args.config == "pipe" and args.devices not in (1, 2):
        parser.error("--config pipe: --devices must be 1 or 2")
    if args.config == "dp" and BATCH % (args.devices * args.processes):
        parser.error(f"--devices x --processes must divide the batch {BATCH}")
    if args.processes > 1 and (args.config != "dp" or args.devices != 1):
        parser.error("--processes N needs --config dp and --devices 1")
    return args


def minimize(loss):
    flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)


def thread_cpu():
    """CPU seconds so far of each thread of this process: {tid: (name, seconds)} (Linux /proc)."""
    ticks = os.sysconf("SC_CLK_TCK")
    threads = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as stat:
                text = stat.read()
            with open(f"/proc/self/task/{tid}/comm") as comm:
                name = comm.read().strip()
        except OSError:  # the thread ended meanwhile
            continue
        fields = text[text.rindex(")") + 2:].split()
        threads[tid] = (name, (int(fields[11]) + int(fields[12])) / ticks)  # utime + stime
    return threads


def busy_threads(before, after, wall):
    """The threads that used the CPU between two thread_cpu() snapshots, as 'name: share of the
    wall time' (1.0 = a whole core), busiest first."""
    used = [(seconds - before.get(tid, (name, 0.0))[1], name) for tid, (name, seconds) in after.items()]
    used = sorted((u, n) for u, n in used if u > 0.02 * wall)
    return [f"{name}: {u / wall:.2f}" for u, name in reversed(used)]


def device_busy(prof, calls):
    """Busy milliseconds per call, summed over each device's actors, the busiest actors, and the
    collectives' share."""
    per_device, actors, collective = {}, [], 0.0
    for job in prof.jobs:
        for actor in job.actors:
            ms = 1e3 * actor.busy_seconds / calls
            per_device[actor.device] = per_device.get(actor.device, 0.0) + ms
            actors.append((ms, actor.device, actor.name, actor.op_type or actor.kind))
            if "all_reduce" in (actor.op_type or "") or "all_reduce" in actor.kind or "collective" in actor.kind:
                collective += ms
    actors.sort(reverse=True)
    return ({device: round(ms, 4) for device, ms in sorted(per_device.items())}, round(collective, 4),
            [f"{device} {name} ({kind}) {ms:.3f}" for ms, device, name, kind in actors[:8]])


def data_parallel(args):
    model = mlp if args.model == "mlp" else lenet
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    mirrored = (args.devices > 1 or world > 1) and args.view == "mirrored"
    per_device = BATCH // (args.devices * world) if mirrored else BATCH
    if args.devices > 1:
        flow.config.cpu_device_num(args.devices)
    if args.fusion_mb is not None:
        flow.config.collective_boxing.nccl_fusion_threshold_mb(args.fusion_mb)
    config = flow.FunctionConfig()
    if mirrored:
        config.default_logical_view(flow.scope.mirrored_view())
        image_type, label_type, result_type = tp.ListNumpy.Placeholder, tp.ListNumpy.Placeholder, tp.ListNumpy
    else:
        image_type, label_type, result_type = tp.Numpy.Placeholder, tp.Numpy.Placeholder, tp.Numpy

    @flow.global_function(type="train", function_config=config)
    def train_job(images: image_type((per_device, 1, 28, 28), dtype=flow.float),
                  labels: label_type((per_device,), dtype=flow.int32)) -> result_type:
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, model(images), name="softmax_loss")
        minimize(loss)
        return loss

    random = np.random.default_rng(args.seed)
    batches = []
    for _ in range(POOL_BATCHES):
        images = random.random((BATCH, 1, 28, 28), dtype=np.float32)
        labels = random.integers(0, 10, BATCH, dtype=np.int32)
        if mirrored:  # one contiguous piece per device (of this process's slice), made before the clock starts
            images, labels = np.split(images, world)[rank], np.split(labels, world)[rank]
            batches.append(([np.ascontiguousarray(piece) for piece in np.split(images, args.devices)],
                            [np.ascontiguousarray(piece) for piece in np.split(labels, args.devices)]))
        else:
            batches.append((images, labels))
    last_loss = [0.0]

    def train(steps):
        start = time.perf_counter()
        for i in range(steps):
            loss = train_job(*batches[i % POOL_BATCHES])
        seconds = time.perf_counter() - start
        last_loss[0] = float(np.mean(np.concatenate(loss) if mirrored else loss))
        return seconds

    train(args.warmup)
    before = thread_cpu()
    samples = [train(args.steps) for _ in range(args.repeats)]
    threads = busy_threads(before, thread_cpu(), sum(samples))
    if not np.isfinite(last_loss[0]):
        sys.exit(f"data_parallel_worker: the loss is {last_loss[0]}")
    busy, collective, top = {}, None, []
    if args.profile_steps:
        with weir.profiler.profile() as prof:
            profiled_s = train(args.profile_steps)
        busy, collective, top = device_busy(prof, args.profile_steps)
        profiled_ms = 1e3 * profiled_s / args.profile_steps
    median = statistics.median(samples)
    label = f"{args.devices} device(s)" + (f", {args.view}" if args.devices > 1 else "")
    if world > 1:
        label = f"{world} processes x 1 device, {args.view}, collectives {flow.current_resource()['collectives']}"
    print(f"weir {args.model} train, {label}, batch {BATCH} ({per_device} per call piece): "
          f"{args.steps / median:.1f} steps/s, {1e3 * median / args.steps:.3f} ms/step (median of {args.repeats})")
    print(f"  threads (cores used during the timed runs): {', '.join(threads)}")
    if busy:
        print(f"  profiled ({args.profile_steps} steps, {profiled_ms:.3f} ms/step): busy ms per step by device {busy}, "
              f"all-reduce {collective:.3f} ms")
        for line in top:
            print(f"    {line}")
    print(json.dumps({
        "bench": "data_parallel", "impl": "weir", "config": "dp", "model": args.model, "devices": args.devices,
        "processes": world, "view": args.view if args.devices > 1 or world > 1 else "consistent", "batch": BATCH, "steps": args.steps,
        "repeats": args.repeats, "train_steps_per_s": round(args.steps / median, 2),
        "train_ms_per_step": round(1e3 * median / args.steps, 4),
        "busy_ms_per_step_by_device": busy, "all_reduce_ms_per_step": collective, "busiest_actors": top,
        "thread_cores": threads,
        "final_loss": round(last_loss[0], 4),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1),
    }))


def pipeline(args):
    hidden0, hidden1 = PIPE_LAYERS[args.pipe_job]
    training = args.pipe_job == "train"
    if args.devices > 1:
        flow.config.cpu_device_num(2)
    initializer = flow.truncated_normal(0.1)

    def stage(device):
        return flow.scope.placement("cpu", f"0:{device if args.devices > 1 else 0}")

    def model(images):
        with stage(0):
            reshape = flow.reshape(images, [images.shape[0], -1])
            h0 = flow.layers.dense(reshape, hidden0, activation=flow.nn.relu, kernel_initializer=initializer,
                                   name="stage0_dense")
        with stage(1):
            h1 = flow.layers.dense(h0, hidden1, activation=flow.nn.relu, kernel_initializer=initializer,
                                   name="stage1_dense")
            return flow.layers.dense(h1, 10, kernel_initializer=initializer, name="stage1_logits")

    def body(images, labels):
        logits = model(images)
        if not training:
            return logits
        with stage(1):
            loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits, name="softmax_loss")
        minimize(loss)
        return loss

    kind = "train" if training else "predict"
    config = flow.FunctionConfig()
    if args.devices > 1:  # the placeholders on stage 0's device (outside a scope they would span both)
        config.default_placement_scope(flow.scope.placement("cpu", "0:0"))
    image_spec = tp.Numpy.Placeholder((BATCH, 1, 28, 28), dtype=flow.float)
    label_spec = tp.Numpy.Placeholder((BATCH,), dtype=flow.int32)
    # Two job functions over the same variables: one returns its result, one hands it to a callback.
    if training:
        @flow.global_function(type=kind, function_config=config)
        def job_sync(images: image_spec, labels: label_spec) -> tp.Numpy:
            return body(images, labels)

        @flow.global_function(type=kind, function_config=config)
        def job_async(images: image_spec, labels: label_spec) -> tp.Callback[tp.Numpy]:
            return body(images, labels)
    else:
        @flow.global_function(type=kind, function_config=config)
        def job_sync(images: image_spec) -> tp.Numpy:
            return body(images, None)

        @flow.global_function(type=kind, function_config=config)
        def job_async(images: image_spec) -> tp.Callback[tp.Numpy]:
            return body(images, None)

    random = np.random.default_rng(args.seed)
    batches = [(random.random((BATCH, 1, 28, 28), dtype=np.float32), random.integers(0, 10, BATCH, dtype=np.int32))
               for _ in range(POOL_BATCHES)]
    inputs = [batch if training else batch[:1] for batch in batches]
    results = [0, 0.0]

    def on_result(value):
        results[0] += 1
        results[1] = float(value.mean())

    def run_sync(steps):
        start = time.perf_counter()
        for i in range(steps):
            value = job_sync(*inputs[i % POOL_BATCHES])
            results[1] = float(value.mean())
        return time.perf_counter() - start

    def run_async(steps):
        start = time.perf_counter()
        for i in range(steps):
            job_async(*inputs[i % POOL_BATCHES])(on_result)
        flow.sync_default_session()
        return time.perf_counter() - start

    run_sync(args.warmup)
    run_async(args.warmup)
    sync_s, async_s = [], []
    threads = {}
    for repeat in range(args.repeats):  # alternate which mode goes first
        for mode in (("sync", "async") if repeat % 2 == 0 else ("async", "sync")):
            before = thread_cpu()
            seconds = (run_sync if mode == "sync" else run_async)(args.steps)
            (sync_s if mode == "sync" else async_s).append(seconds)
            if repeat == 0:
                threads[mode] = busy_threads(before, thread_cpu(), seconds)
    expected = args.warmup + args.steps * args.repeats
    if results[0] != expected:
        sys.exit(f"data_parallel_worker: {expected} async calls, {results[0]} callbacks")
    if not np.isfinite(results[1]):
        sys.exit(f"data_parallel_worker: the result is {results[1]}")
    busy, top = {}, []
    if args.profile_steps:
        with weir.profiler.profile() as prof:
            run_async(args.profile_steps)
        busy, _, top = device_busy(prof, args.profile_steps)
    sync_med, async_med = statistics.median(sync_s), statistics.median(async_s)
    flops = 2 * BATCH * (784 * hidden0 + hidden0 * hidden1 + hidden1 * 10) * (1 if not training else 3)
    print(f"weir pipeline ({kind}, 784-{hidden0} | {hidden0}-{hidden1}-10, {args.devices} device(s)), batch {BATCH}: "
          f"sync {args.steps / sync_med:.1f}/s, async {args.steps / async_med:.1f}/s, "
          f"async/sync {sync_med / async_med:.2f}x (median of {args.repeats})")
    for mode, used in threads.items():
        print(f"  threads during the first {mode} run (cores): {', '.join(used)}")
    if busy:
        print(f"  profiled async ({args.profile_steps} calls): busy ms per call by device {busy}")
        for line in top:
            print(f"    {line}")
    print(json.dumps({
        "bench": "data_parallel", "impl": "weir", "config": "pipe", "job": kind, "devices": args.devices,
        "layers": [784, hidden0, hidden1, 10], "batch": BATCH, "steps": args.steps, "repeats": args.repeats,
        "sync_calls_per_s": round(args.steps / sync_med, 2), "async_calls_per_s": round(args.steps / async_med, 2),
        "async_speedup": round(sync_med / async_med, 4), "flop_per_call": flops,
        "busy_ms_per_call_by_device": busy, "busiest_actors": top, "thread_cores": threads,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1),
    }))


def main():
    args = parse_args()
    if args.processes > 1 and "RANK" not in os.environ:  # start the ranks, each running this command
        run_ranks([sys.executable, *sys.argv], args.processes, "data_parallel_worker")
    elif args.config == "dp":
        data_parallel(args)
    else:
        pipeline(args)


if __name__ == "__main__":
    main()
