#!/usr/bin/python3
"""PyTorch's side of bench/data_parallel.py (Debian's /usr/bin/python3 with python3-torch):

  --world-size 1   one process, plain training (no DDP), at the thread settings given
                   (--torch-threads, --blas-threads, --omp-wait-policy, --channels-last; see
                   bench/pytorch_models.py).
  --world-size N   torch.nn.parallel.DistributedDataParallel over N processes with the gloo backend,
                   init_method tcp://127.0.0.1:<free port>; each rank pinned to core `rank` with
                   os.sched_setaffinity, torch.set_num_threads(1), OpenBLAS 1 thread; each rank
                   trains on its 100/N slice of the global batch of 100 and DDP averages the gradients.
                   This process launches the ranks (python ddp_worker.py --rank r ...), imports no
                   torch itself, and reports rank 0's timing and every rank's.

The seeds' MLP or LeNet (as bench/pytorch_models.py: LeNet without dropout), CrossEntropyLoss (mean),
SGD lr 0.1 momentum 0, global batch 100, random data fixed per run (8 batches, cycled). Each repeat times
--steps train steps between barriers; the figure is the median over --repeats. Before timing, one
100x784x512 matmul is checked against float64 (the result's max relative error is reported), so a BLAS
running without the OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE hints is known to compute right.
Last line: one JSON object.
"""
import argparse
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import time

from pytorch_models import build_model, set_thread_environment  # the same models and settings as compare_pytorch's

BATCH = 100
POOL_BATCHES = 8


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=["mlp", "lenet"], default="mlp")
    parser.add_argument("--world-size", type=int, default=2)
    parser.add_argument("--rank", type=int, default=-1, help="internal: run as this rank")
    parser.add_argument("--port", type=int, default=0, help="internal: the rendezvous port")
    parser.add_argument("--torch-threads", type=int, default=1)
    parser.add_argument("--blas-threads", type=int, default=1)
    parser.add_argument("--omp-wait-policy", choices=["PASSIVE", "ACTIVE"], default=None)
    parser.add_argument("--channels-last", action="store_true")
    parser.add_argument("--no-pin", action="store_true", help="DDP: leave the ranks unpinned")
    parser.add_argument("--steps", type=int, default=-1, help="timed steps per repeat (default 300 MLP, 20 LeNet)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=-1)
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--timeout", type=float, default=300, help="DDP: seconds for the ranks in all")
    args = parser.parse_args()
    if args.steps < 0:
        args.steps = 300 if args.model == "mlp" else 20
    if args.warmup < 0:
        args.warmup = max(20 if args.model == "mlp" else 3, args.steps // 5)
    if min(args.steps, args.repeats, args.world_size, args.torch_threads, args.blas_threads) < 1:
        parser.error("--steps, --repeats, --world-size and the thread counts must be >= 1")
    if BATCH % args.world_size:
        parser.error(f"--world-size must divide the batch {BATCH}")
    return args


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def blas_check(torch):
    """Max relative error of a float32 100x784x512 matmul against float64."""
    generator = torch.Generator().manual_seed(7)
    a = torch.rand(100, 784, generator=generator) - 0.5
    b = torch.rand(784, 512, generator=generator) - 0.5
    exact = a.double() @ b.double()
    return float(((a @ b).double() - exact).abs().max() / exact.abs().max())


def train_process(args, rank, world_size):
    """One training process: plain (world size 1) or one DDP rank. Returns its figures."""
    ddp = world_size > 1
    if ddp and not args.no_pin:
        os.sched_setaffinity(0, {rank % os.cpu_count()})  # before torch starts its threads
    set_thread_environment(args)
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    for hint in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):  # the BLAS detects the core; blas_check checks it
        os.environ.pop(hint, None)
    import torch  # after the environment is set
    import torch.distributed as dist
    from torch import nn

    torch.set_num_threads(args.torch_threads)
    torch.manual_seed(args.seed)
    check = blas_check(torch)
    if check > 1e-5:
        sys.exit(f"ddp_worker: float32 matmul is off by {check:.2e} (relative) against float64")
    if ddp:
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{args.port}", rank=rank,
                                world_size=world_size)
    model = build_model(args.model, nn)
    memory_format = torch.channels_last if args.channels_last else torch.contiguous_format
    if args.channels_last:
        model = model.to(memory_format=memory_format)
    if ddp:
        model = nn.parallel.DistributedDataParallel(model)  # broadcasts rank 0's parameters
    loss_fn = nn.CrossEntropyLoss(reduction="mean")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.0)
    generator = torch.Generator().manual_seed(args.seed)  # the same global batches on every rank
    per_rank = BATCH // world_size
    batches = []
    for _ in range(POOL_BATCHES):
        images = torch.rand(BATCH, 1, 28, 28, generator=generator)
        labels = torch.randint(0, 10, (BATCH,), generator=generator)
        piece = slice(rank * per_rank, (rank + 1) * per_rank)
        batches.append((images[piece].contiguous(memory_format=memory_format), labels[piece].contiguous()))
    last_loss = [0.0]

    def train(steps):
        if ddp:
            dist.barrier()
        start = time.perf_counter()
        for i in range(steps):
            images, labels = batches[i % POOL_BATCHES]
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(model(images), labels)
            loss.backward()
            optimizer.step()
        if ddp:
            dist.barrier()
        seconds = time.perf_counter() - start
        last_loss[0] = loss.item()
        return seconds

    train(args.warmup)
    samples = [train(args.steps) for _ in range(args.repeats)]
    if last_loss[0] != last_loss[0]:
        sys.exit("ddp_worker: the loss is NaN")
    if ddp:
        dist.destroy_process_group()
    median = statistics.median(samples)
    return {
        "rank": rank, "torch_version": torch.__version__, "train_steps_per_s": round(args.steps / median, 2),
        "train_ms_per_step": round(1e3 * median / args.steps, 4), "samples_s": [round(s, 4) for s in samples],
        "torch_threads": torch.get_num_threads(), "affinity": sorted(os.sched_getaffinity(0)),
        "blas_check_max_rel_err": check, "final_loss": round(last_loss[0], 4),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1),
    }


