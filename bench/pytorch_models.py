#!/usr/bin/python3
"""PyTorch peer of bench/train_step: the seeds' MNIST MLP or LeNet on random data, on the CPU.

  mlp:   784 -> 512 ReLU -> 10 (nn.Linear)
  lenet: Conv2d 32 5x5 pad 2 + ReLU, MaxPool 2, Conv2d 64 5x5 pad 2 + ReLU, MaxPool 2,
         Linear 3136 -> 512 + ReLU, Linear 512 -> 10 (no dropout, as bench/train_step)
CrossEntropyLoss (mean), SGD lr 0.1 momentum 0, batch 100. Times train steps (zero_grad / forward /
loss / backward / step) and inference batches (torch.no_grad, logits -> argmax); each repeat times
--steps of each, the figures are medians over --repeats. Run with Debian's /usr/bin/python3
(python3-torch). Last line: one JSON object.

Thread settings must be fixed before torch (and its OpenMP and OpenBLAS pools) load, so they are
flags here, exported to the environment before the import:
  --torch-threads T   torch.set_num_threads(T) and OMP_NUM_THREADS=T (GNU OpenMP intra-op pool)
  --blas-threads B    OPENBLAS_NUM_THREADS=B (PyTorch's GEMMs run in OpenBLAS's own pthread pool)
  --omp-wait-policy   PASSIVE or ACTIVE (default: leave OMP_WAIT_POLICY unset)
  --channels-last     LeNet's model and inputs in torch.channels_last (oneDNN's NHWC convolutions)
A sweep of thread settings on this machine found torch 1 + OpenBLAS 2 best for the MLP and
torch 2 + OpenBLAS 1 with channels_last best for LeNet on the 2-core VM.
"""
import argparse
import contextlib
import json
import os
import resource
import statistics
import sys
import time

