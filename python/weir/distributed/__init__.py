"""Running one Weir script on several processes and machines.

`weir.distributed.launch` (also the `weir-launch` command) starts the processes, torchrun-style;
see its docstring and docs/distributed.md. The multi-process runtime itself (rendezvous, Gloo
collectives) is not implemented yet: each launched process runs its own one-process session.

This package imports nothing, so `python -m weir.distributed.launch` runs launch.py once, as
__main__, and the launcher needs only the standard library.
"""
