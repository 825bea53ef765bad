#!/usr/bin/python3
"""Data parallelism across processes: Weir on Gloo vs PyTorch DDP on gloo, 2 processes x 1 core.

Runs, each configuration in its own process(es), alternated and rotated over --reps rounds:
  Weir (bench/data_parallel_worker.py, .venv/bin/python), the seeds' MLP and LeNet training, global
        batch 100, SGD lr 0.1, random data fixed per run:
          1 process    the default session: one device with every core
          2 processes  --processes 2: two ranks (weir-launch's environment), each pinned to its own core
                       with one intra-op thread, the mirrored view, 50 examples per process, gradients
                       averaged through shared memory (the default on one machine); with --gloo also
                       over Gloo (WEIR_COLLECTIVES=gloo, TCP on 127.0.0.1)
          2 processes, consistent: the same with the job written for the whole batch, which every
                       process passes; the compiler splits it over the processes
          --fusion-compare: also the mirrored 2 processes with a collective per gradient instead of
                       fusion buckets (flow.config.collective_boxing.nccl_fusion_threshold_mb(0))
  PyTorch (bench/ddp_worker.py, /usr/bin/python3): DDP gloo 2 processes x 1 thread, each pinned to a
          core, 50 examples per process (the same model, batch, processes and threads)
  all-reduce (build/bench/allreduce_processes): f32 sum between 2 processes pinned to a core each,
          1 KB .. 64 MB, through Weir's process groups (shared memory, Gloo) and through raw Gloo
  sgemm: numpy -> OpenBLAS float32 2048^3 on 1 and 2 threads, the hardware limit.

Prints the medians over the processes and the ratios: Weir 2 processes / PyTorch DDP (target >= 2.5)
and Weir 2 processes / Weir 1 process (target >= 0.60), where the rest goes (the profiled all-reduce
time per step of rank 0), and the all-reduce table. The PyTorch and sgemm processes run with
OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset (their results are checked against float64).
Last line: one JSON object.

  /usr/bin/python3 bench/multi_process.py            # about 3 minutes on a quiet machine
  /usr/bin/python3 bench/multi_process.py --quick
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import (OPENBLAS_HINTS, ROOT, SGEMM_SIZE, ProcessFailed, QuietRunner,  # noqa: E402
                      add_training_run_args, median_of, one_core, peak_of, resolve_training_run_args, rounded,
                      run_ranks, sgemm_argv)

BATCH = 100
TRAIN_FLOP = {"mlp": 163.6e6, "lenet": 7238.5e6}  # per train step at batch 100 (pytorch_cpu_anchors.md 3.2)
TARGETS = {"weir2_vs_ddp": 2.5, "weir2_vs_weir1": 0.60}


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 rounds, fewer steps")
    add_training_run_args(parser, timeout=600)
    parser.add_argument("--no-allreduce", action="store_true", help="skip the all-reduce sizes")
    parser.add_argument("--gloo", action="store_true", help="also Weir 2 processes over Gloo")
    parser.add_argument("--fusion-compare", action="store_true",
                        help="also Weir 2 processes with a collective per gradient (fusion off), over shm (and Gloo)")
    parser.add_argument("--build", default=os.path.join(ROOT, "build"), help="the build with bench/allreduce_processes")
    parser.add_argument("--spawn", type=int, default=0, help=argparse.SUPPRESS)  # internal: benchlib.run_ranks
    parser.add_argument("command", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if not args.spawn:
        resolve_training_run_args(parser, args, TRAIN_FLOP)
    return args


def configurations(args):
    weir = [args.weir_python, os.path.join(ROOT, "bench", "data_parallel_worker.py"), "--config", "dp"]
    ddp = [args.python, os.path.join(ROOT, "bench", "ddp_worker.py")]
    configs = [("sgemm/1", "sgemm", "sgemm OpenBLAS 1 thread", sgemm_argv(args.python, 1), {}),
               ("sgemm/2", "sgemm", "sgemm OpenBLAS 2 threads", sgemm_argv(args.python, 2), {})]
    for model in args.models:
        steps = ["--model", model, "--steps", str(args.steps_mlp if model == "mlp" else args.steps_lenet),
                 "--repeats", str(args.repeats)]
        configs += [
            (f"{model}/weir1", model, "weir 1 process (2 cores)", weir + steps + ["--devices", "1"], {}),
            (f"{model}/weir2", model, "weir 2 processes x 1 core, shm", weir + steps + ["--processes", "2"], {}),
            (f"{model}/weir2c", model, "weir 2 x 1 core, shm, consistent",
             weir + steps + ["--processes", "2", "--view", "consistent"], {}),
            (f"{model}/ddp", model, "pytorch DDP gloo 2 x 1 thread",
             ddp + steps + ["--world-size", "2"] + (["--channels-last"] if model == "lenet" else []), {}),
        ]
        if args.gloo:
            configs.append((f"{model}/weir2gloo", model, "weir 2 processes x 1 core, Gloo",
                            weir + steps + ["--processes", "2"], {"WEIR_COLLECTIVES": "gloo"}))
        if args.fusion_compare:
            configs.append((f"{model}/weir2nofuse", model, "weir 2 x 1 core, shm, no fusion",
                            weir + steps + ["--processes", "2", "--fusion-mb", "0"], {}))
            if args.gloo:
                configs.append((f"{model}/weir2gloonofuse", model, "weir 2 x 1 core, Gloo, no fusion",
                                weir + steps + ["--processes", "2", "--fusion-mb", "0"], {"WEIR_COLLECTIVES": "gloo"}))
    if not args.no_allreduce:
        program = os.path.join(args.build, "bench", "allreduce_processes")
        configs.append(("allreduce/2", "allreduce", "all-reduce 2 processes",
                        [sys.executable, os.path.abspath(__file__), "--spawn", "2", program], {}))
    return configs


def main():
    args = parse_args()
    if args.spawn:
        run_ranks(args.command, args.spawn, "multi_process")
        return
    started = time.monotonic()
    configs = configurations(args)
    print(f"data parallel across processes, global batch {BATCH}: {len(configs)} configurations x {args.reps} "
          f"rounds, {args.repeats} timed runs each (MLP {args.steps_mlp} steps, LeNet {args.steps_lenet})", flush=True)
    runner = QuietRunner(args.max_foreign, args.retries, args.quiet_budget, args.timeout)
    samples = {key: [] for key, *_ in configs}
    hints = {name: os.environ.pop(name) for name in OPENBLAS_HINTS if name in os.environ}
    for rep in range(args.reps):
        order = configs[rep % len(configs):] + configs[:rep % len(configs)]
        for key, group, label, argv, extra_env in order:
            if group == "allreduce" and rep > 0:
                continue  # one run: it repeats each size itself
            env = dict(extra_env, **hints) if argv[0] == args.weir_python else dict(extra_env)
            try:
                figures = runner.run(argv, env, cpus=one_core() if key == "sgemm/1" else None)
            except ProcessFailed as error:
                sys.exit(f"multi_process: {error}")
            samples[key].append(figures)
            what = (f"{figures['gflops_median']:7.1f} GFLOP/s" if group == "sgemm" else
                    "done" if group == "allreduce" else f"train {figures['train_steps_per_s']:8.1f} steps/s")
            print(f"  round {rep + 1}/{args.reps}  {group:<9} {label:<34} {what}  cores {figures['cores']:.2f}  "
                  f"foreign {figures.get('foreign_cores', 0):.2f}", flush=True)

    def median(key, field):
        return median_of(samples.get(key, []), field)

    def ratio(a, b):
        return a / b if a is not None and b else None

    def show(value, digits=3):
        return "-" if value is None else f"{value:.{digits}f}"

    peak1, peak2 = peak_of(samples["sgemm/1"]), peak_of(samples["sgemm/2"])
    result = {"sgemm_gflops_1thread": peak1, "sgemm_gflops_2threads": peak2}
    print(f"\nhardware limit (OpenBLAS sgemm {SGEMM_SIZE}^3): 1 thread {show(peak1, 1)} GFLOP/s, 2 threads "
          f"{show(peak2, 1)} GFLOP/s")
    header = f"{'model':<6} {'configuration':<34} {'steps/s':>9} {'ms/step':>8} {'GFLOP/s':>8} {'% peak':>7} {'cores':>6}"
    print(header)
    print("-" * len(header))
    for key, group, label, *_ in configs:
        if group not in TRAIN_FLOP:
            continue
        rate = median(key, "train_steps_per_s")
        gflops = rate * TRAIN_FLOP[group] / 1e9 if rate else None
        share = ratio(gflops, peak2)
        name = key.split("/")[1]
        result.update({f"{group}_{name}_steps_per_s": rate, f"{group}_{name}_peak_share": share})
        print(f"{group:<6} {label:<34} {show(rate, 1):>9} {show(1e3 / rate if rate else None, 3):>8} "
              f"{show(gflops, 1):>8} {show(100 * share if share else None, 1):>7} {show(median(key, 'cores'), 2):>6}")
    misses = []
    for model in args.models:
        weir1, weir2, ddp = (median(f"{model}/{name}", "train_steps_per_s") for name in ("weir1", "weir2", "ddp"))
        result[f"{model}_weir2_vs_ddp"] = ratio(weir2, ddp)
        result[f"{model}_weir2_vs_weir1"] = ratio(weir2, weir1)
        profiled = [f for f in samples[f"{model}/weir2"] if f.get("all_reduce_ms_per_step") is not None]
        where = ""
        if profiled:
            last = profiled[-1]
            result[f"{model}_weir2_all_reduce_ms_per_step"] = last["all_reduce_ms_per_step"]
            where = (f"; rank 0 profiled: {last['all_reduce_ms_per_step']:.3f} ms of all-reduce (waiting for the "
                     f"other rank included) and {last['busy_ms_per_step_by_device'].get('cpu:0', 0):.3f} ms of compute "
                     f"per step")
        print(f"{model}: Weir 2 processes / PyTorch DDP = {show(result[f'{model}_weir2_vs_ddp'], 2)} (target >= "
              f"{TARGETS['weir2_vs_ddp']}); Weir 2 processes / 1 process = {show(result[f'{model}_weir2_vs_weir1'], 2)} "
              f"(target >= {TARGETS['weir2_vs_weir1']}){where}")
        consistent = median(f"{model}/weir2c", "train_steps_per_s")
        result[f"{model}_weir2_consistent_vs_ddp"] = ratio(consistent, ddp)
        print(f"  the consistent view (the whole batch passed to both, split by the compiler): Weir 2 processes / "
              f"PyTorch DDP = {show(result[f'{model}_weir2_consistent_vs_ddp'], 2)}, / Weir 1 process = "
              f"{show(ratio(consistent, weir1), 2)}")
        if args.gloo:
            gloo = median(f"{model}/weir2gloo", "train_steps_per_s")
            result[f"{model}_weir2gloo_vs_ddp"] = ratio(gloo, ddp)
            print(f"  over Gloo instead of shared memory: Weir 2 processes / PyTorch DDP = "
                  f"{show(result[f'{model}_weir2gloo_vs_ddp'], 2)}, / Weir 1 process = {show(ratio(gloo, weir1), 2)}")
        if args.fusion_compare:
            for fused_key, unfused_key, over in (("weir2", "weir2nofuse", "shared memory"),
                                                 ("weir2gloo", "weir2gloonofuse", "Gloo")):
                fused, unfused = median(f"{model}/{fused_key}", "train_steps_per_s"), median(f"{model}/{unfused_key}", "train_steps_per_s")
                if fused is None or unfused is None:
                    continue
                result[f"{model}_{fused_key}_fusion_gain"] = ratio(fused, unfused)
                print(f"  gradient fusion over {over}: {show(fused, 1)} steps/s in buckets, {show(unfused, 1)} with a "
                      f"collective per gradient ({show(ratio(fused, unfused), 2)}x)")
        for name, target in TARGETS.items():
            value = result[f"{model}_{name}"]
            if value is not None and value < target:
                misses.append(f"{model}_{name} {value:.3f} < {target}")
    if samples.get("allreduce/2"):
        table = samples["allreduce/2"][0]["sizes"]
        result["allreduce"] = table
        print("\nall-reduce f32 sum, 2 processes x 1 core: median us (bus GB/s)")
        print(f"{'bytes':>10} {'weir shared memory':>20} {'weir gloo':>20} {'raw gloo':>20}")
        for row in table:
            print(f"{row['bytes']:>10}" + "".join(
                f" {row[side + '_us']:>11.1f} ({row[side + '_bus_gbps']:5.2f})"
                for side in ("weir_shm", "weir_gloo", "raw_gloo")))
    print("targets: " + ("all met" if not misses else "missed: " + "; ".join(misses)))
    note = runner.noise_note()
    if note:
        print(note)
    result.update({"targets_missed": misses, "max_foreign_cores": runner.max_kept_foreign, "reps": args.reps,
                   "repeats": args.repeats, "quick": args.quick, "elapsed_s": time.monotonic() - started})
    print(json.dumps(rounded(result)))


if __name__ == "__main__":
    main()
