#!/usr/bin/env python3
"""Where a call's device time goes, op type by op type, from a Weir timeline trace (Session::StopTrace,
train_step --trace) of a session run with an actor per kernel (train_step --no-stream-graphs; with
stream graphs a stream's kernels are one actor).

For each job: the calls' median wall time; per op type, how many actors of that type fired per call and
their device time per call, its share of the summed device time, and the mean per actor; then the --top
actors by device time. An act's device time is its device slice (from the end of its submission to the
stream's poller seeing its event complete) less the part that overlaps the acts queued before it on
the same stream: a stream runs its work in order, so what is left is the act's own run (plus a few
microseconds of completion latency).

    bench/trace_ops.py run.json [--top N]
"""
import argparse
import statistics
from collections import defaultdict

from trace_gaps import load_trace


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", help="a trace written by Session::StopTrace")
    parser.add_argument("--top", type=int, default=15, help="actors to list by device time")
    args = parser.parse_args()
    events, calls, track_name = load_trace(args.trace)
    by_type = defaultdict(lambda: defaultdict(float))  # job -> op type -> device us, all calls
    actors_of_type = defaultdict(lambda: defaultdict(set))  # job -> op type -> actor names
    by_actor = defaultdict(lambda: defaultdict(float))  # job -> actor -> device us, all calls
    per_stream = defaultdict(list)  # (pid, tid) -> device slices
    for e in events:
        if e["ph"] == "X" and e.get("cat") == "device":
            per_stream[(e["pid"], e["tid"])].append(e)
    for stream, slices in per_stream.items():
        track = track_name.get(stream, "")
        job = next((j for j in calls if track.startswith(j + " ")), None)
        if job is None:
            continue
        previous_end = float("-inf")
        for e in sorted(slices, key=lambda e: e["ts"] + e["dur"]):
            end = e["ts"] + e["dur"]
            own = end - max(e["ts"], previous_end)
            previous_end = end
            op_type = e["args"].get("op_type") or e["args"].get("kind", "?")
            by_type[job][op_type] += own
            actors_of_type[job][op_type].add(e["name"])
            by_actor[job][e["name"]] += own

    for job, spans in calls.items():
        walls = [end - begin for begin, end in spans.values() if begin is not None and end is not None]
        if not walls or job not in by_type:
            continue
        count = len(walls)
        total = sum(by_type[job].values()) / count
        print(f"{job}: {count} calls, median {statistics.median(walls) / 1e3:.2f} ms a call; "
              f"device slices {total / 1e3:.2f} ms a call")
        print(f"  {'op type':<28} {'actors':>7} {'ms/call':>9} {'share':>7} {'us/actor':>9}")
        for op_type, us in sorted(by_type[job].items(), key=lambda item: -item[1]):
            actors = len(actors_of_type[job][op_type])
            print(f"  {op_type:<28} {actors:>7} {us / count / 1e3:>9.3f} {us / count / total:>7.1%} "
                  f"{us / count / actors:>9.1f}")
        print(f"  top {args.top} actors:")
        for name, us in sorted(by_actor[job].items(), key=lambda item: -item[1])[:args.top]:
            print(f"    {name:<60} {us / count / 1e3:>9.3f} ms")


if __name__ == "__main__":
    main()
