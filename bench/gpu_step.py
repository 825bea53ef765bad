#!/usr/bin/python3
"""The GPU train step: the seeds' MNIST MLP and LeNet at batch 100 on one GPU, Weir against
PyTorch eager and PyTorch with CUDA graphs, in one run.

    .venv/bin/python bench/gpu_step.py [--models mlp,lenet] [--steps N] [--repeats R]

Each side runs as its own process (Weir: `flow.config.gpu_device_num(1)`, the jobs of
bench/weir_python_models.py; PyTorch: the models of bench/pytorch_models.py, whole-step capture with
torch.cuda.graphs for the graph variant, SGD lr 0.1 as both). Every step returns its loss to the host
(a Weir sync call does; PyTorch calls loss.item()), so each side pays one device-to-host sync per step.
Per side, over --repeats blocks of --steps steps (after a warm-up): the median step time, and the host
cost per step: the process's CPU time (every thread, spin-waits included) over the block, per step.
Weir runs three ways: as it does by default (each job's kernels, its small copies between host and GPU
included, captured into a CUDA graph and replayed, `flow.config.stream_graphs`), with every copy on the
copy streams (`flow.config.copy_stream_threshold_mb(0)`), and with the graphs off (an actor and a launch
per kernel). PyTorch runs eager, with CUDA graphs on batches already on the GPU (its best case), and
with CUDA graphs on batches copied in from pinned host memory each step, as Weir's calls bring theirs
(like for like). `--kinds` picks rows. Without a visible GPU (or without torch) the run says so and
its JSON has "skipped". Last line: one JSON object.

`--weir-binary build/bench/train_step` takes Weir's rows from the C++ API's benchmark (bench/train_step.cpp
with --gpu, sync train calls) instead of the Python bindings: for a GPU machine whose Python the bindings
were not built for. `--torch-python` names the interpreter that has torch (default /usr/bin/python3).

`--kinds` also takes rows that do not run by default: weir-nhwc (the convolutions in NHWC through the
channels-last pass, as on the CPU; by default a GPU runs them in NCHW as written), weir-tf32 and torch-graph-tf32 (f32 matmuls and convolutions on TF32
tensor cores, both sides), weir-amp, torch-eager-amp and torch-graph-amp (mixed precision in f16:
Weir's enable_auto_mixed_precision, PyTorch's torch.autocast; neither scales the loss), and
weir-actor-threads (with --weir-binary: every executor an actor of Weir's runtime threads, where by
default a one-GPU job's executors are lent to the caller's and the poller's threads), and
weir-caller-waits (with --weir-binary: the sync caller waits for the GPU's event itself and handles the
completion, WEIR_CALLER_COMPLETION_US=2000, instead of sleeping until the poller wakes it), and
weir-no-commit (with --weir-binary: the updates do not wait for the commit that keeps a failed call from
writing variables, SessionOptions::commit_before_writes off: one CUDA graph a step instead of two).

`--smoke-cpu` runs the same code on the CPU (no CUDA graphs), so that tests/python/test_gpu.py keeps
this program working on machines without a GPU; its figures mean nothing.
"""
import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BATCH = 100
POOL_BATCHES = 8
KINDS = ("weir", "weir-copy-streams", "weir-no-graphs", "torch-eager", "torch-graph", "torch-graph-host-batch")
# Rows run only when --kinds names them: the convolutions in NHWC (the channels-last pass),
# TF32 tensor cores for f32 products on both sides, mixed precision (f16) on both sides; Weir with every
# executor an actor of its runtime's threads (--weir-binary only: SessionOptions::lend_executors off).
EXTRA_KINDS = ("weir-nhwc", "weir-tf32", "torch-graph-tf32", "weir-amp", "torch-eager-amp", "torch-graph-amp",
               "weir-actor-threads", "weir-caller-waits", "weir-no-commit")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="mlp,lenet")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--weir-binary", help="Weir's rows from this train_step binary (C++ API) instead of Python")
    parser.add_argument("--torch-python", default="/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable)
    parser.add_argument("--torch-tf32", action="store_true",
                        help="let PyTorch's convolutions use TF32 (its default); off, both sides compute in FP32 as Weir does")
    parser.add_argument("--worker-timeout", type=float, default=300, help="seconds each side's process may run")
    parser.add_argument("--smoke-cpu", action="store_true", help="run on the CPU: checks the program, not the GPU")
    parser.add_argument("--kinds", default=",".join(KINDS), help="rows to run, of " + ",".join(KINDS + EXTRA_KINDS))
    parser.add_argument("--worker", choices=KINDS + EXTRA_KINDS, help=argparse.SUPPRESS)
    parser.add_argument("--model", choices=["mlp", "lenet"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.steps < 1 or args.repeats < 1 or args.warmup < 0:
        parser.error("--steps and --repeats must be >= 1, --warmup >= 0")
    unknown = set(args.kinds.split(",")) - set(KINDS + EXTRA_KINDS)
    if unknown:
        parser.error(f"--kinds: expected some of {','.join(KINDS + EXTRA_KINDS)}, got {','.join(sorted(unknown))}")
    return args


def timed_blocks(step, args):
    """Runs `step` warm-up times, then --repeats blocks of --steps; returns (median s/step, median CPU s/step)."""
    for i in range(args.warmup):
        step(i)
    wall, cpu = [], []
    for _ in range(args.repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        for i in range(args.steps):
            loss = step(i)
        wall.append((time.perf_counter() - start) / args.steps)
        cpu.append((time.process_time() - start_cpu) / args.steps)
    if loss != loss:
        sys.exit("gpu_step: the loss is NaN")
    return statistics.median(wall), statistics.median(cpu), loss


def weir_worker(args):
    sys.path.insert(0, HERE)
    import numpy as np
    import weir as flow
    import weir_python_models as models

    if args.smoke_cpu:
        pass
    elif flow.visible_gpus() == 0:
        print(json.dumps({"skipped": "no GPU visible to Weir"}))
        return
    else:
        flow.config.gpu_device_num(1)
    flow.config.stream_graphs(args.worker != "weir-no-graphs")
    if args.worker == "weir-copy-streams":
        flow.config.copy_stream_threshold_mb(0)
    flow.config.enable_tensor_float_32_compute(args.worker == "weir-tf32")
    train_job, _ = models.make_jobs(models.mlp if args.model == "mlp" else models.lenet, amp=args.worker == "weir-amp",
                                    channels_last=True if args.worker == "weir-nhwc" else None)
    random = np.random.default_rng(1234)
    batches = [(random.random((BATCH, 1, 28, 28), dtype=np.float32), random.integers(0, 10, BATCH, dtype=np.int32))
               for _ in range(POOL_BATCHES)]
    step_s, host_s, loss = timed_blocks(lambda i: float(train_job(*batches[i % POOL_BATCHES]).mean()), args)
    gpus = flow.current_resource()["gpu_device_num"]
    if gpus != 1 and not args.smoke_cpu:
        sys.exit(f"gpu_step: Weir ran on the CPU (gpu_device_num {gpus})")
    print(json.dumps({"step_ms": 1e3 * step_s, "host_us": 1e6 * host_s, "loss": loss}))


def torch_worker(args, graphed, host_batches=False, tf32=False, amp=False):
    sys.path.insert(0, HERE)
    try:
        import torch
        from torch import nn
    except ImportError:
        print(json.dumps({"skipped": "no torch"}))
        return
    if args.smoke_cpu and graphed:
        print(json.dumps({"skipped": "CUDA graphs need a GPU"}))
        return
    if not torch.cuda.is_available() and not args.smoke_cpu:
        print(json.dumps({"skipped": "no GPU visible to torch"}))
        return
    from pytorch_models import build_model

    torch.manual_seed(1234)
    # Like for like: Weir's cuDNN convolutions use FP32 (FMA) math, never TF32 unless asked; PyTorch's
    # default lets cuDNN use TF32 tensor cores for convolutions (matmuls already default to FP32).
    torch.backends.cudnn.allow_tf32 = args.torch_tf32 or tf32
    torch.backends.cuda.matmul.allow_tf32 = tf32
    device = torch.device("cpu" if args.smoke_cpu else "cuda")
    model = build_model(args.model, nn).to(device)
    loss_fn = nn.CrossEntropyLoss(reduction="mean")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.0)
    batches = [(torch.rand(BATCH, 1, 28, 28, device=device), torch.randint(0, 10, (BATCH,), device=device))
               for _ in range(POOL_BATCHES)]

    def forward_loss(images, labels):
        # Mixed precision as a PyTorch user writes it; the autocast cache stays off, as CUDA graphs need.
        if amp:
            # (f16 on the GPU; the CPU's autocast, which --smoke-cpu runs, takes bfloat16 only)
            half = torch.float16 if device.type == "cuda" else torch.bfloat16
            with torch.autocast(device.type, dtype=half, cache_enabled=False):
                return loss_fn(model(images), labels)
        return loss_fn(model(images), labels)

    def eager(i):
        images, labels = batches[i % POOL_BATCHES]
        optimizer.zero_grad(set_to_none=True)
        loss = forward_loss(images, labels)
        loss.backward()
        optimizer.step()
        return loss.item()

    step = eager
    if graphed:
        # Whole-step capture (PyTorch's CUDA graphs docs): warm up on a side stream, capture one step
        # on static inputs, replay it after copying each batch in.
        static_images, static_labels = (t.clone() for t in batches[0])
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                optimizer.zero_grad(set_to_none=True)
                forward_loss(static_images, static_labels).backward()
                optimizer.step()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        optimizer.zero_grad(set_to_none=True)
        with torch.cuda.graph(graph):
            static_loss = forward_loss(static_images, static_labels)
            static_loss.backward()
            optimizer.step()

        if host_batches:
            # The batches in pinned host memory, copied in on the graph's stream before each replay.
            batches = [(images.cpu().pin_memory(), labels.cpu().pin_memory()) for images, labels in batches]

        def step(i):
            images, labels = batches[i % POOL_BATCHES]
            static_images.copy_(images, non_blocking=True)
            static_labels.copy_(labels, non_blocking=True)
            graph.replay()
            return float(static_loss.item())

    step_s, host_s, loss = timed_blocks(step, args)
    print(json.dumps({"step_ms": 1e3 * step_s, "host_us": 1e6 * host_s, "loss": loss, "torch": torch.__version__,
                      "cudnn": None if args.smoke_cpu else torch.backends.cudnn.version(),
                      "gpu": None if args.smoke_cpu else torch.cuda.get_device_name()}))


def last_json_line(argv, args, env=None):
    """Runs argv (bounded by --worker-timeout); its last stdout line that is a JSON object, or {"error": ...}."""
    import subprocess

    try:
        result = subprocess.run(argv, capture_output=True, text=True, timeout=args.worker_timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"ran past {args.worker_timeout} s"}
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    if result.returncode != 0 or not lines:
        return {"error": (result.stdout + result.stderr)[-1500:]}
    return json.loads(lines[-1])


# bench/train_step's flags for each Weir row; the rows only its C++ API runs.
CPP_FLAGS = {"weir-no-graphs": ["--no-stream-graphs"], "weir-copy-streams": ["--copy-streams"],
             "weir-actor-threads": ["--no-lend"], "weir-no-commit": ["--no-commit"], "weir-nhwc": ["--nhwc"],
             "weir-tf32": ["--tf32"], "weir-amp": ["--amp"]}
CPP_ONLY_KINDS = ("weir-actor-threads", "weir-caller-waits", "weir-no-commit")


def run_cpp_worker(kind, model, args):
    """Weir's row from bench/train_step.cpp: sync train calls on one GPU, median ms and host CPU us per step."""
    argv = [args.weir_binary, "--model", model, "--steps", str(args.steps), "--repeats", str(args.repeats),
            "--warmup", str(args.warmup), "--no-async"]
    if not args.smoke_cpu:
        argv.append("--gpu")
    argv += CPP_FLAGS.get(kind, [])
    env = dict(os.environ, WEIR_CALLER_COMPLETION_US="2000") if kind == "weir-caller-waits" else None
    row = last_json_line(argv, args, env)
    if "error" in row:
        return row
    return {"step_ms": row["train_ms_per_step"], "host_us": row["host_us_per_step"], "loss": row["final_loss"],
            "api": "C++"}


def run_worker(kind, model, args):
    if kind.startswith("weir") and args.weir_binary:
        return run_cpp_worker(kind, model, args)
    if kind in CPP_ONLY_KINDS:
        return {"error": f"{kind} runs through the C++ API only (--weir-binary)"}
    python = sys.executable if kind.startswith("weir") else args.torch_python
    argv = [python, os.path.abspath(__file__), "--worker", kind, "--model", model, "--steps", str(args.steps),
            "--repeats", str(args.repeats), "--warmup", str(args.warmup)] + (["--smoke-cpu"] if args.smoke_cpu else [])
    argv += ["--torch-tf32"] if args.torch_tf32 else []
    # PyTorch finds its own cuDNN (its wheel's, which it was built against), not the one a GPU check put on
    # the library path for Weir.
    env = None if kind.startswith("weir") else {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    return last_json_line(argv, args, env)


def main():
    args = parse_args()
    if args.worker and args.worker.startswith("weir"):
        return weir_worker(args)
    if args.worker:
        return torch_worker(args, graphed=args.worker.startswith("torch-graph"),
                            host_batches=args.worker == "torch-graph-host-batch",
                            tf32=args.worker.endswith("-tf32"), amp=args.worker.endswith("-amp"))
    summary = {"bench": "gpu_step", "smoke_cpu": args.smoke_cpu, "torch_tf32": args.torch_tf32, "batch": BATCH, "steps": args.steps, "repeats": args.repeats, "models": {}}
    for model in args.models.split(","):
        rows = {kind: run_worker(kind, model, args) for kind in args.kinds.split(",")}
        summary["models"][model] = rows
        print(f"{model}, batch {BATCH}: median of {args.repeats} blocks of {args.steps} steps")
        print(f"  {'':<22} {'step ms':>10} {'host us/step':>14}")
        for kind, row in rows.items():
            if "step_ms" in row:
                print(f"  {kind:<22} {row['step_ms']:>10.3f} {row['host_us']:>14.1f}")
            else:
                print(f"  {kind:<22} {row.get('skipped') or 'failed: ' + row.get('error', '')[-300:]}")
        weir, eager, graph = (rows.get(kind, {}) for kind in ("weir", "torch-eager", "torch-graph"))
        host_graph = rows.get("torch-graph-host-batch", {})
        if args.smoke_cpu:
            continue  # CPU figures: no GPU targets to compare with
        if "step_ms" in weir and "step_ms" in eager:
            summary["models"][model]["weir_over_eager"] = weir["step_ms"] / eager["step_ms"]
            print(f"  Weir / PyTorch eager step time: {weir['step_ms'] / eager['step_ms']:.2f} (target <= 0.5)")
        if "step_ms" in weir and "step_ms" in graph:
            summary["models"][model]["weir_over_graph"] = weir["step_ms"] / graph["step_ms"]
            print(f"  Weir / PyTorch CUDA graphs step time: {weir['step_ms'] / graph['step_ms']:.2f} (target <= 1)")
        if "step_ms" in weir and "step_ms" in host_graph:
            summary["models"][model]["weir_over_graph_host_batch"] = weir["step_ms"] / host_graph["step_ms"]
            print(f"  Weir / PyTorch CUDA graphs, batches from the host: {weir['step_ms'] / host_graph['step_ms']:.2f}")
        for suffix in ("tf32", "amp"):  # like for like in TF32 and in mixed precision
            ours, theirs = rows.get(f"weir-{suffix}", {}), rows.get(f"torch-graph-{suffix}", {})
            if "step_ms" in ours and "step_ms" in theirs:
                summary["models"][model][f"weir_over_graph_{suffix}"] = ours["step_ms"] / theirs["step_ms"]
                print(f"  Weir / PyTorch CUDA graphs, both {suffix.upper()}: {ours['step_ms'] / theirs['step_ms']:.2f}")
    weir_rows = [row for rows in summary["models"].values() for kind, row in rows.items()
                 if kind.startswith("weir-") or kind == "weir"]
    if weir_rows and all("skipped" in row for row in weir_rows):
        summary["skipped"] = "no GPU visible"
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
