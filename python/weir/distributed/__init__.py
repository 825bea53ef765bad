"""Running one Weir script on several processes and machines.

`weir.distributed.launch` (also the `weir-launch` command) starts the processes, torchrun-style;
see its docstring and docs/distributed.md. Sessions do not span processes yet: the control plane
(src/distributed) exists but no session joins it and there are no Gloo collectives, so each launched
process runs its own one-process session and says so once (issue 11).

This package imports nothing, so `python -m weir.distributed.launch` runs launch.py once, as
__main__, and the launcher needs only the standard library.
"""
