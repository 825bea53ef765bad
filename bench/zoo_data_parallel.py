#!/usr/bin/python3
"""Data parallelism on the big models: ResNet-50 and BERT-base training over 2 CPU devices of one process
and over 2 processes, against 1 process and against PyTorch DDP, on this machine's cores.

    /usr/bin/python3 bench/zoo_data_parallel.py [--models resnet50,bert] [--batch 8] [--image-size 224]
        [--seq 128] [--bert-layers 12] [--steps 2] [--repeats 3] [--warmup 2] [--cpus 0-1]
        [--weir-python .venv/bin/python] [--torch-python /usr/bin/python3] [--worker-timeout 1800]

Rows, each its own process (or processes) on the same cores (--cpus, default all), global batch --batch:
- weir 1 process: the default session, every core.
- weir 2 devices: one process, flow.config.cpu_device_num(2), the mirrored view (each device trains on
  half the batch; the gradients are averaged in shared memory).
- weir 2 processes: weir-launch's environment, each process pinned to one core with one intra-op thread,
  the mirrored view, the all-reduce over the shared-memory process group.
- torch 1 process: PyTorch at every core (torch.set_num_threads).
- torch DDP 2 processes: DistributedDataParallel over gloo, each rank pinned to one core, one thread.
The models are the zoo's (examples/python/zoo/resnet50.py and bert.py, OneFlow's job-function API) and
bench/pytorch_models.py's same networks: ResNet-50 with SGD (lr 0.1, momentum 0.9) on random 224x224
images of 1000 classes; BERT-base pretraining (masked LM with 20 predictions a sequence, next sentence)
with AdamW, as bench/model_zoo.py. PyTorch runs without the workplace's OpenBLAS hints. Figures: the
median over --repeats blocks of --steps steps after --warmup, rank 0's in the 2-process rows (the
all-reduce makes every rank's step the same length). Last line: JSON.
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import benchlib  # noqa: E402  (bench/ is not a package)
from model_zoo import (BERT, PREDICTIONS, numpy_bert_batches, parse_cpus, timed_blocks,  # noqa: E402
                       weir_bert_pretraining)

ROWS = ("weir-1", "weir-2dev", "weir-2proc", "torch-1", "torch-ddp")
LABELS = {"weir-1": "weir, 1 process", "weir-2dev": "weir, 2 devices (mirrored)",
          "weir-2proc": "weir, 2 processes x 1 core", "torch-1": "pytorch, 1 process",
          "torch-ddp": "pytorch DDP, 2 processes x 1 core"}
POOL_BATCHES = 2


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="resnet50,bert")
    parser.add_argument("--rows", default=",".join(ROWS))
    parser.add_argument("--batch", type=int, default=8, help="the global batch")
    parser.add_argument("--image-size", type=int, default=224)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--bert-layers", type=int, default=BERT["layers"])
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--cpus", help="the cores every row runs on, e.g. 0-1 (default: all)")
    parser.add_argument("--weir-python", default=os.path.join(ROOT, ".venv", "bin", "python"))
    parser.add_argument("--torch-python", default="/usr/bin/python3")
    parser.add_argument("--worker-timeout", type=float, default=1800)
    parser.add_argument("--worker", choices=ROWS, help=argparse.SUPPRESS)
    parser.add_argument("--model", choices=("resnet50", "bert"), help=argparse.SUPPRESS)
    parser.add_argument("--rank", type=int, default=-1, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.batch < 2 or args.batch % 2 or min(args.steps, args.repeats, args.warmup, args.bert_layers) < 1:
        parser.error(f"--batch must be even and >= 2, --steps, --repeats, --warmup and --bert-layers >= 1; got "
                     f"{args.batch}, {args.steps}, {args.repeats}, {args.warmup}, {args.bert_layers}")
    if set(args.models.split(",")) - {"resnet50", "bert"} or set(args.rows.split(",")) - set(ROWS):
        parser.error(f"--models: some of resnet50,bert; --rows: some of {','.join(ROWS)}; got {args.models}, {args.rows}")
    args.cpu_set = parse_cpus(parser, args.cpus)
    BERT["layers"] = args.bert_layers
    return args


def batches(model, args, rank, world):
    """POOL_BATCHES global batches of random numpy data (the same in every process), each cut to this
    process's rows."""
    import numpy as np

    rows = slice(rank * args.batch // world, (rank + 1) * args.batch // world)
    if model == "bert":
        return [tuple(np.ascontiguousarray(a[rows]) for a in b) for b in numpy_bert_batches(args.batch, args.seq)][:POOL_BATCHES]
    rng = np.random.default_rng(1234)
    pool = [(rng.random((args.batch, 3, args.image_size, args.image_size), dtype=np.float32),
             rng.integers(0, 1000, args.batch, dtype=np.int32)) for _ in range(POOL_BATCHES)]
    return [(np.ascontiguousarray(images[rows]), np.ascontiguousarray(labels[rows])) for images, labels in pool]


# --- Weir ----------------------------------------------------------------------------------------------

def weir_worker(args):
    import numpy as np

    import weir as flow
    import weir.typing as tp

    sys.path.insert(0, os.path.join(ROOT, "examples", "python", "zoo"))
    from bert import BertConfig
    from resnet50 import resnet50

    world, rank = int(os.environ.get("WORLD_SIZE", "1")), int(os.environ.get("RANK", "0"))
    devices = 2 if args.worker == "weir-2dev" else 1
    mirrored = devices > 1 or world > 1
    per_device = args.batch // (devices * world)
    if devices > 1:
        flow.config.cpu_device_num(devices)
    config = flow.FunctionConfig()
    if mirrored:
        config.default_logical_view(flow.scope.mirrored_view())
    holder, result = (tp.ListNumpy.Placeholder, tp.ListNumpy) if mirrored else (tp.Numpy.Placeholder, tp.Numpy)
    ints = flow.int32

    if args.model == "resnet50":
        size = args.image_size

        @flow.global_function(type="train", function_config=config)
        def train(images: holder((per_device, 3, size, size)), labels: holder((per_device,), dtype=ints)) -> result:
            logits = resnet50(images, 1000, training=True)
            loss = flow.math.reduce_mean(flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0.9).minimize(loss)
            return loss
    else:
        bert_config = BertConfig(vocab_size=BERT["vocab_size"], hidden_size=BERT["hidden"], num_layers=BERT["layers"],
                                 num_heads=BERT["heads"], intermediate_size=BERT["intermediate"],
                                 max_position=BERT["max_position"])
        b, seq = per_device, args.seq

        @flow.global_function(type="train", function_config=config)
        def train(ids: holder((b, seq), dtype=ints), mask: holder((b, seq), dtype=ints), segments: holder((b, seq), dtype=ints),
                  positions: holder((b, PREDICTIONS), dtype=ints), label_ids: holder((b, PREDICTIONS), dtype=ints),
                  label_weights: holder((b, PREDICTIONS)), next_sentence_labels: holder((b, 1), dtype=ints)) -> result:
            return weir_bert_pretraining(flow, bert_config, ids, mask, segments, positions, label_ids, label_weights,
                                         next_sentence_labels)

    pool = batches(args.model, args, rank, world)
    if mirrored:  # a list of one piece per device of this process, cut before the clock starts
        pool = [tuple([np.ascontiguousarray(p) for p in np.split(a, devices)] for a in batch) for batch in pool]

    def step(i):
        loss = train(*pool[i % POOL_BATCHES])
        return float(np.mean(np.concatenate([np.ravel(piece) for piece in loss]) if mirrored else loss))

    _, step_s, loss = timed_blocks(step, args)
    if loss != loss:
        sys.exit(f"zoo_data_parallel: Weir's {args.model} loss is NaN")
    print(json.dumps({"step_ms": 1e3 * step_s, "loss": loss, "processes": world, "devices": devices,
                      "collectives": flow.current_resource().get("collectives") if world > 1 else None}))


# --- PyTorch -------------------------------------------------------------------------------------------

def torch_rank(args, rank, world):
    if world > 1:
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[rank % len(os.sched_getaffinity(0))]})
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    import torch
    import torch.distributed as dist
    from torch import nn

    from pytorch_models import bert_pretraining, resnet50

    torch.set_num_threads(len(os.sched_getaffinity(0)))
    torch.manual_seed(1234)
    if world > 1:
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{args.port}", rank=rank, world_size=world)
    bert = args.model == "bert"
    model = bert_pretraining(torch, nn, **BERT) if bert else resnet50(nn)
    if bert:
        decay = [p for n, p in model.named_parameters() if "norm" not in n and not n.endswith("bias")]
        rest = [p for n, p in model.named_parameters() if "norm" in n or n.endswith("bias")]
        optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": rest, "weight_decay": 0.0}],
                                      lr=1e-4, eps=1e-6, foreach=True)
    else:
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model)  # rank 0's parameters on every rank
    pool = [tuple(torch.from_numpy(a) for a in b) for b in batches(args.model, args, rank, world)]
    loss_fn = nn.CrossEntropyLoss(reduction="mean")
    model.train()

    def step(i):
        inputs = pool[i % POOL_BATCHES]
        optimizer.zero_grad(set_to_none=True)
        loss = model(*inputs) if bert else loss_fn(model(inputs[0]), inputs[1].long())
        loss.backward()
        optimizer.step()
        return loss.item()

    if world > 1:
        dist.barrier()
    _, step_s, loss = timed_blocks(step, args)
    if world > 1:
        dist.destroy_process_group()
    if loss != loss:
        sys.exit(f"zoo_data_parallel: PyTorch's {args.model} loss is NaN")
    return {"step_ms": 1e3 * step_s, "loss": loss, "processes": world, "threads": torch.get_num_threads(),
            "torch": torch.__version__}


