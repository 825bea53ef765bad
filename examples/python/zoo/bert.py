"""BERT (Devlin et al., 2018) in OneFlow's job-function API, laid out as OneFlow's BERT program builds it:
word, position and token-type embeddings summed and layer-normalized; transformer layers of multi-head
self-attention (queries, keys and values as dense layers over the flattened tokens, scores masked by
the input mask) and a gelu feed-forward block, each with dropout, a residual and a layer norm; a tanh
pooler over the first token. The heads: masked-LM (a dense gelu transform, a layer norm, logits against
the word embeddings themselves plus a bias) with next-sentence prediction for pretraining, and a
classifier over the pooled output for fine-tuning. Variables are named "bert-..." (shared by the
pretraining and fine-tuning jobs) and "cls-..." for the heads."""

import math
from dataclasses import dataclass

import weir as flow


@dataclass(frozen=True)
class BertConfig:
    vocab_size: int
    hidden_size: int = 768
    num_layers: int = 12
    num_heads: int = 12
    intermediate_size: int = 3072
    max_position: int = 512
    type_vocab_size: int = 2
    dropout: float = 0.1
    initializer_range: float = 0.02


def _init(config):
    return flow.truncated_normal_initializer(stddev=config.initializer_range)


def _dense(x, units, name, config, activation=None):
    return flow.layers.dense(x, units, activation=activation, kernel_initializer=_init(config), name=name)


def _dropout(x, config, training):
    return flow.nn.dropout(x, rate=config.dropout) if training and config.dropout > 0 else x


def _layer_norm(x, name):
    return flow.layers.layer_norm(x, begin_norm_axis=-1, begin_params_axis=-1, epsilon=1e-12, name=name)


def _embeddings(input_ids, token_type_ids, config, training):
    batch, seq = input_ids.shape
    words = flow.get_variable("bert-embeddings-word_embeddings", shape=(config.vocab_size, config.hidden_size),
                              dtype=flow.float, initializer=_init(config))
    types = flow.get_variable("bert-embeddings-token_type_embeddings",
                              shape=(config.type_vocab_size, config.hidden_size), dtype=flow.float,
                              initializer=_init(config))
    positions = flow.get_variable("bert-embeddings-position_embeddings", shape=(config.max_position, config.hidden_size),
                                  dtype=flow.float, initializer=_init(config))
    x = flow.gather(words, input_ids) + flow.gather(types, token_type_ids)  # (batch, seq, hidden)
    x = x + flow.reshape(flow.slice(positions, [0, 0], [seq, -1]), (1, seq, config.hidden_size))
    return _dropout(_layer_norm(x, "bert-embeddings-LayerNorm"), config, training), words


def _attention(x, mask_addend, batch, seq, config, name, training):
    """Self-attention over x (batch·seq, hidden): heads of hidden / num_heads, scores masked."""
    heads, width = config.num_heads, config.hidden_size // config.num_heads

    def split_heads(t):  # (batch·seq, hidden) -> (batch, heads, seq, width)
        return flow.transpose(flow.reshape(t, (batch, seq, heads, width)), perm=[0, 2, 1, 3])

    query = split_heads(_dense(x, config.hidden_size, f"{name}-query", config))
    key = split_heads(_dense(x, config.hidden_size, f"{name}-key", config))
    value = split_heads(_dense(x, config.hidden_size, f"{name}-value", config))
    scores = flow.matmul(query, key, transpose_b=True, alpha=1.0 / math.sqrt(width)) + mask_addend
    probabilities = _dropout(flow.nn.softmax(scores, axis=-1), config, training)
    context = flow.transpose(flow.matmul(probabilities, value), perm=[0, 2, 1, 3])  # (batch, seq, heads, width)
    return flow.reshape(context, (batch * seq, config.hidden_size))


def _layer(x, mask_addend, batch, seq, config, name, training):
    attention = _attention(x, mask_addend, batch, seq, config, f"{name}-attention-self", training)
    attention = _dropout(_dense(attention, config.hidden_size, f"{name}-attention-output-dense", config), config,
                         training)
    x = _layer_norm(attention + x, f"{name}-attention-output-LayerNorm")
    inner = _dense(x, config.intermediate_size, f"{name}-intermediate-dense", config, activation=flow.math.gelu)
    out = _dropout(_dense(inner, config.hidden_size, f"{name}-output-dense", config), config, training)
    return _layer_norm(out + x, f"{name}-output-LayerNorm")


def bert(input_ids, input_mask, token_type_ids, config, training):
    """(sequence output (batch, seq, hidden), pooled output (batch, hidden), the word embedding table)
    of int32 (batch, seq) ids, mask (1 for tokens, 0 for padding) and token types."""
    batch, seq = input_ids.shape
    x, words = _embeddings(input_ids, token_type_ids, config, training)
    # Padding gets -10000 added to its scores: no attention to it after the softmax.
    mask = flow.reshape(flow.cast(input_mask, flow.float), (batch, 1, 1, seq))
    mask_addend = (mask - 1.0) * 10000.0
    x = flow.reshape(x, (batch * seq, config.hidden_size))
    for layer in range(config.num_layers):
        x = _layer(x, mask_addend, batch, seq, config, f"bert-encoder-layer{layer}", training)
    sequence = flow.reshape(x, (batch, seq, config.hidden_size))
    first = flow.reshape(flow.slice(sequence, [0, 0, 0], [batch, 1, config.hidden_size]), (batch, config.hidden_size))
    pooled = _dense(first, config.hidden_size, "bert-pooler-dense", config, activation=flow.math.tanh)
    return sequence, pooled, words


def pretraining_losses(sequence, pooled, words, positions, label_ids, label_weights, next_sentence_labels, config):
    """(masked-LM loss, next-sentence loss, next-sentence logits (batch, 2)), the losses scalars: the LM
    loss is the weighted mean over the predicted positions (int32 (batch, predictions)) of the cross
    entropy against label_ids."""
    batch, predictions = positions.shape
    seq = sequence.shape[1]
    # The predicted positions' outputs: a one-hot (batch, predictions, seq) times the sequence output.
    picked = flow.matmul(flow.one_hot(positions, depth=seq, dtype=flow.float), sequence)
    picked = flow.reshape(picked, (batch * predictions, config.hidden_size))
    transformed = _layer_norm(_dense(picked, config.hidden_size, "cls-predictions-transform-dense", config,
                                     activation=flow.math.gelu), "cls-predictions-transform-LayerNorm")
    bias = flow.get_variable("cls-predictions-output_bias", shape=(config.vocab_size,), dtype=flow.float,
                             initializer=flow.zeros_initializer())
    logits = flow.nn.bias_add(flow.matmul(transformed, words, transpose_b=True), bias)
    per_prediction = flow.nn.sparse_softmax_cross_entropy_with_logits(
        flow.reshape(label_ids, (batch * predictions,)), logits)
    weights = flow.reshape(label_weights, (batch * predictions,))
    lm_loss = flow.math.reduce_sum(per_prediction * weights) / (flow.math.reduce_sum(weights) + 1e-5)
    nsp_logits = _dense(pooled, 2, "cls-seq_relationship", config)
    nsp_loss = flow.math.reduce_mean(flow.nn.sparse_softmax_cross_entropy_with_logits(
        flow.reshape(next_sentence_labels, (batch,)), nsp_logits))
    return lm_loss, nsp_loss, nsp_logits


def classifier_logits(pooled, classes, config, training):
    """Logits (batch, classes) of the fine-tuning head over the pooled output."""
    return _dense(_dropout(pooled, config, training), classes, "cls-classifier", config)
