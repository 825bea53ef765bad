#!/usr/bin/env python3
"""Where a call's time goes, from a Weir timeline trace (Session::StopTrace, train_step --trace).

For each job, every call's slices (actor firings; a device act's submission, device work and
completion) in the order they start, with the median over the calls of each slice's duration and of
the gap before it: the time from the end of everything before it in the call to its start, when no
slice of the call was running (a hand-off between threads, a wake-up). Sync calls give a clean
picture; calls in flight together overlap.

    bench/trace_gaps.py run.json
"""
import argparse
import json
import statistics
import sys
from collections import defaultdict


def load_trace(path):
    """(events, calls: job -> call id -> [begin, end] in us, track names: (pid, tid) -> name) of a trace."""
    with open(path, encoding="utf-8") as f:
        events = json.load(f)["traceEvents"]
    calls = defaultdict(dict)
    for e in events:
        if e.get("cat") == "call":
            calls[e["name"]].setdefault(e["id"], [None, None])[0 if e["ph"] == "b" else 1] = e["ts"]
    track_name = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    return events, calls, track_name


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", help="a trace written by Session::StopTrace")
    args = parser.parse_args()
    events, calls, track_name = load_trace(args.trace)
    slices = defaultdict(lambda: defaultdict(list))  # job -> call -> [(start, end, label)]
    for e in events:
        if e["ph"] != "X":
            continue
        track = track_name.get((e["pid"], e["tid"]), "")
        job = next((j for j in calls if track.startswith(j + " ")), None)
        if job is None or e["args"]["call"] not in calls[job]:
            continue
        label = e["name"] + (" [device]" if e["cat"] == "device" else "")
        slices[job][e["args"]["call"]].append((e["ts"], e["ts"] + e["dur"], label))

    if not calls:
        print("trace_gaps: the trace holds no calls", file=sys.stderr)
        return 1
    for job, job_calls in calls.items():
        durations, gaps = defaultdict(list), defaultdict(list)
        order = {}
        totals = []
        for call_id, (begin, end) in job_calls.items():
            if begin is None or end is None:
                continue
            totals.append(end - begin)
            covered = begin
            for rank, (start, stop, label) in enumerate(sorted(slices[job][call_id])):
                order.setdefault(label, rank)
                durations[label].append(stop - start)
                gaps[label].append(max(0.0, start - covered))
                covered = max(covered, stop)
            gaps["(to the call's end)"].append(max(0.0, end - covered))
        print(f"job {job}: {len(totals)} calls, median {statistics.median(totals):.1f} us from launch to completion")
        print(f"  {'slice (in the order they start)':<52} {'gap before us':>14} {'duration us':>12}")
        labels = sorted(durations, key=lambda label: order[label])
        for label in labels + ["(to the call's end)"]:
            duration = f"{statistics.median(durations[label]):12.1f}" if label in durations else f"{'':12}"
            print(f"  {label:<52} {statistics.median(gaps[label]):14.1f} {duration}")
        host = sum(statistics.median(durations[label]) for label in labels if not label.endswith("[device]"))
        device = sum(statistics.median(durations[label]) for label in labels if label.endswith("[device]"))
        gap = sum(statistics.median(gaps[label]) for label in gaps)
        print(f"  medians summed: host slices {host:.1f} us, device {device:.1f} us, gaps {gap:.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
