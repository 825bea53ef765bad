#!/usr/bin/python3
"""Mixed precision on the CPU: Weir fp32 vs Weir AMP (func_config.enable_auto_mixed_precision(True):
bfloat16 products) vs PyTorch fp32 vs PyTorch's CPU autocast in bfloat16, on the seeds' MNIST MLP and
LeNet (batch 100, SGD) and the model zoo's ResNet-50 (batch 8 of 224x224, SGD momentum) and BERT-base
pretraining (batch 8 of 128 tokens, AdamW), train steps and inference, side by side in one run.

Each configuration runs in its own process, alternated and rotated over --rounds rounds:
  Weir         bench/weir_python_models.py (.venv/bin/python), defaults, with and without --amp
  PyTorch      bench/pytorch_models.py (/usr/bin/python3) in each of its 2-core thread settings
               (bench/compare_pytorch.py's candidates plus torch 2 threads + OpenBLAS 2 PASSIVE), with and
               without --amp (torch.autocast("cpu", dtype=torch.bfloat16) around forward and loss);
               "PyTorch" is the best candidate's median, chosen per model, phase and precision
  peaks        bench/bf16_peak (build folder): oneDNN bf16 and f32 matmuls 2048^3 on 2 threads, and
               OpenBLAS's sgemm (benchlib.py): what each configuration's GFLOP/s is a share of (the bf16
               peak for AMP, the faster f32 one for fp32; FLOPs per step as bench/compare_pytorch.py)
  ResNet-50,   bench/model_zoo.py's rows weir, weir-amp, torch-eager, torch-eager-amp (each its own
  BERT-base    process; one model_zoo.py run per round), on every core; FLOPs as model_zoo.py counts them
The peer runs at its best: PyTorch's processes run without OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE when its
float32 results are right without them (bench/compare_pytorch.py's check). Prints medians over the
processes and the ratios (> 1 = the first faster); last line: one JSON object with, per model,
<model>_amp_vs_fp32 and <model>_amp_vs_torch_autocast (train steps; _infer_ for inference), and
bf16_peak_gflops. --accuracy instead trains the MLP and LeNet on MNIST in fp32 and under AMP and
prints their test accuracies (the MLP: 20 epochs, ~2 min; LeNet: --lenet-epochs, 20 take ~40 min here).

  /usr/bin/python3 bench/amp.py --build build                                  # ~25 min
  /usr/bin/python3 bench/amp.py --build build --quick                          # ~8 min
  /usr/bin/python3 bench/amp.py --build build --models resnet50 --rounds 2     # one model
  /usr/bin/python3 bench/amp.py --accuracy [--lenet-epochs 2]
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import (ROOT, ProcessFailed, QuietRunner, median_of, peak_of, rounded, run_process,  # noqa: E402
                      sgemm_argv)
from compare_pytorch import (DEFAULT_TORCH_CONFIGS, INFER_FLOP, ONE_THREAD, TRAIN_FLOP,  # noqa: E402
                             choose_peer_environment, peer_run, torch_flags, torch_label)
import model_zoo  # noqa: E402

MODELS = ("mlp", "lenet", "resnet50", "bert")
ZOO = ("resnet50", "bert")  # run through bench/model_zoo.py's rows
ZOO_KINDS = {"weir": "weir", "weir/amp": "weir-amp", "torch_eager": "torch-eager", "torch_eager/amp": "torch-eager-amp"}


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build", help="Meson build folder with bench/bf16_peak")
    parser.add_argument("--models", default=",".join(MODELS), help=f"comma-separated subset of {','.join(MODELS)}")
    parser.add_argument("--quick", action="store_true", help="1 round, 2 repeats, half the steps")
    parser.add_argument("--rounds", type=int, default=None, help="processes per configuration (default 3)")
    parser.add_argument("--repeats", type=int, default=None, help="timed runs inside a process (default 3)")
    parser.add_argument("--python", default="/usr/bin/python3", help="the interpreter with torch (Debian's)")
    parser.add_argument("--weir-python", default=os.path.join(ROOT, ".venv", "bin", "python"))
    parser.add_argument("--timeout", type=int, default=1800, help="seconds a process may run")
    parser.add_argument("--accuracy", action="store_true", help="MNIST accuracies, fp32 and AMP, instead of timings")
    parser.add_argument("--mlp-epochs", type=int, default=20)
    parser.add_argument("--lenet-epochs", type=int, default=2)
    args = parser.parse_args()
    args.models = [m for m in args.models.split(",") if m]
    if any(m not in MODELS for m in args.models):
        parser.error(f"--models: choose from {','.join(MODELS)}")
    if args.accuracy and any(m in ZOO for m in args.models):
        parser.error("--accuracy: the MNIST models only (mlp, lenet); the zoo's accuracies are test_zoo.py's")
    args.rounds = args.rounds or (1 if args.quick else 3)
    args.repeats = args.repeats or (2 if args.quick else 3)
    args.weir_pythonpath = None
    return args


def torch_candidates(model):
    """PyTorch's 2-core settings for `model` (autocast's oneDNN kernels use torch's threads, so torch 2
    threads + OpenBLAS 2 PASSIVE is always one); the zoo's models run PyTorch on every core."""
    if model in ZOO:
        return ["eager"]
    names = [n for n in DEFAULT_TORCH_CONFIGS[model].split(",") if n not in ONE_THREAD]
    return names + ([] if "t2b2p" in names else ["t2b2p"])


