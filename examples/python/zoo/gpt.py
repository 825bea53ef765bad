"""GPT (Radford et al., 2018/2019) in OneFlow's job-function API, laid out as OneFlow's GPT program
builds it on one device: token and position embeddings summed; pre-norm transformer layers of causal
multi-head self-attention (queries, keys and values from one dense projection of the sequence, the
scores scaled, the future masked with -inf and softmaxed in flow.math.fused_scale_tril_softmax_dropout)
and a gelu feed-forward block (flow.nn.fused_bias_add_gelu), each added back to the residual stream
through flow.nn.fused_bias_add_dropout; a final layer norm, and logits against the token embeddings
themselves. The projections are flow.matmul of the (batch, seq, hidden) sequence by a 2-D weight, as
OneFlow's GPT multiplies. Variables are named "model-..."."""

import math
from dataclasses import dataclass

import weir as flow


@dataclass(frozen=True)
class GPTConfig:
    vocab_size: int
    seq_length: int
    hidden_size: int = 768
    num_layers: int = 12
    num_heads: int = 12
    dropout: float = 0.1
    initializer_range: float = 0.02


def _weight(name, shape, config, zero=False):
    initializer = flow.zeros_initializer() if zero else flow.random_normal_initializer(stddev=config.initializer_range)
    return flow.get_variable(name, shape=shape, dtype=flow.float, initializer=initializer, parallel_distribution=[])


def _layer_norm(x, name):
    return flow.layers.layer_norm(x, begin_norm_axis=-1, begin_params_axis=-1, epsilon=1e-5, name=name)


def _linear(x, units, name, config):
    """x (batch, seq, in) times a 2-D weight (in, units); its bias is added by the caller's fused op."""
    return flow.matmul(x, _weight(f"{name}-weight", (x.shape[-1], units), config)), _weight(f"{name}-bias", (units,), config,
                                                                                            zero=True)


def _attention(x, config, name, rate):
    batch, seq, hidden = x.shape
    heads, width = config.num_heads, hidden // config.num_heads
    projected, bias = _linear(x, 3 * hidden, f"{name}-query_key_value", config)
    qkv = flow.nn.bias_add(projected, bias, data_format="NHC")

    def head_split(start):  # (batch, seq, hidden) of qkv from `start` -> (batch, heads, seq, width)
        part = flow.slice(qkv, [None, None, start], [None, None, hidden])
        return flow.transpose(flow.reshape(part, (batch, seq, heads, width)), perm=[0, 2, 1, 3])

    query, key, value = head_split(0), head_split(hidden), head_split(2 * hidden)
    scores = flow.matmul(query, key, transpose_b=True)
    weights = flow.math.fused_scale_tril_softmax_dropout(scores, diagonal=0, scale=1.0 / math.sqrt(width),
                                                         fill_value=float("-inf"), rate=rate)
    context = flow.transpose(flow.matmul(weights, value), perm=[0, 2, 1, 3])  # (batch, seq, heads, width)
    out, bias = _linear(flow.reshape(context, (batch, seq, hidden)), hidden, f"{name}-dense", config)
    return flow.nn.fused_bias_add_dropout(out, bias, data_format="NHC", rate=rate)


def _mlp(x, config, name, rate):
    inner, bias = _linear(x, 4 * x.shape[-1], f"{name}-c_fc", config)
    out, bias_out = _linear(flow.nn.fused_bias_add_gelu(inner, bias, data_format="NHC"), x.shape[-1], f"{name}-c_proj",
                            config)
    return flow.nn.fused_bias_add_dropout(out, bias_out, data_format="NHC", rate=rate)


def gpt_logits(tokens, config, training):
    """Logits (batch, seq, vocab) of the next token at each position of int32/int64 tokens (batch, seq)."""
    batch, seq = tokens.shape
    rate = config.dropout if training else 0.0
    words = flow.amp_white_identity(_weight("model-wte", (config.vocab_size, config.hidden_size), config))
    positions = _weight("model-wpe", (config.seq_length, config.hidden_size), config)
    x = flow.gather(words, tokens) + flow.reshape(flow.slice(positions, [0, 0], [seq, -1]), (1, seq, config.hidden_size))
    x = flow.nn.dropout(x, rate=rate) if rate > 0 else x
    for layer in range(config.num_layers):
        name = f"model-h{layer}"
        with flow.experimental.scope.config(checkpointing=False):
            x = x + _attention(_layer_norm(x, f"{name}-ln_1"), config, f"{name}-attn", rate)
            x = x + _mlp(_layer_norm(x, f"{name}-ln_2"), config, f"{name}-mlp", rate)
    x = _layer_norm(x, "model-ln_f")
    return flow.matmul(x, words, transpose_b=True)


def lm_loss(tokens, config, training):
    """The mean cross entropy of predicting tokens[:, 1:] from tokens[:, :-1] (batch, seq + 1), as
    OneFlow's GPT reads its samples, one token longer than the sequence."""
    batch, length = tokens.shape
    inputs = flow.slice(tokens, [None, 0], [None, length - 1])
    labels = flow.slice(tokens, [None, 1], [None, length - 1])
    logits = gpt_logits(inputs, config, training)
    per_token = flow.nn.sparse_softmax_cross_entropy_with_logits(
        flow.reshape(labels, (batch * (length - 1),)), flow.reshape(logits, (batch * (length - 1), config.vocab_size)))
    return flow.math.reduce_mean(per_token)