BATCH = 100
POOL_BATCHES = 8  # distinct random batches, cycled, as in train_step


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=["mlp", "lenet"], default="mlp")
    parser.add_argument("--steps", type=int, default=-1, help="timed steps per repeat (default 200 MLP, 20 LeNet)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=-1, help="default: max(steps / 5, 20 MLP, 3 LeNet)")
    parser.add_argument("--torch-threads", type=int, default=1)
    parser.add_argument("--blas-threads", type=int, default=1)
    parser.add_argument("--omp-wait-policy", choices=["PASSIVE", "ACTIVE"], default=None)
    parser.add_argument("--channels-last", action="store_true")
    parser.add_argument("--amp", action="store_true", help="torch.autocast('cpu', dtype=torch.bfloat16) around forward and loss")
    parser.add_argument("--no-async", action="store_true", help="accepted for symmetry with train_step; ignored")
    args = parser.parse_args()
    if args.steps == -1:
        args.steps = 200 if args.model == "mlp" else 20
    if args.steps < 1 or args.repeats < 1 or args.torch_threads < 1 or args.blas_threads < 1:
        parser.error("--steps, --repeats, --torch-threads and --blas-threads must be >= 1")
    if args.warmup < 0:
        args.warmup = max(20 if args.model == "mlp" else 3, args.steps // 5)
    return args


def set_thread_environment(args):
    os.environ["OMP_NUM_THREADS"] = str(args.torch_threads)
    os.environ["OPENBLAS_NUM_THREADS"] = str(args.blas_threads)
    os.environ["MKL_NUM_THREADS"] = str(args.blas_threads)
    if args.omp_wait_policy:
        os.environ["OMP_WAIT_POLICY"] = args.omp_wait_policy
    else:
        os.environ.pop("OMP_WAIT_POLICY", None)


def resnet50(nn, classes=1000):
    """torchvision's ResNet-50 (v1.5, the stride on each bottleneck's 3x3 convolution), written out here so
    that the peer needs no torchvision; bench_models.hpp's Resnet50Logits is the same network."""

    def conv_bn(inputs, outputs, kernel, stride, relu=True):
        layers = [nn.Conv2d(inputs, outputs, kernel, stride, padding=kernel // 2, bias=False),
                  nn.BatchNorm2d(outputs, eps=1e-5, momentum=0.1)]
        return nn.Sequential(*layers, nn.ReLU(inplace=True)) if relu else nn.Sequential(*layers)

    class Bottleneck(nn.Module):
        def __init__(self, inputs, width, stride):
            super().__init__()
            self.body = nn.Sequential(conv_bn(inputs, width, 1, 1), conv_bn(width, width, 3, stride),
                                      conv_bn(width, 4 * width, 1, 1, relu=False))
            self.shortcut = (conv_bn(inputs, 4 * width, 1, stride, relu=False)
                             if stride != 1 or inputs != 4 * width else nn.Identity())
            self.relu = nn.ReLU(inplace=True)

        def forward(self, x):
            return self.relu(self.body(x) + self.shortcut(x))

    layers = [conv_bn(3, 64, 7, 2), nn.MaxPool2d(3, 2, padding=1)]
    channels = 64
    for stage, (blocks, width) in enumerate(((3, 64), (4, 128), (6, 256), (3, 512))):
        for block in range(blocks):
            layers.append(Bottleneck(channels, width, 2 if block == 0 and stage > 0 else 1))
            channels = 4 * width
    fc = nn.Linear(channels, classes)
    nn.init.normal_(fc.weight, 0.0, 0.01)
    nn.init.zeros_(fc.bias)
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), fc)


def bert_pretraining(torch, nn, vocab_size=30522, hidden=768, layers=12, heads=12, intermediate=3072,
                     max_position=512, dropout=0.1):
    """BERT for pretraining as examples/python/zoo/bert.py builds it (post-norm layers, exact gelu, the
    masked-LM logits against the word embeddings plus a bias, next-sentence prediction from a tanh
    pooler over the first token): forward(ids, mask, segments, positions, label_ids, label_weights,
    next_sentence_labels) -> the summed loss; encode(ids, mask, segments) -> the pooled output."""
    functional = nn.functional

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.query, self.key, self.value = (nn.Linear(hidden, hidden) for _ in range(3))
            self.attention_out = nn.Linear(hidden, hidden)
            self.attention_norm = nn.LayerNorm(hidden, eps=1e-12)
            self.intermediate = nn.Linear(hidden, intermediate)
            self.out = nn.Linear(intermediate, hidden)
            self.out_norm = nn.LayerNorm(hidden, eps=1e-12)
            self.dropout = nn.Dropout(dropout)

        def forward(self, x, mask_addend):
            batch, seq, _ = x.shape
            width = hidden // heads

            def split(t):
                return t.view(batch, seq, heads, width).transpose(1, 2)

            scores = split(self.query(x)) @ split(self.key(x)).transpose(-1, -2) / width ** 0.5 + mask_addend
            probabilities = self.dropout(torch.softmax(scores, dim=-1))
            context = (probabilities @ split(self.value(x))).transpose(1, 2).reshape(batch, seq, hidden)
            x = self.attention_norm(self.dropout(self.attention_out(context)) + x)
            return self.out_norm(self.dropout(self.out(functional.gelu(self.intermediate(x)))) + x)

    class Bert(nn.Module):
        def __init__(self):
            super().__init__()
            self.words = nn.Embedding(vocab_size, hidden)
            self.positions = nn.Embedding(max_position, hidden)
            self.types = nn.Embedding(2, hidden)
            self.embedding_norm = nn.LayerNorm(hidden, eps=1e-12)
            self.dropout = nn.Dropout(dropout)
            self.layers = nn.ModuleList(Layer() for _ in range(layers))
            self.pooler = nn.Linear(hidden, hidden)
            self.transform = nn.Linear(hidden, hidden)
            self.transform_norm = nn.LayerNorm(hidden, eps=1e-12)
            self.output_bias = nn.Parameter(torch.zeros(vocab_size))
            self.next_sentence = nn.Linear(hidden, 2)
            for module in self.modules():
                if isinstance(module, (nn.Linear, nn.Embedding)):
                    nn.init.trunc_normal_(module.weight, std=0.02, a=-0.04, b=0.04)
                if isinstance(module, nn.Linear):
                    nn.init.zeros_(module.bias)

        def sequence(self, ids, mask, segments):
            seq = ids.shape[1]
            x = self.words(ids.long()) + self.types(segments.long()) + self.positions.weight[:seq]
            x = self.dropout(self.embedding_norm(x))
            mask_addend = (mask[:, None, None, :].to(x.dtype) - 1.0) * 10000.0
            for layer in self.layers:
                x = layer(x, mask_addend)
            return x, torch.tanh(self.pooler(x[:, 0]))

        def encode(self, ids, mask, segments):
            return self.sequence(ids, mask, segments)[1]

        def forward(self, ids, mask, segments, positions, label_ids, label_weights, next_sentence_labels):
            sequence, pooled = self.sequence(ids, mask, segments)
            picked = torch.gather(sequence, 1, positions.long()[:, :, None].expand(-1, -1, hidden))
            # .float(): under CPU autocast the gelu is bfloat16, and PyTorch 1.13's CPU layer norm takes
            # one dtype for input and weights (a no-op in float32).
            transformed = self.transform_norm(functional.gelu(self.transform(picked)).float()).reshape(-1, hidden)
            logits = transformed @ self.words.weight.t() + self.output_bias
            per_prediction = functional.cross_entropy(logits, label_ids.long().reshape(-1), reduction="none")
            weights = label_weights.reshape(-1)
            lm_loss = (per_prediction * weights).sum() / (weights.sum() + 1e-5)
            nsp_loss = functional.cross_entropy(self.next_sentence(pooled), next_sentence_labels.long().reshape(-1))
            return lm_loss + nsp_loss

    return Bert()


def build_model(name, nn):
    if name == "resnet50":
        return resnet50(nn)
    if name == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 10))
    return nn.Sequential(
        nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2, 2),
        nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2, 2),
        nn.Flatten(), nn.Linear(7 * 7 * 64, 512), nn.ReLU(), nn.Linear(512, 10))


