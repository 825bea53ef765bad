#!/usr/bin/python3
"""Weir vs PyTorch on the CPU: the seeds' MNIST MLP and LeNet, train steps and inference, side by side.

Runs, each configuration in its own process, alternated and rotated over --reps rounds:
  Weir C++     bench/train_step (build folder): defaults, and on one core (--scheduler-threads 1,
               OMP_NUM_THREADS=1, OPENBLAS_NUM_THREADS=1, the process pinned to one core)
  Weir Python  bench/weir_python_models.py (.venv/bin/python): defaults
  PyTorch      bench/pytorch_models.py (/usr/bin/python3): 1 thread (pinned to one core, as Weir's
               1-core run), and the 2-core thread settings that a sweep on this machine found
               best for that model (bench/pytorch_models.py). "PyTorch best" is the candidate with the best median, chosen
               separately per model for train and inference; "PyTorch 1 thread" the best of the
               1-thread candidates (LeNet: NCHW or channels_last).
  sgemm        the hardware limit: numpy -> OpenBLAS float32 sgemm 2048^3 on 1 core (pinned) and on
               2 threads, blocks of >= 0.5 s, median of 5, checked against float64 (benchlib.py sgemm)
  Whole process (MLP): bench/mlp_epoch_process.py, Weir Python vs PyTorch at the MLP's best train
               setting: interpreter start, MNIST load, 1 epoch (600 steps), test-set evaluation.
The peer at its best: this workplace may set OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE, which hold
OpenBLAS (so PyTorch's dense layers) to older kernels. Before the rounds, PyTorch's float32 results
on the benchmark's shapes (the MLP's and LeNet's matmuls, both models' forward and backward) are
checked against float64 with both variables removed (benchlib.py torch-check, OpenBLAS 1 and 2
threads); if they are right (max relative error <= 1e-4), PyTorch's and the sgemm processes run
without them, else with the environment as it is, and the output says so. They run with
OPENBLAS_VERBOSE=2, and the OpenBLAS core type they loaded is reported (torch_openblas_core).
Weir's own processes keep the environment as it is.
Prints the medians over the processes (each process reports the median of its own --repeats runs),
peak RSS, CPU use and foreign load per configuration, each one's GFLOP/s as a share of the sgemm
peak (1-core configurations against the 1-core peak, the others against the 2-thread one; FLOPs per
step from pytorch_cpu_anchors.md 3.2), and the ratios Weir ÷ PyTorch in steps per second (> 1 =
Weir faster). Weir runs with its defaults: no thread tuning. Last line: one JSON object.

  /usr/bin/python3 bench/compare_pytorch.py --build build                # everything, ~10-15 min
  /usr/bin/python3 bench/compare_pytorch.py --build build --models mlp --quick   # ~2 min
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import (MAX_REL_ERR, OPENBLAS_HINTS, ROOT, SGEMM_SIZE, ProcessFailed, QuietRunner,  # noqa: E402
                      median_of, one_core, peak_of, rounded, run_process, sgemm_argv, torch_check_argv)

# name -> (torch threads, OpenBLAS threads, OMP_WAIT_POLICY or None, channels_last)
TORCH_CONFIGS = {
    "t1b1": (1, 1, None, False),
    "t1b1c": (1, 1, None, True),
    "t1b2": (1, 2, None, False),
    "t1b2p": (1, 2, "PASSIVE", False),
    "t2b1": (2, 1, None, False),
    "t2b1c": (2, 1, None, True),
    "t2b2p": (2, 2, "PASSIVE", False),
    "t2b2": (2, 2, None, False),
}
# The candidates per model: the best and near-best of the anchors' thread matrix (4.2) plus 1 thread.
# torch 2 + OpenBLAS 2 with spinning pools (4.5x slower for the MLP) only when --torch-configs names it.
DEFAULT_TORCH_CONFIGS = {"mlp": "t1b1,t1b2,t1b2p,t2b2p", "lenet": "t1b1,t1b1c,t2b1,t2b1c"}
ONE_THREAD = ("t1b1", "t1b1c")  # pinned to one core
MODELS = ("mlp", "lenet")
# FLOPs per step at batch 100 (pytorch_cpu_anchors.md 3.2; 1 FMA = 2 FLOP): train step, inference (forward).
TRAIN_FLOP = {"mlp": 163.6e6, "lenet": 7238.5e6}
INFER_FLOP = {"mlp": 81.31e6, "lenet": 2454.6e6}


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build", help="Meson build folder with bench/train_step")
    parser.add_argument("--models", default="mlp,lenet", help="comma-separated subset of mlp,lenet")
    parser.add_argument("--quick", action="store_true",
                        help="fewer processes and steps (--reps 2, half the steps, 2 repeats), no --epoch-reps")
    parser.add_argument("--reps", type=int, default=None, help="processes per configuration (default 4)")
    parser.add_argument("--steps-mlp", type=int, default=None, help="timed MLP steps per run (default 200)")
    parser.add_argument("--steps-lenet", type=int, default=None, help="timed LeNet steps per run (default 20)")
    parser.add_argument("--repeats", type=int, default=None, help="timed runs inside a process (default 3)")
    parser.add_argument("--epoch-reps", type=int, default=None,
                        help="whole-process MLP epoch runs per side, after 1 uncounted warm-up (default 5; 0 = skip)")
    parser.add_argument("--no-python", action="store_true", help="skip Weir's Python API")
    parser.add_argument("--python", default="/usr/bin/python3", help="the Python with torch")
    parser.add_argument("--weir-python", default=os.path.join(ROOT, ".venv", "bin", "python"),
                        help="the Python with weir (make venv)")
    parser.add_argument("--weir-pythonpath", default=None,
                        help="PYTHONPATH for --weir-python, e.g. a folder holding a weir package built elsewhere")
    parser.add_argument("--torch-configs", default=None,
                        help=f"comma-separated subset of {','.join(TORCH_CONFIGS)} for every model "
                             f"(default per model: {DEFAULT_TORCH_CONFIGS})")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per process")
    parser.add_argument("--max-foreign", type=float, default=0.15,
                        help="re-run a process when other processes used more cores than this meanwhile")
    parser.add_argument("--retries", type=int, default=2, help="re-runs per process at most")
    parser.add_argument("--quiet-budget", type=float, default=900,
                        help="seconds in all to wait for a quiet machine and to re-run; then runs are kept as they are")
    args = parser.parse_args()
    args.models = [name for name in args.models.split(",") if name]
    if not args.models or any(name not in MODELS for name in args.models):
        parser.error(f"--models: expected a subset of mlp,lenet, got {','.join(args.models)!r}")
    quick = args.quick
    args.reps = args.reps or (2 if quick else 4)
    args.steps_mlp = args.steps_mlp or (100 if quick else 200)
    args.steps_lenet = args.steps_lenet or (10 if quick else 20)
    args.repeats = args.repeats or (2 if quick else 3)
    if args.epoch_reps is None:
        args.epoch_reps = 0 if quick else 5
    if "mlp" not in args.models:
        args.epoch_reps = 0
    args.torch_names = {}
    for model in args.models:
        names = [name for name in (args.torch_configs or DEFAULT_TORCH_CONFIGS[model]).split(",") if name]
        unknown = [name for name in names if name not in TORCH_CONFIGS]
        if unknown or not any(name in ONE_THREAD for name in names):
            parser.error(f"--torch-configs: expected names from {','.join(TORCH_CONFIGS)} including t1b1 "
                         f"or t1b1c, got {','.join(names)!r}")
        args.torch_names[model] = names
    if min(args.reps, args.steps_mlp, args.steps_lenet, args.repeats) < 1 or args.retries < 0 or args.epoch_reps < 0:
        parser.error("--reps, --steps-* and --repeats must be >= 1, --retries and --epoch-reps >= 0")
    return args


def torch_label(name):
    threads, blas, policy, channels_last = TORCH_CONFIGS[name]
    label = f"pytorch {threads} thr + BLAS {blas}" + (" PASSIVE" if policy else "")
    return label + (" NHWC" if channels_last else "")


def torch_flags(name):
    threads, blas, policy, channels_last = TORCH_CONFIGS[name]
    flags = ["--torch-threads", str(threads), "--blas-threads", str(blas)]
    if policy:
        flags += ["--omp-wait-policy", policy]
    if channels_last:
        flags.append("--channels-last")
    return flags


def weir_python_env(args):
    return {"PYTHONPATH": args.weir_pythonpath} if args.weir_pythonpath else {}


def choose_peer_environment(args):
    """Decides whether PyTorch's (and the sgemm) processes run without the OpenBLAS hints: they do
    when PyTorch's float32 results on the benchmark's shapes match float64 without them (OpenBLAS 1
    and 2 threads), else they keep the environment as it is (checked too). Returns a dict: keep_hints,
    hints (those in this environment), max_rel_err and core (of the check the peer runs as), note."""
    hints = {name: os.environ[name] for name in OPENBLAS_HINTS if name in os.environ}

    def check(keep_hints):
        worst, cores, why = 0.0, [], None
        for threads in (1, 2):
            argv = torch_check_argv(args.python, threads, keep_hints)
            try:
                figures = run_process(argv, None, args.timeout)
            except ProcessFailed as error:  # e.g. SIGILL: kernels the CPU lacks
                return float("inf"), None, str(error).strip().splitlines()[-1]
            if figures["max_rel_err"] > worst:
                worst, why = figures["max_rel_err"], figures["worst"]
            cores.append(figures.get("openblas_core", "?"))
        return worst, ",".join(dict.fromkeys(cores)), why

    shown = ", ".join(f"{name}={value}" for name, value in hints.items()) or "none set"
    error, core, why = check(keep_hints=False)
    if error <= MAX_REL_ERR:
        note = (f"PyTorch and sgemm run with {' and '.join(OPENBLAS_HINTS)} unset (in this environment: {shown}): "
                f"OpenBLAS core {core}; float32 vs float64 on the benchmark's shapes, max relative error "
                f"{error:.1e} ({why})")
        return {"keep_hints": False, "hints": hints, "max_rel_err": error, "core": core, "note": note}
    if not hints:
        sys.exit(f"compare_pytorch: PyTorch's float32 results are off by {error:.2e} (relative) against float64 "
                 f"({why}; OpenBLAS core {core}); no OpenBLAS hints to fall back to")
    unset_error, unset_core, unset_why = error, core, why
    error, core, why = check(keep_hints=True)
    if error > MAX_REL_ERR:
        sys.exit(f"compare_pytorch: PyTorch's float32 results are off against float64 without the OpenBLAS hints "
                 f"({unset_error:.2e}, {unset_why}) and with them ({error:.2e}, {why})")
    note = (f"FALLBACK: PyTorch and sgemm run with the hinted OpenBLAS environment ({shown}), OpenBLAS core {core} "
            f"(max relative error {error:.1e}): without the hints (core {unset_core}) their float32 results "
            f"were off by {unset_error:.2e} against float64 ({unset_why})")
    return {"keep_hints": True, "hints": hints, "max_rel_err": error, "core": core, "note": note}


def configurations(args, peer):
    """(key, model, label, kind, argv, extra environment, pinned) for every configuration: the sgemm
    peaks, then the train-step configurations. `peer`: from choose_peer_environment."""
    binary = os.path.join(args.build, "bench", "train_step")
    if not os.access(binary, os.X_OK):
        sys.exit(f"compare_pytorch: {binary} not found; build it with `ninja -C {args.build} bench/train_step`")
    one_thread = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    configs = [("sgemm/1", "sgemm", "sgemm OpenBLAS 1 core", "sgemm",
                sgemm_argv(args.python, 1, peer["keep_hints"]), {}, True),
               ("sgemm/2", "sgemm", "sgemm OpenBLAS 2 threads", "sgemm",
                sgemm_argv(args.python, 2, peer["keep_hints"]), {}, False)]
    for model in args.models:
        steps = args.steps_mlp if model == "mlp" else args.steps_lenet
        common = ["--model", model, "--steps", str(steps), "--repeats", str(args.repeats)]
        configs += [
            (f"{model}/weir", model, "weir C++, defaults", "weir", [binary] + common, {}, False),
            (f"{model}/weir_1core", model, "weir C++, 1 core", "weir",
             [binary] + common + ["--scheduler-threads", "1", "--no-async"], one_thread, True),
        ]
        if not args.no_python:
            configs.append((f"{model}/weir_py", model, "weir Python, defaults", "weir_py",
                            [args.weir_python, os.path.join(ROOT, "bench", "weir_python_models.py")] + common,
                            weir_python_env(args), False))
        script = os.path.join(ROOT, "bench", "pytorch_models.py")
        for name in args.torch_names[model]:
            label = torch_label(name) + (", 1 core" if name in ONE_THREAD else "")
            configs.append((f"{model}/torch_{name}", model, label, "torch",
                            [args.python, script] + common + torch_flags(name), {}, name in ONE_THREAD))
    return configs


def peer_run(runner, peer, argv, pinned=False):
    """Runs one of PyTorch's (or the sgemm) processes in the peer's environment."""
    return runner.run(argv, {"OPENBLAS_VERBOSE": "2"}, unset=() if peer["keep_hints"] else OPENBLAS_HINTS,
                      cpus=one_core() if pinned else None)


def main():
    args = parse_args()
    started = time.monotonic()
    peer = choose_peer_environment(args)
    print(peer["note"], flush=True)
    configs = configurations(args, peer)
    runner = QuietRunner(args.max_foreign, args.retries, args.quiet_budget, args.timeout)
    samples = {key: [] for key, *_ in configs}
    failed = {}  # key -> why; a configuration that fails once (e.g. an op Python lacks) is dropped
    print(f"models {','.join(args.models)}, batch 100: {len(configs)} configurations (2 of them sgemm) x {args.reps} "
          f"processes, {args.repeats} timed runs each (MLP {args.steps_mlp} steps, LeNet {args.steps_lenet}), "
          f"alternated; 1-core configurations pinned to core {min(one_core())}", flush=True)
    for rep in range(args.reps):
        # Rotate the order each round so that slow drifts of the machine hit every configuration.
        order = configs[rep % len(configs):] + configs[:rep % len(configs)]
        for key, model, label, kind, argv, extra_env, pinned in order:
            if key in failed:
                continue
            try:
                if kind in ("torch", "sgemm"):
                    figures = peer_run(runner, peer, argv, pinned)
                else:  # Weir's processes: the environment as it is
                    figures = runner.run(argv, extra_env, cpus=one_core() if pinned else None)
            except ProcessFailed as error:
                if kind in ("torch", "sgemm") or key.endswith("/weir"):
                    sys.exit(f"compare_pytorch: {error}")
                failed[key] = str(error).strip().splitlines()[-1]
                print(f"  {model:<5} {label:<36} FAILED, dropped: {failed[key]}", flush=True)
                continue
            samples[key].append(figures)
            if kind == "sgemm":
                what = f"{figures['gflops_median']:8.1f} GFLOP/s  (OpenBLAS core {figures.get('openblas_core', '?')})"
            else:
                what = (f"train {figures['train_steps_per_s']:8.1f}/s  infer {figures['infer_calls_per_s']:8.1f}/s  "
                        f"RSS {figures['peak_rss_mb']:5.0f} MB")
            print(f"  round {rep + 1}/{args.reps}  {model:<5} {label:<36} {what}  cores {figures['cores']:.2f}  "
                  f"foreign {figures.get('foreign_cores', 0):.2f}", flush=True)

    def median(key, field):
        return median_of(samples.get(key, []), field)

    labels = {key: label for key, _, label, *_ in configs}
    pinned = {key: pin for key, *_, pin in configs}
    peak1, peak2 = peak_of(samples["sgemm/1"]), peak_of(samples["sgemm/2"])
    torch_cores = sorted({figures["openblas_core"] for key, _, _, kind, *_ in configs if kind == "torch"
                          for figures in samples[key] if figures.get("openblas_core")})
    sgemm_cores = sorted({figures["openblas_core"] for figures in samples["sgemm/1"] + samples["sgemm/2"]
                          if figures.get("openblas_core")})
    result = {
        "torch_openblas_core": ",".join(torch_cores) or None,
        "torch_openblas_hints_unset": not peer["keep_hints"],
        "openblas_hints_in_environment": peer["hints"],
        "torch_check_max_rel_err": peer["max_rel_err"],
        "sgemm_gflops_1core": peak1,
        "sgemm_gflops_2cores": peak2,
        "sgemm_gflops_2cores_best": max((f["gflops_best"] for f in samples["sgemm/2"]), default=None),
        "sgemm_openblas_core": ",".join(sgemm_cores) or None,
    }
    # Each configuration's GFLOP/s and share of the sgemm peak on as many cores as it may use.
    for key, model, _, kind, *_ in configs:
        if kind == "sgemm":
            continue
        peak = peak1 if pinned[key] else peak2
        name = key.split("/", 1)[1]
        for what, field, flop in (("train", "train_steps_per_s", TRAIN_FLOP[model]),
                                  ("infer", "infer_calls_per_s", INFER_FLOP[model])):
            rate = median(key, field)
            gflops = rate * flop / 1e9 if rate else None
            result[f"{model}_{name}_{what}_gflops"] = gflops
            result[f"{model}_{name}_{what}_peak_share"] = gflops / peak if gflops and peak else None
    best = {}
    for model in args.models:
        torch_keys = [key for key, m, _, kind, *_ in configs if m == model and kind == "torch"]
        one_keys = [key for key in torch_keys if key.split("_", 1)[1] in ONE_THREAD]
        best_train = max(torch_keys, key=lambda key: median(key, "train_steps_per_s"))
        best_infer = max(torch_keys, key=lambda key: median(key, "infer_calls_per_s"))
        one_train = max(one_keys, key=lambda key: median(key, "train_steps_per_s"))
        one_infer = max(one_keys, key=lambda key: median(key, "infer_calls_per_s"))
        best[model] = best_train

        def ratio(weir_key, torch_key, field):
            weir, torch = median(weir_key, field), median(torch_key, field)
            return weir / torch if weir is not None and torch else None

        result.update({
            f"{model}_train_ratio": ratio(f"{model}/weir", best_train, "train_steps_per_s"),
            f"{model}_infer_ratio": ratio(f"{model}/weir", best_infer, "infer_calls_per_s"),
            f"{model}_train_ratio_1thread": ratio(f"{model}/weir_1core", one_train, "train_steps_per_s"),
            f"{model}_infer_ratio_1thread": ratio(f"{model}/weir_1core", one_infer, "infer_calls_per_s"),
            f"{model}_train_async_ratio": (median(f"{model}/weir", "train_async_steps_per_s") or 0)
            / median(best_train, "train_steps_per_s") or None,
            f"{model}_train_ratio_python": ratio(f"{model}/weir_py", best_train, "train_steps_per_s"),
            f"{model}_infer_ratio_python": ratio(f"{model}/weir_py", best_infer, "infer_calls_per_s"),
            f"{model}_weir_train_steps_per_s": median(f"{model}/weir", "train_steps_per_s"),
            f"{model}_weir_infer_calls_per_s": median(f"{model}/weir", "infer_calls_per_s"),
            f"{model}_weir_python_train_steps_per_s": median(f"{model}/weir_py", "train_steps_per_s"),
            f"{model}_torch_best_train_steps_per_s": median(best_train, "train_steps_per_s"),
            f"{model}_torch_best_train_config": labels[best_train],
            f"{model}_torch_best_infer_calls_per_s": median(best_infer, "infer_calls_per_s"),
            f"{model}_torch_best_infer_config": labels[best_infer],
            f"{model}_torch_1thread_train_steps_per_s": median(one_train, "train_steps_per_s"),
            f"{model}_weir_peak_rss_mb": median(f"{model}/weir", "peak_rss_mb"),
            f"{model}_torch_peak_rss_mb": median(best_train, "peak_rss_mb"),
            f"{model}_torch_best_train_peak_share": result[f"{model}_{best_train.split('/', 1)[1]}_train_peak_share"],
            f"{model}_torch_best_infer_peak_share": result[f"{model}_{best_infer.split('/', 1)[1]}_infer_peak_share"],
            f"{model}_torch_1thread_train_peak_share": result[f"{model}_{one_train.split('/', 1)[1]}_train_peak_share"],
            f"{model}_weir_1core_cores": median(f"{model}/weir_1core", "cores"),
            f"{model}_torch_1thread_cores": median(one_train, "cores"),
        })
    if "mlp" in args.models:
        cpp, python = median("mlp/weir", "train_ms_per_step"), median("mlp/weir_py", "train_ms_per_step")
        result["python_overhead"] = python / cpp - 1 if cpp and python else None
    biggest = "lenet" if "lenet" in args.models else "mlp"
    result["weir_peak_rss_mb"] = result[f"{biggest}_weir_peak_rss_mb"]
    result["torch_peak_rss_mb"] = result[f"{biggest}_torch_peak_rss_mb"]

    epochs = {"weir": [], "torch": []}
    if args.epoch_reps and not args.no_python and "mlp/weir_py" in failed:
        print(f"\nwhole process: skipped, Weir's Python API failed: {failed['mlp/weir_py']}")
    if args.epoch_reps and not args.no_python and "mlp/weir_py" not in failed:
        script = os.path.join(ROOT, "bench", "mlp_epoch_process.py")
        torch_name = best["mlp"].split("_", 1)[1]
        threads, blas, policy, _ = TORCH_CONFIGS[torch_name]
        torch_argv = [args.python, script, "torch", "--torch-threads", str(threads), "--blas-threads", str(blas)]
        if policy:
            torch_argv += ["--omp-wait-policy", policy]
        sides = {"weir": [args.weir_python, script, "weir"], "torch": torch_argv}
        print(f"\nwhole process, MLP 1 epoch + test (PyTorch at {torch_label(torch_name)}): "
              f"1 warm-up + {args.epoch_reps} runs each, alternated", flush=True)
        for rep in range(args.epoch_reps + 1):
            for side in (("weir", "torch") if rep % 2 == 0 else ("torch", "weir")):
                if side == "weir":
                    figures = runner.run(sides[side], weir_python_env(args))
                else:
                    figures = peer_run(runner, peer, sides[side], pinned=torch_name in ONE_THREAD)
                if rep > 0:  # the first round warms the page cache
                    epochs[side].append(figures)
                print(f"  {'warm-up' if rep == 0 else f'run {rep}/{args.epoch_reps}'}  {side:<5} "
                      f"{figures['wall_s']:6.2f} s  accuracy {100 * figures['test_accuracy']:.2f}%  "
                      f"RSS {figures['peak_rss_mb']:4.0f} MB  foreign {figures.get('foreign_cores', 0):.2f}",
                      flush=True)
        result["mlp_epoch_process_ratio"] = median_of(epochs["weir"], "wall_s") / median_of(epochs["torch"], "wall_s")
        result["mlp_epoch_process_weir_s"] = median_of(epochs["weir"], "wall_s")
        result["mlp_epoch_process_torch_s"] = median_of(epochs["torch"], "wall_s")
        result["mlp_epoch_weir_accuracy"] = median_of(epochs["weir"], "test_accuracy")
        result["mlp_epoch_torch_accuracy"] = median_of(epochs["torch"], "test_accuracy")
    else:
        result["mlp_epoch_process_ratio"] = None

    def show(value, digits=3):
        return "-" if value is None else f"{value:.{digits}f}"

    print()
    print(f"hardware limit (numpy -> OpenBLAS sgemm {SGEMM_SIZE}^3, OpenBLAS core {result['sgemm_openblas_core']}, "
          f"best median of the processes): 1 core {show(peak1, 1)} GFLOP/s, 2 threads {show(peak2, 1)} GFLOP/s; "
          f"'% pk' = GFLOP/s against the 1-core peak for 1-core configurations, else the 2-thread one")
    header = (f"{'model':<6} {'configuration':<36} {'train/s':>9} {'ms/step':>8} {'GFLOP/s':>8} {'% pk':>5} "
              f"{'async/s':>9} {'infer/s':>9} {'ms/call':>8} {'% pk':>5} {'RSS MB':>7} {'cores':>6} {'foreign':>8}")
    print(header)
    print("-" * len(header))

    def cell(value, width, digits):
        return f"{value:>{width}.{digits}f}" if value is not None else f"{'-':>{width}}"

    for key, model, label, kind, *_ in configs:
        if kind == "sgemm":
            continue
        name = key.split("/", 1)[1]
        train_share, infer_share = (result[f"{model}_{name}_{what}_peak_share"] for what in ("train", "infer"))
        cells = [cell(median(key, "train_steps_per_s"), 9, 1), cell(median(key, "train_ms_per_step"), 8, 2),
                 cell(result[f"{model}_{name}_train_gflops"], 8, 1),
                 cell(100 * train_share if train_share else None, 5, 1),
                 cell(median(key, "train_async_steps_per_s"), 9, 1), cell(median(key, "infer_calls_per_s"), 9, 1),
                 cell(median(key, "infer_ms_per_call"), 8, 2), cell(100 * infer_share if infer_share else None, 5, 1),
                 cell(median(key, "peak_rss_mb"), 7, 0), cell(median(key, "cores"), 6, 2),
                 cell(median(key, "foreign_cores"), 8, 2)]
        print(f"{model:<6} {label:<36} " + " ".join(cells) + ("  (failed)" if key in failed else ""))

    print()
    print(f"PyTorch's processes loaded OpenBLAS core {result['torch_openblas_core']}. {peer['note']}")
    for model in args.models:
        print(f"{model}: PyTorch best train {result[f'{model}_torch_best_train_config']}, "
              f"inference {result[f'{model}_torch_best_infer_config']}")
        print(f"  Weir / PyTorch best (steps/s, > 1 = Weir faster): train {show(result[f'{model}_train_ratio'])} "
              f"(async {show(result[f'{model}_train_async_ratio'])}, Python {show(result[f'{model}_train_ratio_python'])})"
              f", inference {show(result[f'{model}_infer_ratio'])} (Python {show(result[f'{model}_infer_ratio_python'])})")
        print(f"  Weir 1 core / PyTorch 1 thread (both pinned to one core): train "
              f"{show(result[f'{model}_train_ratio_1thread'])}, inference {show(result[f'{model}_infer_ratio_1thread'])}")
        print(f"  share of the sgemm peak, train: Weir {show(100 * (result[f'{model}_weir_train_peak_share'] or 0), 1)} %, "
              f"PyTorch best {show(100 * (result[f'{model}_torch_best_train_peak_share'] or 0), 1)} %; "
              f"Weir 1 core {show(100 * (result[f'{model}_weir_1core_train_peak_share'] or 0), 1)} %, PyTorch 1 thread "
              f"{show(100 * (result[f'{model}_torch_1thread_train_peak_share'] or 0), 1)} % (of the 1-core peak)")
    if "python_overhead" in result:
        print(f"Weir Python MLP train step vs C++: overhead {show(result['python_overhead'])} (target <= 0.05)")
    if result["mlp_epoch_process_ratio"] is not None:
        print(f"whole process, MLP 1 epoch + test: Weir {result['mlp_epoch_process_weir_s']:.2f} s "
              f"({100 * result['mlp_epoch_weir_accuracy']:.2f}%), PyTorch {result['mlp_epoch_process_torch_s']:.2f} s "
              f"({100 * result['mlp_epoch_torch_accuracy']:.2f}%): ratio {result['mlp_epoch_process_ratio']:.3f} "
              f"(< 1 = Weir faster)")
    for key, why in failed.items():
        print(f"failed: {key}: {why}")
    note = runner.noise_note()
    if note:
        print(note)
    result.update({"max_foreign_cores": runner.max_kept_foreign, "retried_processes": runner.retried,
                   "failed_configurations": sorted(failed), "reps": args.reps, "repeats": args.repeats,
                   "steps_mlp": args.steps_mlp, "steps_lenet": args.steps_lenet,
                   "elapsed_s": time.monotonic() - started})
    figures = rounded(result)
    figures["torch_check_max_rel_err"] = float(f"{peer['max_rel_err']:.3g}")  # too small for rounded()
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
