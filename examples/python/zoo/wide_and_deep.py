"""Wide & Deep (Cheng et al., 2016) for click-through prediction, in OneFlow's job-function API, as
OneFlow's ClickThroughRate program lays it out: dense fields, wide sparse (crossed) fields and deep
sparse fields read from OFRecord files by the job itself; the wide part a linear model over the wide
ids (a gather and a sum), the deep part embeddings of the deep ids and the dense fields through an MLP;
the logit their sum; sigmoid cross-entropy; LazyAdam (rows without a gradient stay as they are).

The data is synthetic click data: a hidden logistic model over the same kinds of fields draws the
labels, so a model that learns it is measured by AUC on held-out records (the hidden model's own AUC
is printed as the ceiling). Records are written once into --data with weir.data.ofrecord.

  python examples/python/zoo/wide_and_deep.py --steps 500
Prints "auc: <value> (ceiling <value>)".
"""

import argparse
import os
import random
from typing import Tuple

import numpy as np

import weir as flow
import weir.typing as tp
from weir.data import ofrecord

DENSE_FIELDS = 13
WIDE_FIELDS = 2
DEEP_FIELDS = 26
WIDE_VOCAB = 2000
DEEP_VOCAB = 2600  # 100 ids per deep field
EMBEDDING = 16


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=os.path.join(os.path.expanduser("~"), ".cache", "weir", "wdl-ofrecord"))
    parser.add_argument("--train-examples", type=int, default=128000)
    parser.add_argument("--test-examples", type=int, default=8000)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--lr", type=float, default=0.005)
    parser.add_argument("--seed", type=int, default=0,
                        help="seeds Python's random module, whence the jobs' random ops draw their seeds: a run repeats")
    return parser.parse_args()


def synthetic_clicks(count, seed):
    """Fields and the labels a hidden logistic model draws from them, and that model's probabilities."""
    hidden = np.random.default_rng(1234)  # the same hidden model for every split
    dense_w = hidden.normal(0, 0.3, DENSE_FIELDS)
    wide_w = hidden.normal(0, 1.0, WIDE_VOCAB)
    deep_w = hidden.normal(0, 0.5, DEEP_VOCAB)
    rng = np.random.default_rng(seed)
    dense = rng.normal(0, 1, (count, DENSE_FIELDS)).astype(np.float32)
    wide = rng.integers(0, WIDE_VOCAB, (count, WIDE_FIELDS)).astype(np.int32)
    # Deep ids: field f draws from its own 100 ids, the small ones more often (Zipf-like).
    ranks = np.minimum((rng.pareto(1.2, (count, DEEP_FIELDS)) * 10).astype(np.int64), 99)
    deep = (np.arange(DEEP_FIELDS) * 100 + ranks).astype(np.int32)
    logit = dense @ dense_w + wide_w[wide].sum(1) + deep_w[deep].sum(1) * 0.5 - 1.0
    probability = 1 / (1 + np.exp(-logit))
    labels = (rng.uniform(size=count) < probability).astype(np.int32)
    return {"dense_fields": dense, "wide_sparse_fields": wide, "deep_sparse_fields": deep, "labels": labels}, probability


def auc(labels, scores):
    """The area under the ROC curve: the chance a random positive outscores a random negative."""
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    positives = labels.astype(bool)
    n_pos, n_neg = positives.sum(), (~positives).sum()
    return (ranks[positives].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def write_dataset(args):
    folders = {}
    ceiling = None
    for split, count, seed, parts in (("train", args.train_examples, 1, 4), ("test", args.test_examples, 2, 1)):
        folder = folders[split] = os.path.join(args.data, f"{split}-{count}")
        features, probability = synthetic_clicks(count, seed)
        if split == "test":
            ceiling = auc(features["labels"], probability)
        if not os.path.exists(ofrecord.part_path(folder, parts - 1)):
            ofrecord.write(folder, features, parts=parts)
    return folders["train"], folders["test"], ceiling


def read(folder, parts, batch, training):
    records = flow.data.ofrecord_reader(folder, batch_size=batch, data_part_num=parts, random_shuffle=training,
                                        shuffle_after_epoch=training)
    decode = flow.data.OFRecordRawDecoder
    return (decode(records, "labels", shape=(1,), dtype=flow.int32),
            decode(records, "dense_fields", shape=(DENSE_FIELDS,), dtype=flow.float),
            decode(records, "wide_sparse_fields", shape=(WIDE_FIELDS,), dtype=flow.int32),
            decode(records, "deep_sparse_fields", shape=(DEEP_FIELDS,), dtype=flow.int32))


def wide_and_deep(dense, wide_ids, deep_ids):
    """Logits (batch, 1)."""
    wide_weight = flow.get_variable("wide_weight", shape=(WIDE_VOCAB, 1), dtype=flow.float,
                                    initializer=flow.zeros_initializer())
    wide = flow.math.reduce_sum(flow.gather(wide_weight, wide_ids), axis=[1])  # (batch, 1)
    embedding = flow.get_variable("deep_embedding", shape=(DEEP_VOCAB, EMBEDDING), dtype=flow.float,
                                  initializer=flow.random_uniform_initializer(-0.05, 0.05))
    deep = flow.reshape(flow.gather(embedding, deep_ids), (deep_ids.shape[0], DEEP_FIELDS * EMBEDDING))
    deep = flow.concat([deep, dense], axis=1)
    init = flow.glorot_uniform_initializer()
    for i, units in enumerate((256, 128)):
        deep = flow.layers.dense(deep, units, activation=flow.nn.relu, kernel_initializer=init, name=f"fc{i}")
    deep = flow.layers.dense(deep, 1, kernel_initializer=init, name="deep_out")
    return wide + deep


def main():
    args = parse_args()
    random.seed(args.seed)
    train_dir, test_dir, ceiling = write_dataset(args)

    @flow.global_function(type="train")
    def train() -> tp.Numpy:
        labels, dense, wide, deep = read(train_dir, 4, args.batch, True)
        logits = wide_and_deep(dense, wide, deep)
        loss = flow.nn.sigmoid_cross_entropy_with_logits(labels=flow.cast(labels, flow.float), logits=logits)
        loss = flow.math.reduce_mean(loss)
        flow.optimizer.LazyAdam(flow.optimizer.PiecewiseConstantScheduler([], [args.lr])).minimize(loss)
        return loss

    eval_batch = 1000

    @flow.global_function(type="predict")
    def evaluate() -> Tuple[tp.Numpy, tp.Numpy]:
        labels, dense, wide, deep = read(test_dir, 1, eval_batch, False)
        return flow.math.sigmoid(wide_and_deep(dense, wide, deep)), labels

    for step in range(args.steps):
        loss = train()
        if step % 50 == 0 or step == args.steps - 1:
            print(f"step {step}: loss {float(loss):.4f}", flush=True)
    scores, labels = zip(*(evaluate() for _ in range(args.test_examples // eval_batch)))
    print(f"auc: {auc(np.concatenate(labels).ravel(), np.concatenate(scores).ravel()):.4f} (ceiling {ceiling:.4f})")


if __name__ == "__main__":
    main()
