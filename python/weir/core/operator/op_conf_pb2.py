"""The constants of OneFlow's ``op_conf.proto`` that its model programs import
(``import oneflow.core.operator.op_conf_pb2 as op_conf_util``): the activation types, which BERT's and
the CNNs' helper functions take as default arguments and compare, and the initializer distributions.
They are plain ints in OneFlow's enum order; no Weir API takes them (Weir's layers take an activation
function, e.g. ``activation=flow.math.relu``)."""

__all__ = ["kNone", "kTanH", "kSigmoid", "kRelu", "kLeakyRelu", "kTruncatedNormal", "kRandomNormal", "kRandomUniform"]

# ActivationType
kNone = 0
kTanH = 1
kSigmoid = 2
kRelu = 3
kLeakyRelu = 4

# RandomDistribution (variance-scaling initializers)
kRandomUniform = 0
kRandomNormal = 1
kTruncatedNormal = 2
