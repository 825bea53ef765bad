"""Where OneFlow's programs import framework modules from (``oneflow.python``)."""
