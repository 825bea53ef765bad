"""Pretrains a small BERT (masked LM + next sentence) from OFRecord files, then fine-tunes it as a
sequence classifier, in OneFlow's job-function API. The jobs read their own batches (ofrecord_reader
and OFRecordRawDecoder, as OneFlow's BERT program reads its pretraining records; no placeholder).

The corpus is synthetic, with structure to learn: documents on four topics, each topic a hidden Markov
chain over the words (each word has three likely successors in a topic), sentences walks of their
document's chain. A masked word is predictable from its neighbours and its topic; the second segment
of a pair either continues the first segment's walk (label 0) or, as BERT draws a random next sentence
from another document, is a walk of another topic (label 1). The records hold OneFlow's BERT features:
input_ids, input_mask, segment_ids, masked_lm_positions, masked_lm_ids, masked_lm_weights,
next_sentence_labels. Fine-tuning classifies single sentences by topic, starting from the pretrained
encoder saved with flow.checkpoint.save and loaded into a new session.

  python examples/python/zoo/train_bert.py --steps 800 --finetune-steps 100
Prints "step N: mlm loss L, nsp loss L" during pretraining, then "pretrained: mlm loss L (floor F),
nsp accuracy A%" on held-out records (F: the loss of predicting with the true chain's probabilities
given both neighbours, a floor no model reaches) and "finetuned: accuracy A%".
"""

import argparse
import os
import random
import shutil
import sys
import tempfile
from typing import Tuple

import numpy as np

import weir as flow
import weir.typing as tp
from weir.data import ofrecord

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bert import BertConfig, bert, classifier_logits, pretraining_losses  # noqa: E402

PAD, CLS, SEP, MASK = 0, 1, 2, 3
FIRST_WORD = 4
WORDS = 60
SEQ = 32
PREDICTIONS = 5
SUCCESSORS = (0.6, 0.3, 0.1)  # the probabilities of each word's three successors
TOPICS = 2
CONFIG = BertConfig(vocab_size=FIRST_WORD + WORDS, hidden_size=64, num_layers=2, num_heads=4, intermediate_size=256,
                    max_position=SEQ, dropout=0.1)


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=os.path.join(os.path.expanduser("~"), ".cache", "weir", "bert-ofrecord"))
    parser.add_argument("--train-examples", type=int, default=32000)
    parser.add_argument("--test-examples", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--steps", type=int, default=800)
    parser.add_argument("--finetune-steps", type=int, default=100)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--seed", type=int, default=0,
                        help="seeds Python's random module, whence the jobs' random ops draw their seeds: a run repeats")
    return parser.parse_args()


def markov_chain(topic):
    """(successors (WORDS, 3) word indices, their probabilities): the topic's random chain over the words."""
    rng = np.random.default_rng(1234 + topic)
    return np.stack([rng.choice(WORDS, 3, replace=False) for _ in range(WORDS)]), np.array(SUCCESSORS)


def walk(chain, length, rng, start=None):
    successors, probabilities = chain
    words = [rng.integers(WORDS) if start is None else start]
    for _ in range(length - 1):
        words.append(successors[words[-1], rng.choice(3, p=probabilities)])
    return words


def pretraining_records(count, seed):
    """OneFlow's BERT pretraining features for `count` sentence pairs."""
    chains = [markov_chain(topic) for topic in range(TOPICS)]
    rng = np.random.default_rng(seed)
    features = {name: np.zeros((count, SEQ), np.int32) for name in ("input_ids", "input_mask", "segment_ids")}
    features.update(masked_lm_positions=np.zeros((count, PREDICTIONS), np.int32),
                    masked_lm_ids=np.zeros((count, PREDICTIONS), np.int32),
                    masked_lm_weights=np.zeros((count, PREDICTIONS), np.float32),
                    next_sentence_labels=np.zeros((count, 1), np.int32))
    for i in range(count):
        first_length, second_length = rng.integers(8, 15, 2)
        topic = rng.integers(TOPICS)
        first = walk(chains[topic], first_length + 1, rng)
        is_random_next = rng.random() < 0.5
        # The second segment continues the first's walk from its held-back last word, or is another topic's.
        if is_random_next:
            second = walk(chains[(topic + rng.integers(1, TOPICS)) % TOPICS], second_length, rng)
        else:
            second = walk(chains[topic], second_length + 1, rng, start=first[-1])[1:]
        first = first[:-1]
        tokens = [CLS] + [FIRST_WORD + w for w in first] + [SEP] + [FIRST_WORD + w for w in second] + [SEP]
        segments = [0] * (len(first) + 2) + [1] * (len(second) + 1)
        words = [p for p, t in enumerate(tokens) if t >= FIRST_WORD]
        positions = np.sort(rng.choice(words, PREDICTIONS, replace=False))
        labels = [tokens[p] for p in positions]
        for p in positions:  # BERT's rule: 80 % [MASK], 10 % a random word, 10 % unchanged
            draw = rng.random()
            tokens[p] = MASK if draw < 0.8 else FIRST_WORD + int(rng.integers(WORDS)) if draw < 0.9 else tokens[p]
        n = len(tokens)
        features["input_ids"][i, :n] = tokens
        features["input_mask"][i, :n] = 1
        features["segment_ids"][i, :n] = segments
        features["masked_lm_positions"][i] = positions
        features["masked_lm_ids"][i] = labels
        features["masked_lm_weights"][i] = 1.0
        features["next_sentence_labels"][i] = int(is_random_next)
    return features