def steps_of(model, args):
    steps = 200 if model == "mlp" else 20
    return steps // 2 if args.quick else steps


def configurations(args):
    """(key, argv, is_peer) per configuration; keys are <model>/<impl>[/amp]."""
    configs = []
    for model in args.models:
        if model in ZOO:
            steps, warmup = (2, 1) if args.quick else (3, 2)
            configs.append((f"{model}/zoo", [args.python, os.path.join(ROOT, "bench", "model_zoo.py"), "--models", model,
                                             "--kinds", ",".join(ZOO_KINDS.values()), "--steps", str(steps),
                                             "--repeats", str(args.repeats), "--warmup", str(warmup),
                                             "--weir-binary", os.path.join(args.build, "bench", "train_step"),
                                             "--weir-python", args.weir_python], False))
            continue
        common = ["--model", model, "--steps", str(steps_of(model, args)), "--repeats", str(args.repeats)]
        weir = [args.weir_python, os.path.join(ROOT, "bench", "weir_python_models.py")] + common
        configs += [(f"{model}/weir", weir, False), (f"{model}/weir/amp", weir + ["--amp"], False)]
        script = os.path.join(ROOT, "bench", "pytorch_models.py")
        for name in torch_candidates(model):
            torch = [args.python, script] + common + torch_flags(name)
            configs += [(f"{model}/torch_{name}", torch, True), (f"{model}/torch_{name}/amp", torch + ["--amp"], True)]
    return configs


def zoo_rows(key, figures):
    """(key, figures) per row of one bench/model_zoo.py run (key <model>/zoo): steps and calls per s."""
    model = key.split("/")[0]
    rows = []
    for suffix, kind in ZOO_KINDS.items():
        row = figures["models"][model].get(kind, {})
        if "step_ms" not in row or not row.get("infer_ms"):
            sys.exit(f"amp: {model} {kind} failed: {row.get('skipped') or row.get('error', '')[-1500:]}")
        rows.append((f"{model}/{suffix}", {"train_steps_per_s": 1e3 / row["step_ms"], "infer_calls_per_s": 1e3 / row["infer_ms"]}))
    return rows


def flop_of(model, phase):
    """FLOPs of one train step or inference call: bench/compare_pytorch.py's for the MNIST models; for
    the zoo's, bench/model_zoo.py's count at its CPU batch (inference: the forward pass; BERT's, the
    encoder and pooler without the pretraining heads)."""
    if model not in ZOO:
        return (TRAIN_FLOP if phase == "train" else INFER_FLOP)[model]
    batch = model_zoo.BATCH[model, "cpu"]
    if model == "resnet50":
        macs = model_zoo.resnet50_forward_macs(224)
    else:
        hidden = model_zoo.BERT["hidden"]
        heads = model_zoo.PREDICTIONS * (hidden * hidden + hidden * model_zoo.BERT["vocab_size"]) + 2 * hidden
        macs = model_zoo.bert_forward_macs(128) - (heads if phase == "infer" else 0)
    return (3 if phase == "train" else 1) * 2 * macs * batch


