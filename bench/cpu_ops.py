"""Single ops of the big models on the CPU, Weir against PyTorch, each side in its own process pinned to
the same cores (one by default): BERT-base's attention softmax (batch 8 x 12 heads x 128 queries, rows
of 128 keys) and its feed-forward gelu (8 x 128 tokens x 3072), f32. Weir runs each op as a one-op job
function (a sync call: the call's overhead is in its figure, measured alone as a copy, x * 1); PyTorch
calls torch.softmax / gelu on a tensor (OPENBLAS hints removed from its environment, one thread).

    /usr/bin/python3 bench/cpu_ops.py [--cpus 0] [--repeats 5] [--calls 50] [--weir-python .venv/bin/python]

(--weir-python: another build's interpreter, to compare two builds of Weir against the same peer.)

Prints each op's median milliseconds per call on both sides and the ratio (PyTorch's time over Weir's:
above 1, Weir is faster). Last line: JSON.
"""
import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import OPENBLAS_HINTS, ROOT, run_process  # noqa: E402

SHAPES = {"softmax": (8 * 12 * 128, 128), "gelu": (8 * 128, 3072), "copy": (8 * 12 * 128, 128)}


def time_calls(call, calls, repeats):
    for _ in range(3):
        call()
    blocks = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            call()
        blocks.append((time.perf_counter() - start) / calls * 1e3)
    return statistics.median(blocks)


def weir_worker(args):
    import numpy as np
    import weir as flow
    import weir.typing as tp

    results = {}
    for op, shape in SHAPES.items():
        x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)

        @flow.global_function()
        def job(a: tp.Numpy.Placeholder(shape)) -> tp.Numpy:
            return {"softmax": flow.nn.softmax, "gelu": flow.math.gelu, "copy": lambda v: v * 1.0}[op](a)

        results[op] = time_calls(lambda: job(x), args.calls, args.repeats)
        flow.clear_default_session()
    print(json.dumps(results))


def torch_worker(args):
    import torch

    torch.set_num_threads(args.threads)
    results = {}
    for op, shape in SHAPES.items():
        x = torch.randn(*shape)
        fn = {"softmax": lambda: torch.softmax(x, -1), "gelu": lambda: torch.nn.functional.gelu(x),
              "copy": lambda: x * 1.0}[op]
        with torch.no_grad():
            results[op] = time_calls(fn, args.calls, args.repeats)
    print(json.dumps(results))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpus", default="0", help="the cores both sides run on, e.g. 0 or 0-1")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--weir-python", default=os.path.join(ROOT, ".venv", "bin", "python"))
    parser.add_argument("--worker", choices=["weir", "torch"], help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker == "weir":
        return weir_worker(args)
    if args.worker == "torch":
        return torch_worker(args)
    first, _, last = args.cpus.partition("-")
    cpus = set(range(int(first), int(last or first) + 1))
    common = ["--repeats", str(args.repeats), "--calls", str(args.calls), "--threads", str(len(cpus))]
    weir = run_process([args.weir_python, __file__, "--worker", "weir", *common], cpus=cpus)
    peer = run_process(["/usr/bin/python3", __file__, "--worker", "torch", *common], cpus=cpus, unset=OPENBLAS_HINTS)
    print(f"cores {args.cpus}: median ms per call over {args.repeats} blocks of {args.calls} calls")
    print(f"  {'op':<10}{'shape':>16}{'weir':>10}{'pytorch':>10}{'pytorch / weir':>16}")
    rows = {}
    for op, shape in SHAPES.items():
        rows[op] = {"weir_ms": weir[op], "torch_ms": peer[op], "ratio": peer[op] / weir[op]}
        print(f"  {op:<10}{str(shape):>16}{weir[op]:>10.3f}{peer[op]:>10.3f}{peer[op] / weir[op]:>16.2f}")
    print(json.dumps({"bench": "cpu_ops", "cpus": args.cpus, "ops": rows}))


if __name__ == "__main__":
    main()