def mlm_floor(count=4000):
    """The masked-LM loss of the chains themselves: for a word inside a walk of a known topic,
    -log P(word | previous, next)."""
    rng = np.random.default_rng(5)
    total = 0.0
    for i in range(count):
        successors, probabilities = markov_chain(i % TOPICS)
        p = np.zeros((WORDS, WORDS))
        p[np.arange(WORDS)[:, None], successors] = probabilities
        a, b, c = walk((successors, probabilities), 3, rng)
        posterior = p[a] * p[:, c]
        total -= np.log(posterior[b] / posterior.sum())
    return total / count


def classification_records(count, seed):
    """Single sentences ([CLS] walk [SEP]) labelled with their topic."""
    chains = [markov_chain(topic) for topic in range(TOPICS)]
    rng = np.random.default_rng(seed)
    features = {name: np.zeros((count, SEQ), np.int32) for name in ("input_ids", "input_mask", "segment_ids")}
    features["label"] = rng.integers(0, TOPICS, (count, 1)).astype(np.int32)
    for i in range(count):
        words = walk(chains[features["label"][i, 0]], int(rng.integers(10, SEQ - 1)), rng)
        tokens = [CLS] + [FIRST_WORD + w for w in words] + [SEP]
        features["input_ids"][i, :len(tokens)] = tokens
        features["input_mask"][i, :len(tokens)] = 1
    return features


def write_dataset(args):
    folders = {}
    for task, make in (("pretrain", pretraining_records), ("classify", classification_records)):
        for split, count, seed, parts in (("train", args.train_examples, 1, 4), ("test", args.test_examples, 2, 1)):
            folder = folders[task, split] = os.path.join(args.data, f"{task}-{split}-{count}")
            if not os.path.exists(ofrecord.part_path(folder, parts - 1)):
                ofrecord.write(folder, make(count, seed), parts=parts)
    return folders


def read(folder, parts, batch, training, features):
    """The named int32 (or masked_lm_weights: float) features of `batch` records, decoded by the job."""
    records = flow.data.ofrecord_reader(folder, batch_size=batch, data_part_num=parts, random_shuffle=training,
                                        shuffle_after_epoch=training)
    shapes = {"masked_lm_positions": (PREDICTIONS,), "masked_lm_ids": (PREDICTIONS,),
              "masked_lm_weights": (PREDICTIONS,), "next_sentence_labels": (1,), "label": (1,)}
    return [flow.data.OFRecordRawDecoder(records, name, shape=shapes.get(name, (SEQ,)),
                                         dtype=flow.float if name == "masked_lm_weights" else flow.int32)
            for name in features]


PRETRAIN_FEATURES = ("input_ids", "input_mask", "segment_ids", "masked_lm_positions", "masked_lm_ids",
                     "masked_lm_weights", "next_sentence_labels")
CLASSIFY_FEATURES = ("input_ids", "input_mask", "segment_ids", "label")


