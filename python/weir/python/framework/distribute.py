"""``oneflow.python.framework.distribute``, which DCGAN imports as ``distribute_util``: the same
module as ``flow.distribute``."""

from weir.distribute import *  # noqa: F401,F403 - the module under OneFlow's other path
from weir.distribute import __all__  # noqa: F401