def main():
    args = parse_args()
    set_thread_environment(args)
    import torch  # after the environment is set
    from torch import nn

    torch.set_num_threads(args.torch_threads)
    torch.manual_seed(1234)

    model = build_model(args.model, nn)
    memory_format = torch.channels_last if args.channels_last else torch.contiguous_format
    if args.channels_last:
        model = model.to(memory_format=memory_format)
    loss_fn = nn.CrossEntropyLoss(reduction="mean")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.0)
    batches = [(torch.rand(BATCH, 1, 28, 28).contiguous(memory_format=memory_format),
                torch.randint(0, 10, (BATCH,))) for _ in range(POOL_BATCHES)]

    last_loss = [0.0]
    # PyTorch's CPU mixed precision: autocast runs the products in bfloat16 (its recipe: forward and loss
    # under autocast, backward outside it).
    autocast = (lambda: torch.autocast("cpu", dtype=torch.bfloat16)) if args.amp else contextlib.nullcontext

    def train(steps):
        start = time.perf_counter()
        for i in range(steps):
            images, labels = batches[i % POOL_BATCHES]
            optimizer.zero_grad(set_to_none=True)
            with autocast():
                loss = loss_fn(model(images), labels)
            loss.backward()
            optimizer.step()
        seconds = time.perf_counter() - start
        last_loss[0] = loss.item()
        return seconds

    def infer(steps):
        start = time.perf_counter()
        with torch.no_grad(), autocast():
            for i in range(steps):
                predictions = model(batches[i % POOL_BATCHES][0]).argmax(dim=1)
        seconds = time.perf_counter() - start
        assert predictions.numel() == BATCH
        return seconds

    train(args.warmup)
    infer(args.warmup)
    train_s, infer_s = [], []
    for _ in range(args.repeats):
        train_s.append(train(args.steps))
        infer_s.append(infer(args.steps))
    if last_loss[0] != last_loss[0]:
        sys.exit("pytorch_models: the loss is NaN")

    train_med = statistics.median(train_s)
    infer_med = statistics.median(infer_s)
    print(f"pytorch {args.model}: batch {BATCH}, {args.steps} steps per run, median of {args.repeats} runs, "
          f"torch threads {torch.get_num_threads()}, OpenBLAS threads {args.blas_threads}, "
          f"OMP_WAIT_POLICY {args.omp_wait_policy or 'unset'}, channels_last {args.channels_last}, "
          f"autocast bf16 {args.amp}")
    print(f"{'':<28} {'per s':>10} {'ms':>10}")
    print(f"{'train step':<28} {args.steps / train_med:>10.1f} {1e3 * train_med / args.steps:>10.3f}")
    print(f"{'inference':<28} {args.steps / infer_med:>10.1f} {1e3 * infer_med / args.steps:>10.3f}")
    print(json.dumps({
        "bench": "train_step", "impl": "pytorch", "model": args.model, "torch_version": torch.__version__,
        "batch": BATCH, "steps": args.steps, "repeats": args.repeats,
        "torch_threads": torch.get_num_threads(), "blas_threads": args.blas_threads,
        "omp_wait_policy": args.omp_wait_policy, "channels_last": args.channels_last, "amp": args.amp,
        "train_steps_per_s": round(args.steps / train_med, 2),
        "train_ms_per_step": round(1e3 * train_med / args.steps, 4),
        "infer_calls_per_s": round(args.steps / infer_med, 2),
        "infer_ms_per_call": round(1e3 * infer_med / args.steps, 4),
        "final_loss": round(last_loss[0], 4),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1),
    }))


if __name__ == "__main__":
    main()
