"""Running one Weir script on several processes and machines.

`weir.distributed.launch` (also the `weir-launch` command) starts the processes, torchrun-style;
see its docstring and docs/distributed.md. A session started under it (or with its environment
variables, or with flow.env.machine listing several machines) spans every process.

This package imports nothing, so `python -m weir.distributed.launch` runs launch.py once, as
__main__, and the launcher needs only the standard library.
"""
