"""``oneflow.core.operator``: the op-configuration names OneFlow's programs import."""
