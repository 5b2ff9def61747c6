"""Latency at fixed rates on the demo's device (issue #32's figures so far; run as root).

    .venv/bin/python bench/fixed_rate.py [REPEATS]     # default 3

One demo configuration (xfs, variant A, 16M buffer pool, 4 threads, sysbench --percentile=99)
is run closed-loop once to find its throughput; then, in a second run, closed-loop and at 25, 50,
75 and 90 % of that throughput and at 150 % of it, REPEATS trials each (interleaved), 10 s warmup
and 30 s measured. Prints, per rate: the tps achieved (median of the trials), how many trials
saturated, p50/p95/p99 of the merged histograms (with the bootstrap interval from 5 trials on), and
beside p99 the median over trials of each trial's median per-interval p99 -- the figure the
closed-loop tables show -- with their ratio: per-interval percentiles of one-second intervals
with a few hundred events each are noisy and ignore how events spread over intervals, so their
median is not the p99 of the events; the merged histogram's is. Also the wall time of the run and
of each trial.

Then, from the report's own tables, the capacity at p99 ≤ 20, 50 and 100 ms: the highest rate met
by the merged histograms and the sure bracket a verdict stands on (every trial met, every trial
missed). `bench/fixed_rate.py capacity` prints only that, from the results already there.

    .venv/bin/python bench/fixed_rate.py search [REPEATS] [SLA_MS]   # default 3 and 20

The capacity search (rates=auto, p99 ≤ SLA_MS) on the same configuration, 4 s warmup and 20 s
measured, REPEATS trials a step: its steps in the order run (rate, whether the merged p99 met the
SLA, the trials' wall time), what the search cost (trials, and the run's wall time beside the
trials'), and the report's capacity and sure bracket at that SLA; beside each step's merged p99 the
median over its trials of their median per-interval p99 (what a closed-loop table would show).
`bench/fixed_rate.py search-figures RUN SLA_MS` prints them again from the results already there.

Prints the figures; asserts nothing (speed is measured here, not tested).
"""

from __future__ import annotations

import json
import statistics
import sys
import time

import demo_matrix
from innomatrix import frame, stats
from innomatrix.report import tables
from innomatrix_host import sysbench

RESULTS = demo_matrix.ROOT / "results"
CELL = "localhost/xfs/oltp/A/bp-16M"
SHARED = ["-e", "filesystems=xfs", "-e", "variants=A", "-e", "bp_sizes=16M", "-e", "oltp_percentile=99"]
FRACTIONS = (0.25, 0.5, 0.75, 0.9, 1.5)


def trial(run: str, load: str, repeat: int) -> dict:
    return json.loads((RESULTS / run / CELL / load / f"r{repeat}" / "trial.json").read_text())


def main() -> None:
    if "--help" in sys.argv[1:]:
        print(__doc__)
        return
    if sys.argv[1:] == ["capacity"]:
        capacity([path.name for path in sorted(RESULTS.glob("bench-rate-*x"))])
        return
    if sys.argv[1:2] == ["search"]:
        search(int(sys.argv[2]) if len(sys.argv) > 2 else 3, float(sys.argv[3]) if len(sys.argv) > 3 else 20.0)
        return
    if sys.argv[1:2] == ["search-figures"]:  # the figures of a search already run: RUN SLA_MS
        search_figures(sys.argv[2], float(sys.argv[3]))
        return
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    demo_matrix.run(*SHARED, "-e", "run_name=bench-rate-closed")
    closed = trial("bench-rate-closed", "t4", 1)["summary"]["throughput_median"]
    rates = sorted({max(1, round(closed * fraction)) for fraction in FRACTIONS})
    run = f"bench-rate-{repeats}x"
    started = time.monotonic()
    demo_matrix.run(*SHARED, "-e", f"run_name={run}", "-e", f"rates={','.join(map(str, rates))}", "-e", f"repeats={repeats}")
    wall = time.monotonic() - started
    print(f"closed-loop: {closed:.1f} tps; rates {rates}; {repeats} trials each; run {wall:.0f} s")
    print(f"{'rate':>6} {'achieved':>9} {'saturated':>9} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms (95 % interval)':>26} "
          f"{'median interval p99':>20} {'ratio':>6} {'trial s':>8}")
    for rate in rates:
        trials = [trial(run, f"t4-rate{rate}", repeat) for repeat in range(1, repeats + 1)]
        ok = [t for t in trials if t["status"] == "ok"]
        histograms = [t["latency_histogram"] for t in ok if t.get("latency_histogram")]
        p50, _, _ = stats.merged_percentile(histograms, 50)
        p95, _, _ = stats.merged_percentile(histograms, 95)
        p99, low, high = stats.merged_percentile(histograms, 99)
        interval_p99 = statistics.median(t["summary"]["latency_p95_ms_median"] for t in ok
                                         if t["summary"]["latency_p95_ms_median"] is not None)
        achieved = statistics.median(t["rate"]["achieved_tps"] for t in ok if t["rate"]["achieved_tps"] is not None)
        saturated = sum(bool((t.get("rate") or {}).get("saturated")) for t in trials)
        shown = f"{p99:.3f}" + (f" ({low:.3f}–{high:.3f})" if low is not None else "")
        print(f"{rate:>6} {achieved:>9.1f} {saturated:>6} of {len(trials)} {p50:>8.3f} {p95:>8.3f} {shown:>26} "
              f"{interval_p99:>20.3f} {p99 / interval_p99:>6.2f} {statistics.median(t['wall_s'] for t in trials):>8.1f}")
    for rate in rates:
        for repeat in range(1, repeats + 1):
            found = trial(run, f"t4-rate{rate}", repeat)
            if (found.get("rate") or {}).get("saturated"):
                print(f"t4-rate{rate}/r{repeat}: {'; '.join(found['rate']['reasons'])}")
    log = sysbench.parse_output((RESULTS / run / CELL / f"t4-rate{rates[0]}" / "r1" / "driver.log").read_text())
    print(f"t4-rate{rates[0]}/r1: checkpoint at {log['checkpoints']} s, histogram of "
          f"{sum(n for _, n in log['histogram'])} events, summary {log['summary']['events']}")
    capacity([run])


