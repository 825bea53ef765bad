#!/usr/bin/python3
"""ResNet-50 and BERT-base training and inference: Weir against PyTorch eager and torch.compile, on the
CPU or one GPU.

    /usr/bin/python3 bench/model_zoo.py [--device cpu|gpu] [--models resnet50,bert] [--batch B]
        [--image-size S] [--seq L] [--steps N] [--repeats R] [--warmup W] [--kinds K,...]
        [--weir-binary build/bench/train_step] [--weir-python .venv/bin/python] [--torch-python PYTHON]
        [--compile-mode default|reduce-overhead|max-autotune|...] [--cpus 0-1]

Both sides train the same networks on random data:
- resnet50: torchvision's ResNet-50 v1.5 (bench_models.hpp's Resnet50Logits through Weir's C++ API,
  bench/train_step; bench/pytorch_models.py's resnet50 for PyTorch), 224x224 images, 1000 classes, SGD
  lr 0.1 momentum 0.9. Inference: the logits' argmax.
- bert: BERT-base pretraining (examples/python/zoo/bert.py through Weir's Python API, or the same
  network in bench_models.hpp through the C++ API, --weir-bert-api; bench/pytorch_models.py's
  bert_pretraining), 12 layers of 768, sequences of 128 with 20 masked-LM
  predictions and next-sentence prediction, dropout 0.1, AdamW (lr 1e-4, weight decay 0.01 but on
  biases and layer norms). Inference: the pooled output of the encoder.
Each train step takes its batch from host memory (Weir: a sync call on host tensors; PyTorch on a GPU:
a copy from pinned memory, non-blocking, as a DataLoader with pin_memory feeds it) and returns its loss
to the host; each inference call returns its result to the host. Per row, over --repeats blocks of
--steps calls after --warmup: the median examples/s of training and of inference, the train step's time,
and the FLOP rate training makes (3x the forward pass's multiply-adds, 2 FLOP each).

Rows (--kinds): weir, torch-eager, torch-compile (torch.compile(model, mode=--compile-mode); its
compilation happens in the warm-up, outside the timed blocks); weir-amp, torch-eager-amp,
torch-compile-amp (mixed precision, f16 on a GPU and bf16 on a CPU with native bf16: Weir's mixed
precision, PyTorch's torch.autocast; neither scales the loss); on a GPU also weir-tf32,
torch-eager-tf32, torch-compile-tf32 (f32 products on TF32 tensor cores on both sides). Without a
suffix, both sides compute in strict FP32. On a GPU
machine that has only the C++ bundle, Weir's BERT rows come from train_step.

On the CPU each side runs on the same cores (--cpus pins both; default all), PyTorch with the
workplace's OpenBLAS hints removed (they slow it), and the measured sgemm peak says how close each side
comes to the machine's limit. Each row is its own process, bounded by --worker-timeout. Last line: JSON.
"""
import argparse
import contextlib
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import benchlib  # noqa: E402  (bench/ is not a package)

KINDS = ("weir", "weir-tf32", "weir-amp", "torch-eager", "torch-eager-tf32", "torch-eager-amp",
         "torch-compile", "torch-compile-tf32", "torch-compile-amp")
MODELS = ("resnet50", "bert")
DEFAULTS = {"cpu": {"steps": 3, "repeats": 3, "warmup": 2, "kinds": "weir,torch-eager,torch-compile"},
            "gpu": {"steps": 20, "repeats": 3, "warmup": 5,
                    "kinds": "weir,torch-eager,torch-compile,weir-tf32,torch-eager-tf32,torch-compile-tf32,"
                             "weir-amp,torch-eager-amp,torch-compile-amp"}}
