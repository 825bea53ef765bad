"""Trains a small GPT (examples/python/zoo/gpt.py) as a character-level language model in OneFlow's
job-function API, then writes with it, greedily, one character per call of a predict job.

The corpus is made to have something to learn that needs the attention: sentences "<name> has <n>
<things>. <name> gives the <things> away. <name> had <n>." with the name, things and number drawn at
random, so that all after the first full stop is copied from before it, tens of characters back:
what attention does. Samples are windows of seq_length + 1 characters, as OneFlow's GPT reads its
samples; Adam with a linear warm-up and global-norm clipping, as its pretraining does. With
--megatron-data PREFIX the training text is written as a Megatron-LM dataset (a document per sentence,
weir.data.megatron) and the train job reads its own batches from it through
flow.data.megatron_gpt_mmap_data_loader, shuffled, as OneFlow's GPT program reads its data (samples of
63 characters then, by default: see parse_args); without it, random windows are fed through a
placeholder.

  python examples/python/zoo/train_gpt.py --steps 600 [--megatron-data /tmp/gpt_corpus]
Prints "step N: loss L" during training, "held-out: loss L, recalled R of M, exact E of M" (greedy
writing from a held-out sentence's first full stop: R recalled its name and things, E the number too)
and a sample.
"""

import argparse
import os
import random
import sys

import numpy as np

import weir as flow
import weir.typing as tp
from weir.data import megatron

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt import GPTConfig, gpt_logits, lm_loss  # noqa: E402

NAMES = ["ann", "bob", "cid", "dee", "eve", "fay"]
THINGS = ["apples", "coins", "books", "cards"]


def sentence(rng):
    name, thing, count = rng.choice(NAMES), rng.choice(THINGS), rng.randrange(2, 10)
    return f"{name} has {count} {thing}. {name} gives the {thing} away. {name} had {count}.\n"


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--seq", type=int, default=None, help="sequence length (default 64; 63 with --megatron-data)")
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--test-sentences", type=int, default=20)
    parser.add_argument("--megatron-data", metavar="PREFIX",
                        help="write the training text as a Megatron-LM dataset at PREFIX and read batches from it")
    parser.add_argument("--seed", type=int, default=0,
                        help="seeds Python's random module, whence the corpus and the jobs' dropout seeds: a run repeats")
    args = parser.parse_args()
    # Every sentence of the corpus has an even length (54 or 56 characters). Cut every 64 characters, a
    # Megatron dataset's samples would start every sentence at an even position, and the position
    # embeddings of odd ones would never train; an odd length mixes them, as random windows do.
    if args.seq is None:
        args.seq = 63 if args.megatron_data else 64
    return args


def main():
    args = parse_args()
    random.seed(args.seed)
    rng = random.Random(args.seed)
    text = "".join(sentence(rng) for _ in range(4000))
    vocab = sorted(set(text))
    index = {c: i for i, c in enumerate(vocab)}
    corpus = np.array([index[c] for c in text], np.int32)
    config = GPTConfig(vocab_size=len(vocab), seq_length=args.seq, hidden_size=args.hidden, num_layers=args.layers,
                       num_heads=args.heads, dropout=args.dropout)

    def optimize(tokens):
        loss = lm_loss(tokens, config, training=True)
        schedule = flow.optimizer.PolynomialScheduler(args.lr, args.steps, end_learning_rate=args.lr * 0.1,
                                                      warmup=flow.optimizer.warmup.linear(args.steps // 10, 0))
        flow.optimizer.AdamW(schedule, weight_decay=0.01, weight_decay_excludes=["bias", "ln", "wpe", "wte"],
                             grad_clipping=flow.optimizer.grad_clipping.by_global_norm(1.0)).minimize(loss)
        return loss

    split = len(corpus) * 9 // 10
    if args.megatron_data:
        # The training text's sentences, each a document (its newline included), as Megatron's
        # preprocessing writes a corpus; the reader lays them end to end, shuffled, and cuts samples.
        ends = np.flatnonzero(corpus[:split] == index["\n"]) + 1
        megatron.write(args.megatron_data, np.split(corpus[:ends[-1]], ends[:-1]))

        @flow.global_function(type="train")
        def train() -> tp.Numpy:
            return optimize(flow.data.megatron_gpt_mmap_data_loader(
                args.megatron_data, seq_length=args.seq, num_samples=args.steps * args.batch, batch_size=args.batch,
                dtype=flow.int32, shuffle=True, random_seed=args.seed))
    else:
        @flow.global_function(type="train")
        def train(tokens: tp.Numpy.Placeholder((args.batch, args.seq + 1), dtype=flow.int32)) -> tp.Numpy:
            return optimize(tokens)

    @flow.global_function()
    def evaluate(tokens: tp.Numpy.Placeholder((args.batch, args.seq + 1), dtype=flow.int32)) -> tp.Numpy:
        return lm_loss(tokens, config, training=False)

    @flow.global_function()
    def next_logits(tokens: tp.Numpy.Placeholder((1, args.seq), dtype=flow.int32)) -> tp.Numpy:
        return gpt_logits(tokens, config, training=False)

    batches = np.random.default_rng(args.seed)
    for step in range(args.steps):
        if args.megatron_data:
            loss = train()
        else:
            starts = batches.integers(0, split - args.seq - 1, args.batch)
            loss = train(np.stack([corpus[s:s + args.seq + 1] for s in starts]))
        if step % 100 == 0 or step == args.steps - 1:
            print(f"step {step}: loss {float(loss):.4f}", flush=True)

    held_out = corpus[split:]
    starts = np.arange(0, len(held_out) - args.seq - 1, (len(held_out) - args.seq - 1) // args.batch)[:args.batch]
    loss = float(evaluate(np.stack([held_out[s:s + args.seq + 1] for s in starts])))

    def write(prompt, count):
        window = [index[c] for c in prompt][-args.seq:]
        out = ""
        for _ in range(count):
            logits = next_logits(np.array([window[-args.seq:]], np.int32))
            token = int(np.argmax(logits[0, -1]))
            out += vocab[token]
            window.append(token)
        return out

    # Each held-out sentence, its beginning given after a window of the text before it; exact when the
    # model writes its ending (from " keeps ") as the corpus has it.
    test_text = "".join(vocab[t] for t in held_out)
    sentences = []  # (offset, line) of whole sentences with a full window of text before them
    offset = test_text.index("\n") + 1
    for line in test_text[offset:].split("\n")[:-1]:
        if offset >= args.seq and len(sentences) < args.test_sentences:
            sentences.append((offset, line))
        offset += len(line) + 1
    # Each held-out sentence's second half, written from its first: the name and things recalled
    # ("<name> gives the <things> away."), and the number ("<name> had <n>.").
    recalled = exact = 0
    for offset, line in sentences:
        cut = line.index(". ") + len(". ")
        ending = line[cut:] + "\n"
        written = write(test_text[offset - args.seq:offset] + line[:cut], len(ending))
        recalled += written.split(". ")[0] == ending.split(". ")[0]
        exact += written == ending
    print(f"held-out: loss {loss:.4f}, recalled {recalled} of {len(sentences)}, exact {exact} of {len(sentences)}")
    print("sample: " + write(test_text[:args.seq], 120).replace("\n", " | "))


if __name__ == "__main__":
    main()