def adamw(lr, steps):
    # OneFlow's BERT recipe: AdamW, weight decay on the matrices only, the rate decaying after a warm-up.
    schedule = flow.optimizer.PolynomialScheduler(lr, steps, end_learning_rate=0.0,
                                                  warmup=flow.optimizer.warmup.linear(max(steps // 10, 1), 0))
    return flow.optimizer.AdamW(schedule, weight_decay=0.01, weight_decay_excludes=["bias", "LayerNorm"],
                                epsilon=1e-6)


def pretrain(args, folders):
    @flow.global_function(type="train")
    def pretrain_job() -> Tuple[tp.Numpy, tp.Numpy]:
        ids, mask, segments, positions, label_ids, weights, nsp_labels = read(
            folders["pretrain", "train"], 4, args.batch, True, PRETRAIN_FEATURES)
        sequence, pooled, words = bert(ids, mask, segments, CONFIG, training=True)
        lm_loss, nsp_loss, _ = pretraining_losses(sequence, pooled, words, positions, label_ids, weights,
                                                  nsp_labels, CONFIG)
        adamw(args.lr, args.steps).minimize(lm_loss + nsp_loss)
        return lm_loss, nsp_loss

    eval_batch = 200

    @flow.global_function(type="predict")
    def pretrain_eval() -> Tuple[tp.Numpy, tp.Numpy, tp.Numpy]:
        ids, mask, segments, positions, label_ids, weights, nsp_labels = read(
            folders["pretrain", "test"], 1, eval_batch, False, PRETRAIN_FEATURES)
        sequence, pooled, words = bert(ids, mask, segments, CONFIG, training=False)
        lm_loss, _, nsp_logits = pretraining_losses(sequence, pooled, words, positions, label_ids, weights,
                                                    nsp_labels, CONFIG)
        return lm_loss, flow.math.argmax(nsp_logits, 1), nsp_labels

    for step in range(args.steps):
        lm_loss, nsp_loss = pretrain_job()
        if step % 50 == 0 or step == args.steps - 1:
            print(f"step {step}: mlm loss {float(lm_loss):.4f}, nsp loss {float(nsp_loss):.4f}", flush=True)
    batches = args.test_examples // eval_batch
    results = [pretrain_eval() for _ in range(batches)]
    lm_loss = np.mean([float(r[0]) for r in results])
    nsp_accuracy = np.mean(np.concatenate([r[1].ravel() == r[2].ravel() for r in results]))
    print(f"pretrained: mlm loss {lm_loss:.4f} (floor {mlm_floor():.4f}), nsp accuracy {100 * nsp_accuracy:.1f}%")


def finetune(args, folders, checkpoint):
    @flow.global_function(type="train")
    def finetune_job() -> tp.Numpy:
        ids, mask, segments, labels = read(folders["classify", "train"], 4, args.batch, True, CLASSIFY_FEATURES)
        _, pooled, _ = bert(ids, mask, segments, CONFIG, training=True)
        loss = flow.math.reduce_mean(flow.nn.sparse_softmax_cross_entropy_with_logits(
            flow.reshape(labels, (args.batch,)), classifier_logits(pooled, TOPICS, CONFIG, training=True)))
        adamw(args.lr / 2, args.finetune_steps).minimize(loss)
        return loss

    eval_batch = 200

    @flow.global_function(type="predict")
    def finetune_eval() -> Tuple[tp.Numpy, tp.Numpy]:
        ids, mask, segments, labels = read(folders["classify", "test"], 1, eval_batch, False, CLASSIFY_FEATURES)
        _, pooled, _ = bert(ids, mask, segments, CONFIG, training=False)
        return flow.math.argmax(classifier_logits(pooled, TOPICS, CONFIG, training=False), 1), labels

    # The pretrained encoder, as a user loads a checkpoint (the pretraining heads' variables stay out).
    flow.load_variables({name: value for name, value in flow.checkpoint.get(checkpoint).items()
                         if name.startswith("bert-")})
    for step in range(args.finetune_steps):
        loss = finetune_job()
        if step % 50 == 0 or step == args.finetune_steps - 1:
            print(f"finetune step {step}: loss {float(loss):.4f}", flush=True)
    results = [finetune_eval() for _ in range(args.test_examples // eval_batch)]
    accuracy = np.mean(np.concatenate([predicted.ravel() == labels.ravel() for predicted, labels in results]))
    print(f"finetuned: accuracy {100 * accuracy:.1f}%")


def main():
    args = parse_args()
    random.seed(args.seed)
    folders = write_dataset(args)
    checkpoint = tempfile.mkdtemp(prefix="bert-pretrained-")
    try:
        pretrain(args, folders)
        shutil.rmtree(checkpoint)  # save wants a path that does not exist (or is empty)
        flow.checkpoint.save(checkpoint)
        flow.clear_default_session()
        finetune(args, folders, checkpoint)
    finally:
        shutil.rmtree(checkpoint, ignore_errors=True)


if __name__ == "__main__":
    main()