def torch_worker(args):
    if args.rank >= 0 or args.worker == "torch-1":
        print(json.dumps(torch_rank(args, max(args.rank, 0), 2 if args.rank >= 0 else 1)))
        return
    import socket
    import subprocess

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    argv = [sys.executable, os.path.abspath(__file__), *sys.argv[1:], "--port", str(port)]
    ranks = [subprocess.Popen(argv + ["--rank", str(r)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for r in range(2)]
    outputs = [rank.communicate(timeout=args.worker_timeout)[0] for rank in ranks]
    if any(rank.returncode != 0 for rank in ranks):
        sys.exit("zoo_data_parallel: a DDP rank failed:\n" + "\n".join(o[-2000:] for o in outputs))
    sys.stdout.write(outputs[0])


# --- The driver ----------------------------------------------------------------------------------------

def run_row(row, model, args):
    argv = [args.weir_python if row.startswith("weir") else args.torch_python, os.path.abspath(__file__),
            "--worker", row, "--model", model, "--batch", str(args.batch), "--image-size", str(args.image_size),
            "--seq", str(args.seq), "--bert-layers", str(args.bert_layers), "--steps", str(args.steps),
            "--repeats", str(args.repeats), "--warmup", str(args.warmup), "--worker-timeout", str(args.worker_timeout)]
    unset = () if row.startswith("weir") else benchlib.OPENBLAS_HINTS
    try:
        return benchlib.run_process(argv, timeout=args.worker_timeout, unset=unset, cpus=args.cpu_set)
    except benchlib.ProcessFailed as error:
        return {"error": str(error)[-1500:]}


def main():
    args = parse_args()
    if args.worker == "weir-2proc" and "RANK" not in os.environ:
        return benchlib.run_ranks([sys.executable, *sys.argv], 2, "zoo_data_parallel", timeout=args.worker_timeout)
    if args.worker:
        return weir_worker(args) if args.worker.startswith("weir") else torch_worker(args)
    cores = len(args.cpu_set) if args.cpu_set else len(os.sched_getaffinity(0))
    summary = {"bench": "zoo_data_parallel", "batch": args.batch, "image_size": args.image_size, "seq": args.seq,
               "bert_layers": args.bert_layers, "steps": args.steps, "repeats": args.repeats, "cores": cores, "models": {}}
    for model in args.models.split(","):
        what = "images" if model == "resnet50" else "sequences"
        print(f"{model}, global batch {args.batch}, {cores} cores: median of {args.repeats} blocks of {args.steps} steps "
              f"after {args.warmup}", flush=True)
        rows = summary["models"][model] = {}
        for row in args.rows.split(","):
            figures = rows[row] = run_row(row, model, args)
            if "step_ms" not in figures:
                print(f"  {LABELS[row]:<36} failed: {figures['error'][-800:]}", flush=True)
                continue
            figures["train_per_s"] = 1e3 * args.batch / figures["step_ms"]
            print(f"  {LABELS[row]:<36} {figures['train_per_s']:8.2f} {what}/s  {figures['step_ms']:9.1f} ms/step  "
                  f"loss {figures['loss']:.3f}", flush=True)
        rate = {row: rows[row].get("train_per_s") for row in rows}
        for ours, theirs in (("weir-2proc", "torch-ddp"), ("weir-2proc", "weir-1"), ("weir-2dev", "weir-1"),
                             ("weir-1", "torch-1"), ("torch-ddp", "torch-1")):
            if rate.get(ours) and rate.get(theirs):
                key = f"{ours}_vs_{theirs}".replace("-", "_")
                rows[key] = rate[ours] / rate[theirs]
                print(f"  {LABELS[ours]} / {LABELS[theirs]}: {rows[key]:.2f}x")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