def best_torch(results, model, amp, field):
    """(the best candidate's median of `field`, its name): larger is better (steps or calls per s)."""
    best = (None, None)
    for name in torch_candidates(model):
        value = median_of(results.get(f"{model}/torch_{name}" + ("/amp" if amp else ""), []), field)
        if value is not None and (best[0] is None or value > best[0]):
            best = (value, name)
    return best


def timings(args):
    peer = choose_peer_environment(args)
    print(peer["note"])
    peak_binary = os.path.join(args.build, "bench", "bf16_peak")
    if not os.access(peak_binary, os.X_OK):
        sys.exit(f"amp: {peak_binary} not found; build it with `ninja -C {args.build} bench/bf16_peak`")
    runner = QuietRunner(max_foreign=0.3, retries=2, quiet_budget=300, timeout=args.timeout)
    peaks = [runner.run([peak_binary], {"OMP_NUM_THREADS": "2"}) for _ in range(2)]
    sgemm = [peer_run(runner, peer, sgemm_argv(args.python, 2, peer["keep_hints"])) for _ in range(2)]
    bf16_peak = max(p["bf16_gflops"] for p in peaks)
    # f32: the faster of oneDNN's and OpenBLAS's (bench/compare_pytorch.py's sgemm peak).
    f32_peak = max(max(p["f32_gflops"] for p in peaks), peak_of(sgemm))
    print(f"peaks (2 threads): bf16 {bf16_peak:.1f} GFLOP/s (oneDNN matmul 2048^3), f32 {f32_peak:.1f} GFLOP/s "
          f"(oneDNN {max(p['f32_gflops'] for p in peaks):.1f}, OpenBLAS sgemm {peak_of(sgemm):.1f})")

    configs = configurations(args)
    results = {}
    for round_index in range(args.rounds):
        shift = round_index % len(configs)
        for key, argv, is_peer in configs[shift:] + configs[:shift]:
            try:
                figures = peer_run(runner, peer, argv) if is_peer else runner.run(argv)
            except ProcessFailed as error:
                sys.exit(f"amp: {key} failed: {error}")
            for row_key, row in (zoo_rows(key, figures) if key.endswith("/zoo") else [(key, figures)]):
                results.setdefault(row_key, []).append(row)
                print(f"  round {round_index + 1}/{args.rounds} {row_key}: train {row['train_steps_per_s']:.2f}/s, "
                      f"infer {row['infer_calls_per_s']:.2f}/s", flush=True)

    summary = {"bench": "amp", "bf16_peak_gflops": round(bf16_peak, 1), "f32_peak_gflops": round(f32_peak, 1),
               "rounds": args.rounds, "peer_keeps_openblas_hints": peer["keep_hints"]}
    print(f"\nmedians over {args.rounds} process(es); GFLOP/s as a share of the peak of the precision the products "
          f"run in (fp32: {f32_peak:.0f}, AMP: bf16 {bf16_peak:.0f})")
    print(f"{'model':<6} {'phase':<6} {'configuration':<44} {'per s':>8} {'ms':>8} {'GFLOP/s':>8} {'of peak':>8}")
    for model in args.models:
        for phase, field, flop in (("train", "train_steps_per_s", flop_of(model, "train")),
                                   ("infer", "infer_calls_per_s", flop_of(model, "infer"))):
            rows = {}
            for amp in (False, True):
                suffix = "/amp" if amp else ""
                rows[("weir", amp)] = (median_of(results[f"{model}/weir{suffix}"], field), "weir")
                rows[("torch", amp)] = best_torch(results, model, amp, field)
            for (impl, amp), (rate, name) in rows.items():
                peak = bf16_peak if amp else f32_peak
                if impl == "weir":
                    label = "weir, defaults"
                else:
                    label = "pytorch eager, every core" if model in ZOO else torch_label(name)
                label += ", AMP bf16" if amp else ", fp32"
                gflops = rate * flop / 1e9
                print(f"{model:<6} {phase:<6} {label:<44} {rate:>8.{1 if rate >= 10 else 2}f} {1e3 / rate:>8.2f} {gflops:>8.1f} "
                      f"{100 * gflops / peak:>7.1f}%")
            prefix = model if phase == "train" else f"{model}_infer"
            summary[f"{prefix}_amp_vs_fp32"] = rows[("weir", True)][0] / rows[("weir", False)][0]
            summary[f"{prefix}_amp_vs_torch_autocast"] = rows[("weir", True)][0] / rows[("torch", True)][0]
            summary[f"{prefix}_torch_autocast_vs_fp32"] = rows[("torch", True)][0] / rows[("torch", False)][0]
            summary[f"{prefix}_weir_amp_per_s"] = rows[("weir", True)][0]
            summary[f"{prefix}_torch_autocast_per_s"] = rows[("torch", True)][0]
            print(f"{model:<6} {phase:<6} Weir AMP / Weir fp32 {summary[f'{prefix}_amp_vs_fp32']:.2f}x, "
                  f"Weir AMP / PyTorch autocast {summary[f'{prefix}_amp_vs_torch_autocast']:.2f}x, "
                  f"PyTorch autocast / PyTorch fp32 {summary[f'{prefix}_torch_autocast_vs_fp32']:.2f}x")
    note = runner.noise_note()
    if note:
        print(note)
    print(json.dumps(rounded(summary, 3)))


