"""``oneflow.python.framework``: the framework modules OneFlow's programs import by path."""