def launch(args):
    """Starts the ranks as processes of this script and gathers their JSON lines."""
    port = free_port()
    argv = [sys.executable, os.path.abspath(__file__)] + [a for a in sys.argv[1:]]
    ranks = [subprocess.Popen(argv + ["--rank", str(rank), "--port", str(port)], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for rank in range(args.world_size)]
    deadline = time.monotonic() + args.timeout
    outputs, failed = [], False
    for process in ranks:
        try:
            output, _ = process.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for other in ranks:
                other.kill()
            output, _ = process.communicate()
            failed = True
        outputs.append(output)
        failed = failed or process.returncode != 0
    if failed:
        sys.exit("ddp_worker: a rank failed:\n" + "\n".join(o[-2000:] for o in outputs))
    figures = [json.loads([line for line in o.splitlines() if line.startswith("{")][-1]) for o in outputs]
    return figures


def main():
    args = parse_args()
    if args.world_size > 1:  # the DDP configuration: one thread per rank, whatever the flags say
        args.torch_threads = args.blas_threads = 1
    label = (f"pytorch {args.model}, 1 process, torch {args.torch_threads} thr + BLAS {args.blas_threads}"
             + (f" {args.omp_wait_policy}" if args.omp_wait_policy else "") + (" NHWC" if args.channels_last else ""))
    if args.rank >= 0:
        print(json.dumps(train_process(args, args.rank, args.world_size)))
        return
    if args.world_size == 1:
        ranks = [train_process(args, 0, 1)]
    else:
        label = (f"pytorch {args.model}, DDP gloo {args.world_size} processes x 1 thread"
                 + (" pinned" if not args.no_pin else "") + (" NHWC" if args.channels_last else ""))
        ranks = launch(args)
    head = ranks[0]
    print(f"{label}, global batch {BATCH}: {head['train_steps_per_s']:.1f} steps/s, "
          f"{head['train_ms_per_step']:.3f} ms/step (median of {args.repeats}); per rank: "
          + ", ".join(f"{r['train_steps_per_s']:.1f}/s on cores {r['affinity']}" for r in ranks))
    print(json.dumps({
        "bench": "data_parallel", "impl": "pytorch", "model": args.model, "world_size": args.world_size,
        "torch_version": head["torch_version"], "batch": BATCH, "steps": args.steps, "repeats": args.repeats,
        "torch_threads": args.torch_threads if args.world_size == 1 else 1,
        "blas_threads": args.blas_threads if args.world_size == 1 else 1,
        "omp_wait_policy": args.omp_wait_policy, "channels_last": args.channels_last,
        "train_steps_per_s": head["train_steps_per_s"], "train_ms_per_step": head["train_ms_per_step"],
        "rank_steps_per_s": [r["train_steps_per_s"] for r in ranks],
        "blas_check_max_rel_err": max(r["blas_check_max_rel_err"] for r in ranks),
        "final_loss": head["final_loss"], "rank_peak_rss_mb": [r["peak_rss_mb"] for r in ranks],
    }))


if __name__ == "__main__":
    main()