def search(repeats: int, sla_ms: float) -> None:
    """rates=auto on the demo configuration: the steps, their cost, and the capacity found."""
    run = f"bench-search-{repeats}x-{sla_ms:g}ms"
    started = time.monotonic()
    demo_matrix.run(*SHARED, "-e", f"run_name={run}", "-e", "rates=auto", "-e", f"sla_ms={sla_ms}",
                    "-e", f"repeats={repeats}", "-e", "warmup=4", "-e", "duration=20")
    search_figures(run, sla_ms)
    print(f"the whole run (load, closed-loop, search, report): {time.monotonic() - started:.0f} s")


def search_figures(run: str, sla_ms: float) -> None:
    """What a capacity search run found: its steps in order, their cost, the capacity."""
    closed = [json.loads(path.read_text()) for path in sorted((RESULTS / run / CELL).glob("t4/r*/trial.json"))
              if path.parent.name[1:].isdigit()]
    repeats = len(closed)
    steps: dict[int, list[dict]] = {}
    for path in sorted((RESULTS / run / CELL).glob("t4-rate*/r*/trial.json")):
        if not path.parent.name[1:].isdigit():  # an earlier attempt kept aside (r1.ok-…)
            continue
        found = json.loads(path.read_text())
        steps.setdefault(found["cell"]["rate"], []).append(found)
    th = stats.Thresholds(sla_ms=sla_ms)
    print(f"closed-loop: {statistics.median(t['summary']['throughput_median'] for t in closed):.1f} tps "
          f"({repeats} trials, {sum(t['wall_s'] for t in closed):.0f} s)")
    order = sorted(steps, key=lambda rate: min(t["times"]["started"] for t in steps[rate]))
    for number, rate in enumerate(order, start=1):
        trials = steps[rate]
        histograms = [t["latency_histogram"] for t in trials if t.get("latency_histogram")]
        p99, _, _ = stats.merged_percentile(histograms, 99)
        behind = sum(bool(t["rate"]["saturated"]) for t in trials)
        met = p99 is not None and p99 <= sla_ms and not behind
        shown = f"{p99:.2f} ms" if p99 is not None else "none kept"
        per_interval = [t["summary"]["latency_p95_ms_median"] for t in trials
                        if t["summary"].get("latency_p95_ms_median") is not None]
        interval_p99 = statistics.median(per_interval) if per_interval else None
        beside = (f"; median per-interval p99 {interval_p99:.2f} ms, merged ÷ it {p99 / interval_p99:.2f}"
                  if interval_p99 and p99 is not None else "")
        print(f"step {number}: {rate}/s {'met' if met else 'missed'} (merged p99 {shown}, {behind} of "
              f"{len(trials)} saturated{beside}), {sum(t['wall_s'] for t in trials):.0f} s of trials")
    every = sum(len(trials) for trials in steps.values())
    print(f"search: {len(steps)} steps, {every} trials ({repeats} a step), "
          f"{sum(t['wall_s'] for ts in steps.values() for t in ts):.0f} s of trials")
    loaded = frame.load(RESULTS / run)
    found = tables.capacity_at_sla(tables.fixed_rate(stats.cells(loaded, th), loaded.histograms, th), th)
    for _, row in found.data.iterrows():
        print(f"capacity at p99 ≤ {sla_ms:g} ms: {row['capacity_tps']} tps (first missed {row['first_missed_tps']}), "
              f"sure {tables.bracket_of(row).describe()}")


def capacity(runs: list[str]) -> None:
    """The report's capacity at three SLAs for each run: the point and the sure bracket."""
    for run in runs:
        loaded = frame.load(RESULTS / run)
        for sla_ms in (20.0, 50.0, 100.0):
            th = stats.Thresholds(sla_ms=sla_ms)
            found = tables.capacity_at_sla(tables.fixed_rate(stats.cells(loaded, th), loaded.histograms, th), th)
            for _, row in found.data.iterrows():
                print(f"{run}: capacity at p99 ≤ {sla_ms:g} ms: {row['capacity_tps']} tps "
                      f"(first missed {row['first_missed_tps']}), sure {tables.bracket_of(row).describe()}")


if __name__ == "__main__":
    main()
