"""Where OneFlow's programs import protobuf definitions from (``oneflow.core``): the names they use."""