BATCH = {("resnet50", "cpu"): 8, ("resnet50", "gpu"): 64, ("bert", "cpu"): 8, ("bert", "gpu"): 32}
BERT = {"vocab_size": 30522, "hidden": 768, "layers": 12, "heads": 12, "intermediate": 3072, "max_position": 512}
PREDICTIONS = 20  # masked-LM predictions per sequence, as BERT's pretraining data has
POOL_BATCHES = 4  # distinct random batches, cycled
EXAMPLES = {"resnet50": "images", "bert": "sequences"}


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--batch", type=int, help="default: resnet50 8 (CPU) / 64 (GPU), bert 8 / 32")
    parser.add_argument("--image-size", type=int, default=224)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--bert-layers", type=int, default=BERT["layers"], help="BERT's encoder layers (BERT-base: 12)")
    parser.add_argument("--steps", type=int)
    parser.add_argument("--repeats", type=int)
    parser.add_argument("--warmup", type=int)
    parser.add_argument("--kinds", help="rows to run, of " + ",".join(KINDS))
    parser.add_argument("--weir-binary", default=os.path.join(ROOT, "build", "bench", "train_step"))
    parser.add_argument("--weir-python", default=os.path.join(ROOT, ".venv", "bin", "python"))
    parser.add_argument("--weir-bert-api", choices=["auto", "python", "cpp"], default="auto",
                        help="Weir's BERT through the Python API (the zoo's bert.py) or the C++ API (train_step); "
                             "auto: Python where --weir-python exists")
    parser.add_argument("--torch-python", default="/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable)
    parser.add_argument("--compile-mode", default="default", help="torch.compile's mode")
    parser.add_argument("--torch-profile", action="store_true",
                        help="PyTorch's rows: after timing, 3 train steps under torch.profiler; prints the ops with the "
                             "most self time (device time on a GPU), per step, to set beside bench/trace_ops.py's view of Weir")
    parser.add_argument("--cpus", help="CPU only: the cores both sides run on, e.g. 0 or 0-1 (default: all)")
    parser.add_argument("--worker-timeout", type=float, default=900, help="seconds each row's process may run")
    parser.add_argument("--worker", choices=KINDS, help=argparse.SUPPRESS)
    parser.add_argument("--model", choices=MODELS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    for name, value in DEFAULTS[args.device].items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    models = args.models.split(",")
    if set(models) - set(MODELS):
        parser.error(f"--models: expected some of {','.join(MODELS)}, got {args.models}")
    if (args.batch is not None and args.batch < 1) or args.steps < 1 or args.repeats < 1 or args.warmup < 1:
        parser.error(f"--batch, --steps, --repeats, --warmup must be >= 1; got {args.batch}, {args.steps}, "
                     f"{args.repeats}, {args.warmup}")
    if args.bert_layers < 1:
        parser.error(f"--bert-layers must be >= 1, got {args.bert_layers}")
    BERT["layers"] = args.bert_layers
    if args.image_size < 32 or not PREDICTIONS < args.seq <= BERT["max_position"]:
        parser.error(f"--image-size must be >= 32 and --seq in [{PREDICTIONS + 1}, {BERT['max_position']}]; got "
                     f"{args.image_size}, {args.seq}")
    kinds = args.kinds.split(",")
    unknown = set(kinds) - set(KINDS)
    if unknown:
        parser.error(f"--kinds: expected some of {','.join(KINDS)}, got {','.join(sorted(unknown))}")
    if args.device == "cpu" and any(kind.endswith("-tf32") for kind in kinds):
        parser.error(f"--kinds: the -tf32 rows need --device gpu, got {args.kinds}")
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


def batch_of(model, args):
    return args.batch or BATCH[model, args.device]


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


def bert_forward_macs(seq):
    """Multiply-adds of one sequence's pretraining forward pass: the layers' products, attention's two
    batched products, the pooler, the masked-LM head over its predictions and the next-sentence head."""
    hidden, intermediate = BERT["hidden"], BERT["intermediate"]
    per_layer = seq * (4 * hidden * hidden + 2 * hidden * intermediate) + 2 * seq * seq * hidden
    head = PREDICTIONS * (hidden * hidden + hidden * BERT["vocab_size"]) + hidden * hidden + 2 * hidden
    return BERT["layers"] * per_layer + head


def train_flop(model, args):
    macs = resnet50_forward_macs(args.image_size) if model == "resnet50" else bert_forward_macs(args.seq)
    return 3 * 2 * macs  # forward, and backward's two products


# --- The workers -------------------------------------------------------------------------------------

def timed_blocks(call, args):
    """Runs call(i) --warmup times (returns the seconds that took), then --repeats blocks of --steps;
    returns (warm-up s, median s a call, the last call's result)."""
    start = time.perf_counter()
    for i in range(args.warmup):
        call(i)
    warmup_s = time.perf_counter() - start
    blocks = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        for i in range(args.steps):
            result = call(i)
        blocks.append((time.perf_counter() - start) / args.steps)
    return warmup_s, statistics.median(blocks), result


def numpy_bert_batches(batch, seq):
    """POOL_BATCHES tuples (ids, mask, segments, positions, label_ids, label_weights, next_sentence_labels)
    of random numpy arrays: every token real, the second half of each sequence segment 1."""
    import numpy as np

    rng = np.random.default_rng(1234)
    segments = (np.arange(seq)[None, :] >= seq // 2).repeat(batch, 0).astype(np.int32)
    batches = []
    for _ in range(POOL_BATCHES):
        positions = np.sort([rng.choice(np.arange(1, seq), PREDICTIONS, replace=False) for _ in range(batch)], axis=1)
        batches.append((rng.integers(4, BERT["vocab_size"], (batch, seq), dtype=np.int32), np.ones((batch, seq), np.int32),
                        segments, positions.astype(np.int32),
                        rng.integers(4, BERT["vocab_size"], (batch, PREDICTIONS), dtype=np.int32),
                        np.ones((batch, PREDICTIONS), np.float32), rng.integers(0, 2, (batch, 1), dtype=np.int32)))
    return batches


def weir_bert_pretraining(flow, config, *inputs):
    """In a Weir train job: the zoo's BERT pretraining loss (masked LM + next sentence) of inputs (ids, mask,
    segments, positions, label_ids, label_weights, next_sentence_labels), minimized with AdamW as the
    PyTorch rows are (lr 1e-4, weight decay 0.01 but on biases and layer norms)."""
    from bert import bert, pretraining_losses  # examples/python/zoo, which the Weir workers put on sys.path

    ids, mask, segments, positions, label_ids, label_weights, next_sentence_labels = inputs
    sequence, pooled, words = bert(ids, mask, segments, config, training=True)
    lm_loss, nsp_loss, _ = pretraining_losses(sequence, pooled, words, positions, label_ids, label_weights,
                                              next_sentence_labels, config)
    loss = lm_loss + nsp_loss
    flow.optimizer.AdamW(flow.optimizer.PiecewiseConstantScheduler([], [1e-4]), weight_decay=0.01,
                         weight_decay_excludes=["bias", "LayerNorm"], epsilon=1e-6).minimize(loss)
    return loss


def weir_bert_worker(args):
    """Weir's BERT row through its Python API (examples/python/zoo/bert.py)."""
    import weir as flow
    import weir.typing as tp

    sys.path.insert(0, os.path.join(ROOT, "examples", "python", "zoo"))
    from bert import BertConfig, bert

    if args.device == "gpu":
        if flow.visible_gpus() == 0:
            print(json.dumps({"skipped": "no GPU visible to Weir"}))
            return
        flow.config.gpu_device_num(1)
        flow.config.enable_tensor_float_32_compute(args.worker == "weir-tf32")
    config = BertConfig(vocab_size=BERT["vocab_size"], hidden_size=BERT["hidden"], num_layers=BERT["layers"],
                        num_heads=BERT["heads"], intermediate_size=BERT["intermediate"],
                        max_position=BERT["max_position"])
    batch, seq = batch_of("bert", args), args.seq
    function_config = flow.FunctionConfig()
    function_config.enable_auto_mixed_precision(args.worker == "weir-amp")
    ints = flow.int32

    @flow.global_function(type="train", function_config=function_config)
    def train(ids: tp.Numpy.Placeholder((batch, seq), dtype=ints), mask: tp.Numpy.Placeholder((batch, seq), dtype=ints),
              segments: tp.Numpy.Placeholder((batch, seq), dtype=ints),
              positions: tp.Numpy.Placeholder((batch, PREDICTIONS), dtype=ints),
              label_ids: tp.Numpy.Placeholder((batch, PREDICTIONS), dtype=ints),
              label_weights: tp.Numpy.Placeholder((batch, PREDICTIONS)),
              next_sentence_labels: tp.Numpy.Placeholder((batch, 1), dtype=ints)) -> tp.Numpy:
        return weir_bert_pretraining(flow, config, ids, mask, segments, positions, label_ids, label_weights,
                                     next_sentence_labels)

    @flow.global_function(type="predict", function_config=function_config)
    def infer(ids: tp.Numpy.Placeholder((batch, seq), dtype=ints), mask: tp.Numpy.Placeholder((batch, seq), dtype=ints),
              segments: tp.Numpy.Placeholder((batch, seq), dtype=ints)) -> tp.Numpy:
        return bert(ids, mask, segments, config, training=False)[1]

    batches = numpy_bert_batches(batch, seq)
    warmup_s, step_s, loss = timed_blocks(lambda i: float(train(*batches[i % POOL_BATCHES])), args)
    _, infer_s, pooled = timed_blocks(lambda i: infer(*batches[i % POOL_BATCHES][:3]), args)
    if loss != loss or pooled.shape != (batch, BERT["hidden"]):
        sys.exit(f"model_zoo: Weir's BERT gave loss {loss}, pooled output {pooled.shape}")
    print(json.dumps({"step_ms": 1e3 * step_s, "infer_ms": 1e3 * infer_s, "warmup_s": warmup_s, "loss": loss}))


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
    from pytorch_models import bert_pretraining, resnet50

    kind, bert = args.worker, args.model == "bert"
    if kind.startswith("torch-compile") and not hasattr(torch, "compile"):
        print(json.dumps({"skipped": f"torch {torch.__version__} has no torch.compile"}))
        return
    tf32, amp = kind.endswith("-tf32"), kind.endswith("-amp")
    torch.manual_seed(1234)
    if args.device == "cpu":
        torch.set_num_threads(len(os.sched_getaffinity(0)))  # every core it is pinned to, as Weir uses
    torch.backends.cudnn.allow_tf32 = tf32  # strict FP32 unless the row says otherwise, as Weir
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.benchmark = True  # the fastest algorithm per shape, as Weir times its own
    device = torch.device("cuda" if args.device == "gpu" else "cpu")
    batch = batch_of(args.model, args)
    model = (bert_pretraining(torch, nn, **BERT) if bert else resnet50(nn)).to(device)
    if bert:
        decay = [p for n, p in model.named_parameters() if "norm" not in n and not n.endswith("bias")]
        rest = [p for n, p in model.named_parameters() if "norm" in n or n.endswith("bias")]
        # foreach: the multi-tensor update, PyTorch's faster path (its default on GPUs only).
        optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": rest, "weight_decay": 0.0}],
                                      lr=1e-4, eps=1e-6, foreach=True)
        batches = [tuple(torch.from_numpy(a) for a in b) for b in numpy_bert_batches(batch, args.seq)]
    else:
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        batches = [(torch.rand(batch, 3, args.image_size, args.image_size),
                    torch.randint(0, 1000, (batch,), dtype=torch.int64)) for _ in range(POOL_BATCHES)]
    if device.type == "cuda":
        batches = [tuple(t.pin_memory() for t in b) for b in batches]
    compiled = model
    if kind.startswith("torch-compile"):
        compiled = torch.compile(model, mode=None if args.compile_mode == "default" else args.compile_mode)
    loss_fn = nn.CrossEntropyLoss(reduction="mean")

    def autocast():
        # f16 on a GPU, bf16 on the CPU: each side's mixed precision on that device (Weir's picks the same).
        low = torch.float16 if device.type == "cuda" else torch.bfloat16
        return torch.autocast(device.type, dtype=low) if amp else contextlib.nullcontext()

    def on_device(i):
        return [t.to(device, non_blocking=True) for t in batches[i % POOL_BATCHES]]

    def step(i):
        inputs = on_device(i)
        optimizer.zero_grad(set_to_none=True)
        with autocast():
            loss = compiled(*inputs) if bert else loss_fn(compiled(inputs[0]), inputs[1])
        loss.backward()
        optimizer.step()
        return loss.item()

    def infer(i):
        inputs = on_device(i)
        with torch.no_grad(), autocast():
            result = model.encode(*inputs[:3]) if bert else compiled(inputs[0]).argmax(1)
        return result.cpu()

    model.train()
    warmup_s, step_s, loss = timed_blocks(step, args)
    profile = torch_step_profile(torch, step, device.type == "cuda") if args.torch_profile else None
    model.eval()
    _, infer_s, _ = timed_blocks(infer, args)
    if loss != loss:
        sys.exit("model_zoo: PyTorch's loss is NaN")
    print(json.dumps({"step_ms": 1e3 * step_s, "infer_ms": 1e3 * infer_s, "warmup_s": warmup_s, "loss": loss,
                      "torch": torch.__version__, "threads": torch.get_num_threads(),
                      "cudnn": torch.backends.cudnn.version() if device.type == "cuda" else None,
                      **({"profile": profile} if profile is not None else {})}))


def torch_step_profile(torch, step, cuda, steps=3, top=20):
    """[op, self ms a step] of the `top` ops with the most self time (device time on a GPU) over `steps`
    train steps under torch.profiler."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities) as prof:
        for i in range(steps):
            step(i)
    if cuda:  # the name changed in PyTorch 2.4 (device for cuda)
        def self_us(e):
            return getattr(e, "self_device_time_total", None) or getattr(e, "self_cuda_time_total", 0)
    else:
        def self_us(e):
            return e.self_cpu_time_total
    events = sorted(prof.key_averages(), key=self_us, reverse=True)[:top]
    return [[e.key, round(self_us(e) / steps / 1e3, 4)] for e in events if self_us(e) > 0]


# --- The driver --------------------------------------------------------------------------------------

def worker_argv(python, kind, model, args):
    return [python, os.path.abspath(__file__), "--worker", kind, "--model", model, "--device", args.device,
            "--batch", str(batch_of(model, args)), "--image-size", str(args.image_size), "--seq", str(args.seq),
            "--bert-layers", str(args.bert_layers), "--steps", str(args.steps), "--repeats", str(args.repeats),
            "--warmup", str(args.warmup), "--compile-mode", args.compile_mode] + (["--torch-profile"] if args.torch_profile else [])


def run_row(kind, model, args):
    unset = ()
    python_bert = args.weir_bert_api == "python" or (args.weir_bert_api == "auto" and os.access(args.weir_python, os.X_OK))
    if kind.startswith("weir") and (model == "resnet50" or not python_bert):
        argv = [args.weir_binary, "--model", model, "--batch", str(batch_of(model, args)), "--steps", str(args.steps),
                "--repeats", str(args.repeats), "--warmup", str(args.warmup), "--no-async"]
        argv += (["--image-size", str(args.image_size)] if model == "resnet50" else
                 ["--seq", str(args.seq), "--bert-layers", str(args.bert_layers)])
        if args.device == "gpu":
            argv += ["--gpu"] + (["--tf32"] if kind == "weir-tf32" else [])
        argv += ["--amp"] if kind == "weir-amp" else []
    elif kind.startswith("weir"):
        argv = worker_argv(args.weir_python, kind, model, args)
    else:
        argv = worker_argv(args.torch_python, kind, model, args)
        # PyTorch finds its own cuDNN (its wheel's, which it was built against), not the one a GPU check put
        # on the library path for Weir.
        unset = benchlib.OPENBLAS_HINTS + ("LD_LIBRARY_PATH",)
    try:
        row = benchlib.run_process(argv, timeout=args.worker_timeout, unset=unset, cpus=args.cpu_set)
    except benchlib.ProcessFailed as error:
        return {"error": str(error)[-1500:]}
    if "train_ms_per_step" in row:  # bench/train_step's figures
        row["api"] = "C++"
        row["step_ms"], row["loss"] = row["train_ms_per_step"], row["final_loss"]
        row["infer_ms"] = row.get("infer_ms_per_call")
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


def run_model(model, args, peak, summary):
    flop = train_flop(model, args)
    batch = batch_of(model, args)
    shape = (f"{args.image_size}x{args.image_size} images" if model == "resnet50" else
             f"sequences of {args.seq}, {args.bert_layers} layers")
    print(f"{model} on the {args.device}, batch {batch} of {shape}: median of {args.repeats} blocks of {args.steps} "
          f"calls after {args.warmup}; {flop / 1e9:.1f} GFLOP per example trained", flush=True)
    what = EXAMPLES[model]
    print(f"  {'':<20} {f'train {what}/s':>18} {'step ms':>9} {'GFLOP/s':>9}{' of peak' if peak else ''}"
          f" {f'infer {what}/s':>18}")
    rows = summary["models"][model] = {}
    for kind in args.kinds.split(","):
        row = rows[kind] = run_row(kind, model, args)
        if "step_ms" not in row:
            print(f"  {kind:<20} {row.get('skipped') or 'failed: ' + row.get('error', '')[-600:]}", flush=True)
            continue
        row["train_per_s"] = 1e3 * batch / row["step_ms"]
        row["gflops"] = row["train_per_s"] * flop / 1e9
        row["infer_per_s"] = 1e3 * batch / row["infer_ms"] if row.get("infer_ms") else None
        share = f" {row['gflops'] / peak:7.0%}" if peak else ""
        infer = f"{row['infer_per_s']:>18.1f}" if row["infer_per_s"] else f"{'-':>18}"
        print(f"  {kind:<20} {row['train_per_s']:>18.1f} {row['step_ms']:>9.1f} {row['gflops']:>9.0f}{share} {infer}",
              flush=True)
        for op, ms in row.get("profile", []):
            print(f"      {ms:9.3f} ms a step  {op}")
    for suffix in ("", "-tf32", "-amp"):
        ours = rows.get(f"weir{suffix}", {})
        for peer in ("torch-eager", "torch-compile"):
            theirs = rows.get(peer + suffix, {})
            if "step_ms" in ours and "step_ms" in theirs:
                train = theirs["step_ms"] / ours["step_ms"]
                rows[f"weir_train_speedup_over_{peer}{suffix}"] = train
                line = f"  Weir{suffix} over {peer}{suffix}: training {train:.2f}x"
                if ours.get("infer_ms") and theirs.get("infer_ms"):
                    rows[f"weir_infer_speedup_over_{peer}{suffix}"] = theirs["infer_ms"] / ours["infer_ms"]
                    line += f", inference {theirs['infer_ms'] / ours['infer_ms']:.2f}x"
                print(line)


def main():
    args = parse_args()
    if args.worker:
        if not args.worker.startswith("weir"):
            return torch_worker(args)
        return weir_bert_worker(args)
    peak = sgemm_peak(args) if args.device == "cpu" else None
    if peak:
        print(f"sgemm peak on these cores: {peak:.1f} GFLOP/s")
    summary = {"bench": "model_zoo", "device": args.device, "image_size": args.image_size, "seq": args.seq,
               "bert_layers": args.bert_layers,
               "steps": args.steps, "repeats": args.repeats, "compile_mode": args.compile_mode, "sgemm_gflops": peak,
               "models": {}}
    for model in args.models.split(","):
        run_model(model, args, peak, summary)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
