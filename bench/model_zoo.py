#!/usr/bin/python3
"""ResNet-50 training throughput: Weir against PyTorch eager and torch.compile, on the CPU or one GPU.

    /usr/bin/python3 bench/model_zoo.py [--device cpu|gpu] [--batch B] [--image-size S]
        [--steps N] [--repeats R] [--warmup W] [--kinds K,...] [--weir-binary build/bench/train_step]
        [--torch-python PYTHON] [--compile-mode default|reduce-overhead|max-autotune|...]

Both sides train the same network (torchvision's ResNet-50 v1.5: bench_models.hpp's Resnet50Logits
through Weir's C++ API, bench/pytorch_models.py's resnet50 for PyTorch) with SGD lr 0.1 momentum 0.9
and the softmax cross entropy over 1000 classes, on random images. Each step takes its batch from
host memory (Weir: a sync call on host tensors; PyTorch: a copy from pinned memory, non-blocking, as
a DataLoader with pin_memory feeds it) and returns its loss to the host. Per row, over --repeats
blocks of --steps steps after --warmup: the median images/s and step time, and the FLOP rate that
makes (3x the forward pass's multiply-adds, 2 FLOP each).

Rows (--kinds): weir, torch-eager, torch-compile (torch.compile(model, mode=--compile-mode); its
compilation happens in the warm-up, outside the timed blocks); on a GPU also weir-tf32,
torch-eager-tf32, torch-compile-tf32 (f32 products on TF32 tensor cores on both sides) and weir-amp,
torch-eager-amp, torch-compile-amp (f16 mixed precision: Weir's JobConfig::mixed_precision, PyTorch's
torch.autocast; neither scales the loss). Without a suffix, both sides compute in strict FP32.

On the CPU each side runs pinned to the same cores (--cpus, default all), PyTorch with the
workplace's OpenBLAS hints removed (they slow it), and the measured sgemm peak says how close each side
comes to the machine's limit. Each row is its own process, bounded by --worker-timeout. Last line: JSON.
"""
import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import benchlib  # noqa: E402  (bench/ is not a package)

KINDS = ("weir", "weir-tf32", "weir-amp", "torch-eager", "torch-eager-tf32", "torch-eager-amp",
         "torch-compile", "torch-compile-tf32", "torch-compile-amp")
DEFAULTS = {"cpu": {"batch": 8, "steps": 3, "repeats": 3, "warmup": 2, "kinds": "weir,torch-eager,torch-compile"},
            "gpu": {"batch": 64, "steps": 20, "repeats": 3, "warmup": 5,
                    "kinds": "weir,torch-eager,torch-compile,weir-tf32,torch-eager-tf32,torch-compile-tf32,"
                             "weir-amp,torch-eager-amp,torch-compile-amp"}}