ACCURACY_PROGRAM = r"""
import sys, numpy as np, weir as flow, weir.typing as tp
sys.path.insert(0, {bench!r})
from weir_python_models import lenet, mlp
model, epochs, amp = {model!r}, {epochs}, {amp}
config = flow.FunctionConfig()
config.enable_auto_mixed_precision(amp)
net = mlp if model == "mlp" else lenet

@flow.global_function(type="train", function_config=config)
def train(images: tp.Numpy.Placeholder((100, 1, 28, 28)), labels: tp.Numpy.Placeholder((100,), dtype=flow.int32)) -> tp.Numpy:
    loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, net(images))
    flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
    return loss

@flow.global_function(type="predict", function_config=config)
def predict(images: tp.Numpy.Placeholder((100, 1, 28, 28))) -> tp.Numpy:
    return net(images)

flow.train.CheckPoint().init()
(train_images, train_labels), (test_images, test_labels) = flow.data.load_mnist(100)
for epoch in range(epochs):
    for images, labels in zip(train_images, train_labels):
        train(images, labels)
correct = sum(int((np.argmax(predict(images), 1) == labels).sum()) for images, labels in zip(test_images, test_labels))
print('{{"accuracy": %.4f}}' % (correct / (100 * len(test_labels))))
"""


def accuracy(args):
    summary = {"bench": "amp_accuracy"}
    for model in args.models:
        epochs = args.mlp_epochs if model == "mlp" else args.lenet_epochs
        for amp in (False, True):
            program = ACCURACY_PROGRAM.format(bench=os.path.join(ROOT, "bench"), model=model, epochs=epochs, amp=amp)
            figures = run_process([args.weir_python, "-c", program], timeout=6 * 3600)
            key = f"{model}_{'amp' if amp else 'fp32'}_accuracy"
            summary[key] = figures["accuracy"]
            print(f"{model} {epochs} epoch(s) {'AMP bf16' if amp else 'fp32':<8}: test accuracy "
                  f"{100 * figures['accuracy']:.2f}% ({figures['wall_s']:.0f} s)", flush=True)
    print(json.dumps(summary))


def main():
    args = parse_args()
    accuracy(args) if args.accuracy else timings(args)


if __name__ == "__main__":
    main()
