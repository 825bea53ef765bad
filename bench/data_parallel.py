#!/usr/bin/python3
"""Data parallelism and pipelines on CPU devices: Weir's mirrored view vs PyTorch DDP, and a two-stage pipeline.

Runs, each configuration in its own process, alternated and rotated over --reps rounds:
  Weir (bench/data_parallel_worker.py, .venv/bin/python), the seeds' MLP and LeNet training, global
        batch 100, SGD lr 0.1, random data fixed per run:
          1 device     the default session: one device with every core (consistent view)
          2 devices    flow.config.cpu_device_num(2), the mirrored view, 50 examples per device
                       (each device gets one core on a 2-core machine)
          [--consistent: 2 devices in the consistent view, the job written for the whole batch]
  PyTorch (bench/ddp_worker.py, /usr/bin/python3):
          DDP 2x1      DistributedDataParallel, gloo, 2 processes x 1 thread, each pinned to a core,
                       50 examples per process
          1 process    at its best setting for the model (a sweep on this machine:
                       MLP torch 1 thread + OpenBLAS 2, LeNet torch 2 + OpenBLAS 1 channels_last)
  Pipeline (Weir): an MLP cut into two stages of about equal cost, 784->1024 relu on device 0 and
          1024->784 relu->10 on device 1 (flow.scope.placement), a predict job called with sync calls
          (-> tp.Numpy) and async calls (-> tp.Callback[tp.Numpy]), alternated inside the process.
          [--pipe-one-device: the same model on one device with every core, for reference]
  sgemm: numpy -> OpenBLAS float32 2048^3 on 1 and 2 threads (the method of pytorch_cpu_anchors.md
          3.1: blocks of >= 0.5 s, the median of 5), the hardware limit the figures are compared with.

Prints the medians over the processes (each reports the median of its own --repeats runs) and the
ratios: Weir 2-device mirrored / PyTorch DDP 2x1 (target >= 5), Weir 2 devices / Weir 1 device
(target >= 0.90), pipeline async / sync (target >= 1.5); and each figure as GFLOP/s and as a share of
the measured 2-thread sgemm peak. The PyTorch and sgemm processes run with OPENBLAS_CORETYPE and
OPENBLAS_L2_SIZE unset (their results are checked against float64). Last line: one JSON object.

  /usr/bin/python3 bench/data_parallel.py             # about 5 minutes on a quiet machine
  /usr/bin/python3 bench/data_parallel.py --quick     # about 1.5 minutes
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import (OPENBLAS_HINTS, ROOT, SGEMM_SIZE, ProcessFailed, QuietRunner,  # noqa: E402
                      add_training_run_args, median_of, one_core, peak_of, resolve_training_run_args, rounded,
                      sgemm_argv)

BATCH = 100
# FLOPs per train step at batch 100 (pytorch_cpu_anchors.md 3.2; 1 FMA = 2 FLOP).
TRAIN_FLOP = {"mlp": 163.6e6, "lenet": 7238.5e6}
# PyTorch's best one-process setting per model (pytorch_cpu_anchors.md 4.2; compare_pytorch.py picks
# among these candidates): flags for ddp_worker.py --world-size 1.
TORCH_BEST = {"mlp": (["--torch-threads", "1", "--blas-threads", "2"], "1 thr + BLAS 2"),
              "lenet": (["--torch-threads", "2", "--blas-threads", "1", "--channels-last"], "2 thr + BLAS 1, NHWC")}
TARGETS = {"weir2_vs_ddp": 5.0, "weir2_vs_weir1": 0.90, "pipe_async_speedup": 1.5}


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 rounds, fewer steps (about 1.5 minutes)")
    add_training_run_args(parser, timeout=300)
    parser.add_argument("--steps-pipe", type=int, default=None, help="timed pipeline calls per run (default 200, quick 100)")
    parser.add_argument("--consistent", action="store_true", help="also Weir 2 devices in the consistent view")
    parser.add_argument("--pipe-one-device", action="store_true", help="also the pipeline's model on one device")
    parser.add_argument("--no-pipe", action="store_true", help="skip the pipeline")
    parser.add_argument("--weir-pythonpath", default=None, help="PYTHONPATH for --weir-python")
    args = parser.parse_args()
    resolve_training_run_args(parser, args, TRAIN_FLOP)
    args.steps_pipe = args.steps_pipe or (100 if args.quick else 200)
    if args.steps_pipe < 1:
        parser.error("--steps-pipe must be >= 1")
    return args


def configurations(args):
    """(key, group, label, argv, extra environment) for every configuration."""
    weir_env = {"PYTHONPATH": args.weir_pythonpath} if args.weir_pythonpath else {}
    weir = [args.weir_python, os.path.join(ROOT, "bench", "data_parallel_worker.py")]
    ddp = [args.python, os.path.join(ROOT, "bench", "ddp_worker.py")]
    common = ["--repeats", str(args.repeats)]
    configs = [("sgemm/1", "sgemm", "sgemm OpenBLAS 1 thread", sgemm_argv(args.python, 1), {}),
               ("sgemm/2", "sgemm", "sgemm OpenBLAS 2 threads", sgemm_argv(args.python, 2), {})]
    for model in args.models:
        steps = ["--steps", str(args.steps_mlp if model == "mlp" else args.steps_lenet)] + common
        dp = weir + ["--config", "dp", "--model", model] + steps
        configs += [
            (f"{model}/weir1", model, "weir 1 device (2 cores)", dp + ["--devices", "1"], weir_env),
            (f"{model}/weir2", model, "weir 2 devices mirrored", dp + ["--devices", "2", "--view", "mirrored"], weir_env),
        ]
        if args.consistent:
            configs.append((f"{model}/weir2c", model, "weir 2 devices consistent",
                            dp + ["--devices", "2", "--view", "consistent"], weir_env))
        torch = ddp + ["--model", model] + steps
        configs += [
            (f"{model}/ddp", model, "pytorch DDP gloo 2x1 thread",
             torch + ["--world-size", "2"] + (["--channels-last"] if model == "lenet" else []), {}),
            (f"{model}/torch1", model, f"pytorch 1 process, {TORCH_BEST[model][1]}",
             torch + ["--world-size", "1"] + TORCH_BEST[model][0], {}),
        ]
    if not args.no_pipe:
        pipe = weir + ["--config", "pipe", "--pipe-job", "predict", "--steps", str(args.steps_pipe)] + common
        configs.append(("pipe/2", "pipe", "weir pipeline, 2 devices", pipe + ["--devices", "2"], weir_env))
        if args.pipe_one_device:
            configs.append(("pipe/1", "pipe", "weir pipeline model, 1 device", pipe + ["--devices", "1"], weir_env))
    return configs


def run_all(args, configs):
    runner = QuietRunner(args.max_foreign, args.retries, args.quiet_budget, args.timeout)
    samples = {key: [] for key, *_ in configs}
    # The PyTorch and sgemm processes run without the OpenBLAS hints (their results are checked).
    hints = {name: os.environ.pop(name) for name in OPENBLAS_HINTS if name in os.environ}
    for rep in range(args.reps):
        # Rotate the order each round so that slow drifts of the machine hit every configuration.
        order = configs[rep % len(configs):] + configs[:rep % len(configs)]
        for key, group, label, argv, extra_env in order:
            env = dict(extra_env)
            if argv[0] == args.weir_python:  # Weir's processes keep the caller's environment
                env.update(hints)
            try:
                figures = runner.run(argv, env, cpus=one_core() if key == "sgemm/1" else None)  # 1 thread, 1 core
            except ProcessFailed as error:
                sys.exit(f"data_parallel: {error}")
            samples[key].append(figures)
            if group == "sgemm":
                what = f"{figures['gflops_median']:7.1f} GFLOP/s"
            elif group == "pipe":
                what = (f"sync {figures['sync_calls_per_s']:7.1f}/s  async {figures['async_calls_per_s']:7.1f}/s  "
                        f"x{figures['async_speedup']:.2f}")
            else:
                what = f"train {figures['train_steps_per_s']:8.1f} steps/s"
            print(f"  round {rep + 1}/{args.reps}  {group:<5} {label:<38} {what}  cores {figures['cores']:.2f}  "
                  f"foreign {figures.get('foreign_cores', 0):.2f}", flush=True)
    return samples, runner


def summarize(args, configs, samples, runner, started):
    def median(key, field):
        return median_of(samples.get(key, []), field)

    def ratio(a, b):
        return a / b if a is not None and b else None

    def show(value, digits=3):
        return "-" if value is None else f"{value:.{digits}f}"

    peak1, peak2 = peak_of(samples["sgemm/1"]), peak_of(samples["sgemm/2"])
    result = {"sgemm_gflops_1thread": peak1, "sgemm_gflops_2threads": peak2,
              "sgemm_gflops_2threads_best": max((f["gflops_best"] for f in samples["sgemm/2"]), default=None)}
    print()
    print(f"hardware limit (numpy -> OpenBLAS sgemm {SGEMM_SIZE}^3, best median of the processes): "
          f"1 thread {show(peak1, 1)} GFLOP/s, 2 threads {show(peak2, 1)} GFLOP/s")
    header = f"{'model':<6} {'configuration':<38} {'steps/s':>9} {'ms/step':>8} {'GFLOP/s':>8} {'% peak':>7} {'cores':>6} {'foreign':>8}"
    print(header)
    print("-" * len(header))
    for key, group, label, *_ in configs:
        if group not in TRAIN_FLOP:
            continue
        rate = median(key, "train_steps_per_s")
        gflops = rate * TRAIN_FLOP[group] / 1e9 if rate else None
        share = ratio(gflops, peak2)
        name = key.split("/")[1]
        result.update({f"{group}_{name}_steps_per_s": rate, f"{group}_{name}_gflops": gflops,
                       f"{group}_{name}_peak_share": share})
        print(f"{group:<6} {label:<38} {show(rate, 1):>9} {show(1e3 / rate if rate else None, 3):>8} "
              f"{show(gflops, 1):>8} {show(100 * share if share else None, 1):>7} {show(median(key, 'cores'), 2):>6} "
              f"{show(median(key, 'foreign_cores'), 2):>8}")
    print()
    for model in args.models:
        weir1, weir2 = median(f"{model}/weir1", "train_steps_per_s"), median(f"{model}/weir2", "train_steps_per_s")
        ddp, torch1 = median(f"{model}/ddp", "train_steps_per_s"), median(f"{model}/torch1", "train_steps_per_s")
        result.update({
            f"{model}_weir2_vs_ddp": ratio(weir2, ddp), f"{model}_weir2_vs_weir1": ratio(weir2, weir1),
            f"{model}_weir1_vs_torch1": ratio(weir1, torch1), f"{model}_weir2_vs_torch1": ratio(weir2, torch1),
            f"{model}_ddp_vs_torch1": ratio(ddp, torch1),
        })
        if args.consistent:
            result[f"{model}_weir2c_vs_weir1"] = ratio(median(f"{model}/weir2c", "train_steps_per_s"), weir1)
        print(f"{model}: Weir 2 devices mirrored / PyTorch DDP 2x1 = {show(result[f'{model}_weir2_vs_ddp'], 2)} "
              f"(target >= {TARGETS['weir2_vs_ddp']:.0f}); Weir 2 devices / 1 device = "
              f"{show(result[f'{model}_weir2_vs_weir1'])} (target >= {TARGETS['weir2_vs_weir1']:.2f})"
              + (f"; consistent 2 devices / 1 device = {show(result[f'{model}_weir2c_vs_weir1'])}" if args.consistent else ""))
        print(f"  for reference: Weir 1 device / PyTorch 1 process ({TORCH_BEST[model][1]}) = "
              f"{show(result[f'{model}_weir1_vs_torch1'], 2)}, PyTorch DDP / PyTorch 1 process = "
              f"{show(result[f'{model}_ddp_vs_torch1'], 2)}")
        profiles = [f for f in samples[f"{model}/weir2"] if f.get("busy_ms_per_step_by_device")]
        if profiles:
            last = profiles[-1]
            print(f"  Weir 2 devices, profiled: busy ms per step by device {last['busy_ms_per_step_by_device']} "
                  f"(all-reduce {last['all_reduce_ms_per_step']:.3f} ms) vs {last['train_ms_per_step']:.3f} ms per step; "
                  f"threads (cores): {', '.join(last.get('thread_cores', []))}")
    if "pipe/2" in samples:
        sync, async_ = median("pipe/2", "sync_calls_per_s"), median("pipe/2", "async_calls_per_s")
        speedup = median("pipe/2", "async_speedup")
        flop = samples["pipe/2"][0]["flop_per_call"]
        layers = samples["pipe/2"][0]["layers"]
        result.update({"pipe_sync_calls_per_s": sync, "pipe_async_calls_per_s": async_, "pipe_async_speedup": speedup,
                       "pipe_async_gflops": async_ * flop / 1e9 if async_ else None,
                       "pipe_async_peak_share": ratio(async_ * flop / 1e9 if async_ else None, peak2)})
        print(f"pipeline (predict, {'-'.join(map(str, layers[:2]))} on device 0 | {'-'.join(map(str, layers[1:]))} on "
              f"device 1, batch {BATCH}): sync {show(sync, 1)}/s, async {show(async_, 1)}/s; async / sync = "
              f"{show(speedup, 2)} (target >= {TARGETS['pipe_async_speedup']:.1f}); async "
              f"{show(result['pipe_async_gflops'], 1)} GFLOP/s = {show(100 * (result['pipe_async_peak_share'] or 0), 1)} % "
              f"of the 2-thread peak")
        last = samples["pipe/2"][-1]
        if last.get("busy_ms_per_call_by_device"):
            print(f"  profiled async: busy ms per call by device {last['busy_ms_per_call_by_device']}; "
                  f"threads (cores) sync: {', '.join(last['thread_cores'].get('sync', []))}; "
                  f"async: {', '.join(last['thread_cores'].get('async', []))}")
        if "pipe/1" in samples:
            one = median("pipe/1", "sync_calls_per_s")
            result["pipe_one_device_sync_calls_per_s"] = one
            result["pipe_async_vs_one_device"] = ratio(async_, one)
            print(f"  the same model on 1 device (2 cores), sync: {show(one, 1)}/s; pipeline async / that = "
                  f"{show(result['pipe_async_vs_one_device'], 2)}")
    misses = []
    for model in args.models:
        for name in ("weir2_vs_ddp", "weir2_vs_weir1"):
            value = result.get(f"{model}_{name}")
            if value is not None and value < TARGETS[name]:
                misses.append(f"{model}_{name} {value:.3f} < {TARGETS[name]}")
    if result.get("pipe_async_speedup") is not None and result["pipe_async_speedup"] < TARGETS["pipe_async_speedup"]:
        misses.append(f"pipe_async_speedup {result['pipe_async_speedup']:.3f} < {TARGETS['pipe_async_speedup']}")
    print("targets: " + ("all met" if not misses else "missed: " + "; ".join(misses)))
    note = runner.noise_note()
    if note:
        print(note)
    result.update({"targets_missed": misses, "max_foreign_cores": runner.max_kept_foreign,
                   "retried_processes": runner.retried, "reps": args.reps, "repeats": args.repeats,
                   "steps_mlp": args.steps_mlp, "steps_lenet": args.steps_lenet, "steps_pipe": args.steps_pipe,
                   "quick": args.quick, "elapsed_s": time.monotonic() - started})
    print(json.dumps(rounded(result)))


def main():
    args = parse_args()
    if not os.access(args.weir_python, os.X_OK):
        sys.exit(f"data_parallel: {args.weir_python} not found; run `make venv`")
    configs = configurations(args)
    started = time.monotonic()
    print(f"data parallel + pipeline on CPU devices, global batch {BATCH}: {len(configs)} configurations x "
          f"{args.reps} processes, {args.repeats} timed runs each (MLP {args.steps_mlp} steps, LeNet "
          f"{args.steps_lenet}, pipeline {args.steps_pipe} calls), alternated", flush=True)
    samples, runner = run_all(args, configs)
    summarize(args, configs, samples, runner, started)


if __name__ == "__main__":
    main()