POOL_BATCHES = 4  # distinct random batches, cycled


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    parser.add_argument("--batch", type=int)
    parser.add_argument("--image-size", type=int, default=224)
    parser.add_argument("--steps", type=int)
    parser.add_argument("--repeats", type=int)
    parser.add_argument("--warmup", type=int)
    parser.add_argument("--kinds", help="rows to run, of " + ",".join(KINDS))
    parser.add_argument("--weir-binary", default=os.path.join(os.path.dirname(HERE), "build", "bench", "train_step"))
    parser.add_argument("--torch-python", default="/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable)
    parser.add_argument("--compile-mode", default="default", help="torch.compile's mode")
    parser.add_argument("--cpus", help="CPU only: the cores both sides run on, e.g. 0 or 0-1 (default: all)")
    parser.add_argument("--worker-timeout", type=float, default=900, help="seconds each row's process may run")
    parser.add_argument("--worker", choices=[kind for kind in KINDS if kind.startswith("torch")], help=argparse.SUPPRESS)
    args = parser.parse_args()
    for name, value in DEFAULTS[args.device].items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    if args.batch < 1 or args.steps < 1 or args.repeats < 1 or args.warmup < 1 or args.image_size < 32:
        parser.error(f"--batch, --steps, --repeats, --warmup must be >= 1 and --image-size >= 32; got {args.batch}, "
                     f"{args.steps}, {args.repeats}, {args.warmup}, {args.image_size}")
    kinds = args.kinds.split(",")
    unknown = set(kinds) - set(KINDS)
    if unknown:
        parser.error(f"--kinds: expected some of {','.join(KINDS)}, got {','.join(sorted(unknown))}")
    if args.device == "cpu" and any(kind.endswith(("-tf32", "-amp")) for kind in kinds):
        parser.error(f"--kinds: the -tf32 and -amp rows need --device gpu, got {args.kinds}")
    args.cpu_set = parse_cpus(parser, args.cpus)
    return args


def parse_cpus(parser, text):
    if text is None:
        return None
    cores = set()
    for part in text.split(","):
        first, _, last = part.partition("-")
        if not first.isdigit() or (last and not last.isdigit()):
            parser.error(f"--cpus: expected cores like 0 or 0-1 or 0,2, got {text}")
        cores.update(range(int(first), int(last or first) + 1))
    return cores


def resnet50_forward_macs(size, classes=1000):
    """Multiply-adds of one image's forward pass (convolutions and the classifier; the batch norms,
    relus and pools are memory-bound and not counted)."""
    def out(side, kernel, stride):
        return (side + 2 * (kernel // 2) - kernel) // stride + 1

    side = out(size, 7, 2)
    macs = side * side * 64 * 3 * 7 * 7
    side = out(side, 3, 2)  # the max pool
    channels = 64
    for stage, (blocks, width) in enumerate(((3, 64), (4, 128), (6, 256), (3, 512))):
        for block in range(blocks):
            stride = 2 if block == 0 and stage > 0 else 1
            inner = out(side, 3, stride)
            macs += side * side * channels * width  # 1x1
            macs += inner * inner * width * width * 9  # 3x3, strided
            macs += inner * inner * width * 4 * width  # 1x1
            if stride != 1 or channels != 4 * width:
                macs += inner * inner * channels * 4 * width  # the projection
            side, channels = inner, 4 * width
    return macs + channels * classes


# --- The PyTorch worker ------------------------------------------------------------------------------

def torch_worker(args):
    try:
        import torch
        from torch import nn
    except ImportError:
        print(json.dumps({"skipped": "no torch"}))
        return
    if args.device == "gpu" and not torch.cuda.is_available():
        print(json.dumps({"skipped": "no GPU visible to torch"}))
        return
    from pytorch_models import resnet50

    kind = args.worker
    tf32, amp = kind.endswith("-tf32"), kind.endswith("-amp")
    torch.manual_seed(1234)
    if args.device == "cpu":
        torch.set_num_threads(len(os.sched_getaffinity(0)))  # every core it is pinned to, as Weir uses
    torch.backends.cudnn.allow_tf32 = tf32  # strict FP32 unless the row says otherwise, as Weir
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.benchmark = True  # the fastest algorithm per shape, as Weir times its own
    device = torch.device("cuda" if args.device == "gpu" else "cpu")
    model = resnet50(nn).to(device)
    if kind.startswith("torch-compile"):
        if not hasattr(torch, "compile"):
            print(json.dumps({"skipped": f"torch {torch.__version__} has no torch.compile"}))
            return
        model = torch.compile(model, mode=None if args.compile_mode == "default" else args.compile_mode)
    loss_fn = nn.CrossEntropyLoss(reduction="mean")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    pin = device.type == "cuda"
    batches = [(torch.rand(args.batch, 3, args.image_size, args.image_size).pin_memory() if pin else
                torch.rand(args.batch, 3, args.image_size, args.image_size),
                torch.randint(0, 1000, (args.batch,), dtype=torch.int64)) for _ in range(POOL_BATCHES)]

    def step(i):
        images, labels = batches[i % POOL_BATCHES]
        images, labels = images.to(device, non_blocking=True), labels.to(device, non_blocking=True)
        optimizer.zero_grad(set_to_none=True)
        if amp:
            with torch.autocast(device.type, dtype=torch.float16):
                loss = loss_fn(model(images), labels)
        else:
            loss = loss_fn(model(images), labels)
        loss.backward()
        optimizer.step()
        return loss.item()

    start = time.perf_counter()
    for i in range(args.warmup):
        step(i)
    warmup_s = time.perf_counter() - start
    blocks = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        for i in range(args.steps):
            loss = step(i)
        blocks.append((time.perf_counter() - start) / args.steps)
    if loss != loss:
        sys.exit("model_zoo: PyTorch's loss is NaN")
    print(json.dumps({"step_ms": 1e3 * statistics.median(blocks), "warmup_s": warmup_s, "loss": loss,
                      "torch": torch.__version__, "threads": torch.get_num_threads(),
                      "cudnn": torch.backends.cudnn.version() if device.type == "cuda" else None}))


# --- The driver --------------------------------------------------------------------------------------

def weir_argv(kind, args):
    argv = [args.weir_binary, "--model", "resnet50", "--batch", str(args.batch), "--image-size", str(args.image_size),
            "--steps", str(args.steps), "--repeats", str(args.repeats), "--warmup", str(args.warmup),
            "--no-async", "--no-infer"]
    if args.device == "gpu":
        argv += ["--gpu"] + {"weir-tf32": ["--tf32"], "weir-amp": ["--amp"]}.get(kind, [])
    return argv


def run_row(kind, args):
    if kind.startswith("weir"):
        argv, unset = weir_argv(kind, args), ()
    else:
        argv = [args.torch_python, os.path.abspath(__file__), "--worker", kind, "--device", args.device,
                "--batch", str(args.batch), "--image-size", str(args.image_size), "--steps", str(args.steps),
                "--repeats", str(args.repeats), "--warmup", str(args.warmup), "--compile-mode", args.compile_mode]
        # PyTorch finds its own cuDNN (its wheel's, which it was built against), not the one a GPU check put
        # on the library path for Weir.
        unset = benchlib.OPENBLAS_HINTS + ("LD_LIBRARY_PATH",)
    try:
        row = benchlib.run_process(argv, timeout=args.worker_timeout, unset=unset, cpus=args.cpu_set)
    except benchlib.ProcessFailed as error:
        return {"error": str(error)[-1500:]}
    if kind.startswith("weir") and "train_ms_per_step" in row:
        row["step_ms"], row["loss"] = row["train_ms_per_step"], row["final_loss"]
    return row


def sgemm_peak(args):
    """GFLOP/s of OpenBLAS's sgemm on the cores the rows run on (CPU only), or None."""
    threads = len(args.cpu_set) if args.cpu_set else os.cpu_count()
    try:
        return benchlib.run_process(benchlib.sgemm_argv(args.torch_python, threads), cpus=args.cpu_set,
                                    unset=benchlib.OPENBLAS_HINTS)["gflops_median"]
    except benchlib.ProcessFailed as error:
        print(f"  (no sgemm peak: {str(error)[-300:]})")
        return None


def main():
    args = parse_args()
    if args.worker:
        return torch_worker(args)
    train_flop = 3 * 2 * resnet50_forward_macs(args.image_size)  # forward, and backward's two products
    print(f"resnet50 on the {args.device}, batch {args.batch} of {args.image_size}x{args.image_size}: median of "
          f"{args.repeats} blocks of {args.steps} steps after {args.warmup}; {train_flop / 1e9:.1f} GFLOP per image "
          f"trained; torch.compile mode {args.compile_mode}")
    peak = sgemm_peak(args) if args.device == "cpu" else None
    if peak:
        print(f"  sgemm peak on these cores: {peak:.1f} GFLOP/s")
    summary = {"bench": "model_zoo", "model": "resnet50", "device": args.device, "batch": args.batch,
               "image_size": args.image_size, "steps": args.steps, "repeats": args.repeats,
               "compile_mode": args.compile_mode, "sgemm_gflops": peak, "rows": {}}
    print(f"  {'':<20} {'images/s':>10} {'step ms':>10} {'GFLOP/s':>10}{'  of peak' if peak else ''}")
    for kind in args.kinds.split(","):
        row = run_row(kind, args)
        summary["rows"][kind] = row
        if "step_ms" not in row:
            print(f"  {kind:<20} {row.get('skipped') or 'failed: ' + row.get('error', '')[-600:]}")
            continue
        row["images_per_s"] = 1e3 * args.batch / row["step_ms"]
        row["gflops"] = row["images_per_s"] * train_flop / 1e9
        share = f"  {row['gflops'] / peak:8.0%}" if peak else ""
        print(f"  {kind:<20} {row['images_per_s']:>10.1f} {row['step_ms']:>10.2f} {row['gflops']:>10.0f}{share}",
              flush=True)
    rows = summary["rows"]
    for suffix in ("", "-tf32", "-amp"):
        ours = rows.get(f"weir{suffix}", {})
        for peer in ("torch-eager", "torch-compile"):
            theirs = rows.get(peer + suffix, {})
            if "step_ms" in ours and "step_ms" in theirs:
                ratio = theirs["step_ms"] / ours["step_ms"]
                summary[f"weir_speedup_over_{peer}{suffix}"] = ratio
                print(f"  Weir{suffix} images/s over {peer}{suffix}: {ratio:.2f}x")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
