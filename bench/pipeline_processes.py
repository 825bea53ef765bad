#!/usr/bin/python3
"""Pipeline stages in two processes: Weir's calls in flight together against one at a time, beside
PyTorch's hand-written two-stage pipeline over gloo send/recv.

The model is an MLP, 512 -> 2048 -> 2048 | 2048 -> 2048 -> 10, at batch 256, run for inference (a predict
job; the per-example cross entropy is the result). Stage 1, the first two layers, runs in process 0.
Stage 2, the rest, runs in process 1. Each process is pinned to a core of its own with one intra-op
thread (benchlib.run_ranks). Each configuration runs in its own pair of processes, alternated over
--reps rounds:
  weir sync           one call at a time (each call returns its result before the next starts)
  weir in flight      async calls (tp.Callback): the next call's stage 1 runs while this call's stage 2
                      runs; each call's transfers still follow the previous call's in both processes
  pytorch sync        rank 0: stage 1, send, receive the result; rank 1: receive, stage 2, send back
  pytorch overlapped  rank 0 sends with isend and goes on with the next batch (up to 2 in flight); rank 1
                      posts the next irecv before it computes
Prints the medians, how close each is to the hardware limit (2 x the 1-core OpenBLAS sgemm peak), the
overlap (in flight / sync) of each side and Weir in flight / PyTorch overlapped.
Last line: one JSON object. A training pipeline gains nothing from calls in flight (each call's forward
needs the previous call's updates); this measures what the runtime overlaps.

  /usr/bin/python3 bench/pipeline_processes.py            # about 1 minute on a quiet machine
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import (ROOT, SGEMM_SIZE, ProcessFailed, QuietRunner, median_of, one_core, peak_of,  # noqa: E402
                      run_ranks, sgemm_argv)

BATCH, FEATURES, HIDDEN, CLASSES = 256, 512, 2048, 10
WARMUP = 3
FLOP_PER_CALL = 2 * BATCH * (FEATURES * HIDDEN + 3 * HIDDEN * HIDDEN + HIDDEN * CLASSES)  # the matmuls


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3, help="pairs of processes per configuration")
    parser.add_argument("--steps", type=int, default=30, help="timed calls per run")
    parser.add_argument("--python", default="/usr/bin/python3", help="the Python with torch")
    parser.add_argument("--weir-python", default=os.path.join(ROOT, ".venv", "bin", "python"),
                        help="the Python with weir (make venv)")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per run")
    parser.add_argument("--max-foreign", type=float, default=0.15,
                        help="re-run when other processes used more cores than this meanwhile")
    parser.add_argument("--spawn", type=int, default=0, help=argparse.SUPPRESS)  # internal: benchlib.run_ranks
    parser.add_argument("--worker", choices=["weir", "torch"], help=argparse.SUPPRESS)
    parser.add_argument("--mode", choices=["sync", "overlap"], help=argparse.SUPPRESS)
    parser.add_argument("command", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if min(args.reps, args.steps) < 1:
        parser.error("--reps and --steps must be >= 1")
    return args


def data():
    import numpy as np

    rng = np.random.default_rng(0)
    return (rng.standard_normal((BATCH, FEATURES)).astype(np.float32),
            rng.integers(0, CLASSES, BATCH).astype(np.int32))


def report(rank, steps, seconds):
    if rank == 0:
        print(json.dumps({"steps_per_s": steps / seconds}), flush=True)


def weir_worker(mode, steps):
    import weir as flow
    import weir.typing as tp

    Result = tp.Callback[tp.Numpy] if mode == "overlap" else tp.Numpy

    @flow.global_function(type="predict")
    def infer(x: tp.Numpy.Placeholder((BATCH, FEATURES)),
              y: tp.Numpy.Placeholder((BATCH,), dtype=flow.int32)) -> Result:
        with flow.scope.placement("cpu", "0:0"):
            h = flow.layers.dense(x, HIDDEN, activation=flow.nn.relu, name="h1")
            h = flow.layers.dense(h, HIDDEN, activation=flow.nn.relu, name="h2")
        with flow.scope.placement("cpu", "1:0"):
            h = flow.layers.dense(h, HIDDEN, activation=flow.nn.relu, name="h3")
            h = flow.layers.dense(h, HIDDEN, activation=flow.nn.relu, name="h4")
            logits = flow.layers.dense(h, CLASSES, name="out")
            return flow.nn.sparse_softmax_cross_entropy_with_logits(y, logits)

    x, y = data()
    results = []

    def call():
        result = infer(x, y)
        if mode == "overlap":
            result(results.append)
        else:
            results.append(result)

    for _ in range(WARMUP):
        call()
    flow.sync_default_session()
    start = time.perf_counter()
    for _ in range(steps):
        call()
    flow.sync_default_session()
    seconds = time.perf_counter() - start
    assert len(results) == WARMUP + steps and all(r.shape == (BATCH,) for r in results)
    report(int(os.environ["RANK"]), steps, seconds)


def torch_worker(mode, steps):
    import collections

    import torch
    import torch.distributed as dist
    import torch.nn.functional as F

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(rank)
    relu = torch.nn.ReLU()
    if rank == 0:
        stage = torch.nn.Sequential(torch.nn.Linear(FEATURES, HIDDEN), relu, torch.nn.Linear(HIDDEN, HIDDEN), relu)
    else:
        stage = torch.nn.Sequential(torch.nn.Linear(HIDDEN, HIDDEN), relu, torch.nn.Linear(HIDDEN, HIDDEN), relu,
                                    torch.nn.Linear(HIDDEN, CLASSES))
    x, y = (torch.from_numpy(a) for a in data())
    y = y.long()

    def run(count):
        with torch.no_grad():
            if rank == 0:
                pending = collections.deque()
                for _ in range(count):
                    h = stage(x)
                    loss = torch.empty(BATCH)
                    if mode == "sync":
                        dist.send(h, 1)
                        dist.recv(loss, 1)
                        continue
                    pending.append((dist.isend(h, 1), dist.irecv(loss, 1), h, loss))
                    while len(pending) > 2:  # at most 2 batches in flight, as Weir's Python async calls
                        for work in pending.popleft()[:2]:
                            work.wait()
                for entry in pending:
                    for work in entry[:2]:
                        work.wait()
            else:
                buffers = [torch.empty(BATCH, HIDDEN) for _ in range(2)]
                receive = None if mode == "sync" else dist.irecv(buffers[0], 0)
                sent = None
                for i in range(count):
                    h = buffers[i % 2]
                    if mode == "sync":
                        dist.recv(h, 0)
                    else:
                        receive.wait()
                        if i + 1 < count:
                            receive = dist.irecv(buffers[(i + 1) % 2], 0)
                    loss = F.cross_entropy(stage(h), y, reduction="none")
                    if mode == "sync":
                        dist.send(loss, 0)
                    else:
                        if sent is not None:
                            sent.wait()
                        sent = dist.isend(loss, 0)
                if sent is not None:
                    sent.wait()

    run(WARMUP)
    dist.barrier()
    start = time.perf_counter()
    run(steps)
    seconds = time.perf_counter() - start
    dist.barrier()
    report(rank, steps, seconds)
    dist.destroy_process_group()


def main():
    args = parse_args()
    if args.spawn:
        run_ranks(args.command, args.spawn, "pipeline_processes")
        return
    if args.worker:
        (weir_worker if args.worker == "weir" else torch_worker)(args.mode, args.steps)
        return
    this = os.path.abspath(__file__)
    configs = []
    for worker, python in (("weir", args.weir_python), ("torch", args.python)):
        for mode in ("sync", "overlap"):
            configs.append((f"{worker}/{mode}", [sys.executable, this, "--spawn", "2", python, this, "--worker", worker,
                                                 "--mode", mode, "--steps", str(args.steps)]))
    print(f"a 2-stage inference pipeline over 2 processes, 1 core each, batch {BATCH}: {len(configs)} configurations x "
          f"{args.reps} rounds, {args.steps} timed calls each", flush=True)
    runner = QuietRunner(args.max_foreign, retries=1, quiet_budget=120, timeout=args.timeout)
    samples = {key: [] for key, _ in configs}
    hints = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")  # slow OpenBLAS (and so PyTorch) on newer CPUs
    started = time.monotonic()
    for rep in range(args.reps):
        for key, argv in configs[rep % len(configs):] + configs[:rep % len(configs)]:
            try:
                figures = runner.run(argv, unset=hints if key.startswith("torch") else ())
            except ProcessFailed as error:
                sys.exit(f"pipeline_processes: {error}")
            samples[key].append(figures)
            print(f"  round {rep + 1}/{args.reps}  {key:<14} {figures['steps_per_s']:7.2f} calls/s  "
                  f"foreign {figures.get('foreign_cores', 0):.2f}", flush=True)
    try:
        sgemm = [runner.run(sgemm_argv(args.python, 1), unset=hints, cpus=one_core()) for _ in range(2)]
    except ProcessFailed as error:
        sys.exit(f"pipeline_processes: {error}")
    limit = 2 * peak_of(sgemm)  # GFLOP/s of the two cores
    result = {key.replace("/", "_") + "_calls_per_s": median_of(samples[key], "steps_per_s") for key, _ in configs}
    result["limit_gflops"] = limit
    result["weir_overlap"] = result["weir_overlap_calls_per_s"] / result["weir_sync_calls_per_s"]
    result["torch_overlap"] = result["torch_overlap_calls_per_s"] / result["torch_sync_calls_per_s"]
    result["weir_vs_torch_overlapped"] = result["weir_overlap_calls_per_s"] / result["torch_overlap_calls_per_s"]
    print(f"\nhardware limit: 2 cores x OpenBLAS sgemm {SGEMM_SIZE}^3 on 1 core = {limit:.1f} GFLOP/s")
    print(f"{'configuration':<16} {'calls/s':>8} {'GFLOP/s':>8} {'% limit':>8}")
    for key, _ in configs:
        rate = result[key.replace('/', '_') + '_calls_per_s']
        gflops = rate * FLOP_PER_CALL / 1e9
        result[key.replace('/', '_') + '_limit_share'] = gflops / limit
        print(f"{key:<16} {rate:8.2f} {gflops:8.1f} {100 * gflops / limit:8.1f}")
    print(f"calls in flight / one at a time: Weir {result['weir_overlap']:.2f}x, PyTorch {result['torch_overlap']:.2f}x; "
          f"Weir in flight / PyTorch overlapped {result['weir_vs_torch_overlapped']:.2f}x")
    note = runner.noise_note()
    if note:
        print(note)
    result.update({"reps": args.reps, "steps": args.steps, "elapsed_s": round(time.monotonic() - started, 1)})
    print(json.dumps({key: round(value, 4) if isinstance(value, float) else value for key, value in result.items()}))


if __name__ == "__main__":
    main()
