#!/usr/bin/python3
"""Where a program's GPU time goes, from Nsight Compute's per-kernel durations: each kernel name's
launches and total time, longest first, with each name's launches divided by --per (the steps run)
for a per-step figure.

    ncu --clock-control none --metrics gpu__time_duration.sum --csv --log-file k.csv PROGRAM ...
    python3 bench/kernel_times.py k.csv [--per STEPS] [--top N]

scripts/gpu-check.sh runs it on the MNIST MLP's and LeNet's train steps, Weir's and PyTorch's.
"""
import argparse
import csv
import collections
import sys


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", help="ncu --csv --log-file output")
    parser.add_argument("--per", type=float, default=1.0, help="divide launches and time by this (steps run)")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    with open(args.log, newline="") as f:
        # ncu writes its own lines (==PROF== ...) before the CSV header.
        lines = [line for line in f if line.startswith('"')]
    rows = csv.DictReader(lines)
    launches = collections.Counter()
    nanos = collections.Counter()
    for row in rows:
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        value = float(row["Metric Value"].replace(",", ""))
        unit = row.get("Metric Unit", "nsecond")
        scale = {"nsecond": 1.0, "usecond": 1e3, "msecond": 1e6, "second": 1e9}.get(unit, 1.0)
        name = row["Kernel Name"][:90]
        launches[name] += 1
        nanos[name] += value * scale
    if not nanos:
        sys.exit(f"kernel_times: no gpu__time_duration.sum rows in {args.log}")
    total = sum(nanos.values())
    print(f"{'us/step':>9} {'launches/step':>14}  kernel ({sum(launches.values())} launches, "
          f"{total / 1e3 / args.per:.1f} us per step in all)")
    for name, ns in nanos.most_common(args.top):
        print(f"{ns / 1e3 / args.per:>9.1f} {launches[name] / args.per:>14.1f}  {name}")


if __name__ == "__main__":
    main()
