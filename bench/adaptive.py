"""What warmup=auto and duration=auto save, and what they cost in accuracy (run as root).

    .venv/bin/python bench/adaptive.py record          # the demo's 8 cells, 120 s warmup + 240 s measured
    .venv/bin/python bench/adaptive.py replay [RUN]    # the auto rules applied offline to those intervals
    .venv/bin/python bench/adaptive.py live [PAIRS]    # one demo cell, fixed and auto runs interleaved (ABBA)
    .venv/bin/python bench/adaptive.py headline        # a small matrix the seeds' way and innomatrix's way
    .venv/bin/python bench/adaptive.py coverage [N]    # the duration rule's promise on N AR(1) series a cell

record: the demo matrix (inventory/demo.yml: a dataset 3-6 times the buffer pool) with a long fixed
warmup and duration; every trial starts cold (the dataset restored, the page cache dropped, a
fresh server), so there is a ramp to find.

replay: per cell, the decisions innomatrix_host.steady takes on the recorded intervals (the code the
host runs), the driver time they save of warmup + duration, the wall time saved (the trial's own
wall time less the driver seconds saved) and |median(auto) - median(full)| / median(full), where
full is the cell's median over its fixed measured part ("full ±": that median's own interval,
as the rule draws it, for scale). The caps are each trial's own fixed warmup and duration,
so RUN may be any run recorded with fixed times. Targets (issue #14): >= 40 % of the wall
time saved, the error <= 2 % on every cell and <= 1 % on the median cell.

live: the same cell measured with fixed times and with auto, in ABBA order, each a run of its
own (runs already recorded are kept: `live 3` after `live 2` adds a pair); prints the wall-time
ratio and the median-throughput ratio of each pair.

headline: two cells (xfs, A, both demo buffer pools) run the seeds' way, a run per buffer-pool
size with the dataset loaded again for each (the bench removes the pristine copy the suite keeps)
and a fixed 50 % warmup (240 s + 240 s), then innomatrix's way, one run that loads once, restores
by reflink and decides warmup and duration (caps 240 s + 240 s, the replay's duration_min 60 s
and precision 1 %). Prints the wall-time ratio (the playbooks' own time, and loads + trials
alone) and each cell's median difference. Targets (issue #14): ratio <= 0.5, largest difference
<= 2 %.

coverage: steady.coverage over AR(1) plateaus (phi 0, 0.5, 0.7, 0.9; 20 to 600 intervals measured;
precision 0.5, 1 and 2 %; N series a cell, default 300): per cell, how often the rule stopped on
precision and, of those stops, how often the median was within the precision of the true one and
the true one inside the reported interval; pooled over all stops.

Prints the figures; asserts nothing (speed is measured here, not tested).
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import demo_matrix
from innomatrix_host import steady
from innomatrix_host.sysbench import parse_output

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results"
FULL_RUN = "bench-adaptive-full"
WARMUP, DURATION = 120, 240
AUTO_RULES = {"duration_min": 60, "precision": 0.01}
AUTO_KNOBS = ["-e", "warmup=auto", "-e", f"warmup_max={WARMUP}", "-e", "duration=auto", "-e", f"duration_max={DURATION}",
              "-e", f"duration_min={AUTO_RULES['duration_min']}", "-e", f"precision={AUTO_RULES['precision']}"]
LIVE_CELL = ["-e", "filesystems=xfs", "-e", "variants=A", "-e", "bp_sizes=16M"]
HEADLINE_BP_SIZES = ("16M", "32M")
HEADLINE_HALF = 240  # the seeds' 3600 s warmup + 3600 s measured, at the demo's scale
MOUNTPOINT = Path("/mnt/innomatrix")  # roles/device/defaults: where the suite keeps the pristine copies
DEMO_DEVICE_FILE = Path("/var/lib/innomatrix/demo-disk.img")  # roles/preflight/defaults: preflight_demo_file


def trials(run: Path) -> dict[str, dict]:
    return {str(path.parent.relative_to(run)): json.loads(path.read_text())
            for path in sorted(run.glob("*/*/oltp/*/bp-*/t*/r[0-9]/trial.json"))}


def ok_trials(name: str) -> dict[str, dict]:
    """A run's trials; the bench ends, naming the cell and its reasons, if one is not ok."""
    found = trials(RESULTS / name)
    for cell, trial in found.items():
        if trial["status"] != "ok":
            sys.exit(f"{name}/{cell}: {trial['status']}: {trial['reasons']}")
    return found


def record() -> None:
    print(f"recording {FULL_RUN}: 8 cells x ({WARMUP} + {DURATION}) s ...", flush=True)
    demo_matrix.run("-e", f"run_name={FULL_RUN}", "-e", f"warmup={WARMUP}", "-e", f"duration={DURATION}")


def replay(run: Path, precisions: tuple[float, ...] = (0.01, 0.02, 0.05)) -> None:
    """Per cell at the default precision, then the run's figures at each precision."""
    recorded = {}
    for cell, trial in trials(run).items():
        if trial["status"] != "ok":
            print(f"{cell}: {trial['status']}, left out")
            continue
        if trial["durations"].get("adaptive"):
            sys.exit(f"{run}/{cell}: measured with auto times; replay needs a recording with fixed ones")
        intervals = parse_output((run / cell / "driver.log").read_text())["intervals"]
        # The recording's own fixed times are the caps: `record`'s 120 + 240 s, or any fixed run's.
        caps = (trial["durations"]["warmup_s"], trial["durations"]["measured_s"])
        recorded[cell.split("/", 1)[1]] = ([float(i["t"]) for i in intervals], [float(i["tps"]) for i in intervals],
                                           trial["wall_s"], caps)
    if not recorded:
        sys.exit(f"{run}: no ok trial to replay; run `bench/adaptive.py record` first")
    all_caps = " or ".join(sorted({f"{warmup:g} + {duration:g} s" for *_, (warmup, duration) in recorded.values()}))
    for precision in precisions:
        errors, saved, walls, givens = [], 0.0, 0.0, 0.0
        if precision == AUTO_RULES["precision"]:
            print(f"{'cell':26} {'warmup':>12} {'measured':>15} {'reached':>7} {'saved':>6} {'of wall':>7} {'full':>7} "
                  f"{'full ±':>6} {'auto':>7} {'error':>6}")
        for cell, (times, values, wall, (warmup, duration)) in recorded.items():
            rules = steady.Rules(report_interval_s=1.0, warmup_s=warmup, duration_s=duration, warmup_auto=True,
                                 duration_auto=True, duration_min_s=AUTO_RULES["duration_min"], precision=precision)
            given = warmup + duration
            fixed_part = [v for t, v in zip(times, values) if t - 1 >= warmup]
            full = statistics.median(fixed_part)
            full_half = steady.batch_median_interval(fixed_part)[1] / full  # the full trial's own interval, as the rule draws it
            decided = steady.replay(times, values, rules)
            auto = statistics.median(decided.measured())
            cell_saved = given - decided.end_s
            errors.append(abs(auto - full) / full)
            saved, walls, givens = saved + cell_saved, walls + wall, givens + given
            if precision == AUTO_RULES["precision"]:
                print(f"{cell:26} {decided.measure_start_s:>5g} {decided.warmup_decided_by:>6} "
                      f"{decided.end_s - decided.measure_start_s:>5g} {decided.ended_by:>9} "
                      f"{'±' + format(decided.half_width, '.1%') if decided.half_width is not None else '-':>7} {cell_saved / given:>6.0%} "
                      f"{cell_saved / wall:>7.0%} {full:>7.1f} {full_half:>6.1%} {auto:>7.1f} {errors[-1]:>6.2%}")
        print(f"precision {precision:.0%}, duration_min {AUTO_RULES['duration_min']} s, caps {all_caps}, "
              f"{len(errors)} cells: wall time saved {saved / walls:.1%} (driver time {saved / givens:.1%}; "
              f"target >= 40 %); error of the median: median cell {statistics.median(errors):.2%} (target <= 1 %), "
              f"largest {max(errors):.2%} (target <= 2 %)")


def live(pairs: int) -> None:
    """ABBA: fixed, auto, auto, fixed, ... each a run of its own (so neither finds the other finished)."""
    order = [kind for index in range(pairs) for kind in (("fixed", "auto") if index % 2 == 0 else ("auto", "fixed"))]
    measured: dict[str, list[tuple[float, float]]] = {"fixed": [], "auto": []}
    for number, kind in enumerate(order, start=1):
        name = f"bench-adaptive-live-{number}-{kind}"
        knobs = AUTO_KNOBS if kind == "auto" else ["-e", f"warmup={WARMUP}", "-e", f"duration={DURATION}"]
        if trials(RESULTS / name):
            print(f"{name}: recorded earlier")  # so a later `live N` adds pairs rather than redoing them
        else:
            print(f"{name} ...", flush=True)
            demo_matrix.run(*LIVE_CELL, *knobs, "-e", f"run_name={name}")
        (trial,) = ok_trials(name).values()
        measured[kind].append((trial["wall_s"], trial["summary"]["throughput_median"]))
        decided = trial["durations"].get("adaptive") or {}
        print(f"  {trial['summary']['throughput_median']:.1f} tps, wall {trial['wall_s']:.0f} s"
              + (f", warmup {decided['measure_start_s']:g} s ({decided['warmup_decided_by']}), measured "
                 f"{decided['end_s'] - decided['measure_start_s']:g} s ({decided['ended_by']})" if decided else ""))
    wall = [a[0] / f[0] for f, a in zip(measured["fixed"], measured["auto"])]
    tput = [a[1] / f[1] for f, a in zip(measured["fixed"], measured["auto"])]
    print(f"\nlive, {pairs} pairs: wall time auto / fixed {', '.join(f'{r:.2f}' for r in wall)} "
          f"(median {statistics.median(wall):.2f}); median tps auto / fixed {', '.join(f'{r:.3f}' for r in tput)} "
          f"(median {statistics.median(tput):.3f})")


def forget_datasets() -> None:
    """The seeds reloaded the dataset for every configuration: drop the copy the suite would reuse,
    on the demo device whether the last run left it mounted or not."""
    if MOUNTPOINT.is_mount():
        shutil.rmtree(MOUNTPOINT / "pristine", ignore_errors=True)
        return
    if not DEMO_DEVICE_FILE.exists():
        return  # the next run makes and formats a new device: nothing to reuse
    attached = subprocess.run(["losetup", "-j", str(DEMO_DEVICE_FILE)], capture_output=True, text=True).stdout
    source = attached.split(":", 1)[0] if attached else str(DEMO_DEVICE_FILE)
    with tempfile.TemporaryDirectory() as where:
        if subprocess.run(["mount", source, where], capture_output=True).returncode == 0:  # loop-mounts a file
            try:
                shutil.rmtree(Path(where) / "pristine", ignore_errors=True)
            finally:
                subprocess.run(["umount", where], check=True)


def timed_matrix(name: str, *extra: str) -> tuple[float, dict[str, dict]]:
    print(f"{name} ...", flush=True)
    started = time.monotonic()
    demo_matrix.run("-e", "filesystems=xfs", "-e", "variants=A", *extra, "-e", f"run_name={name}")
    return time.monotonic() - started, ok_trials(name)


def loads_and_trials(found: dict[str, dict]) -> float:
    """A run's seconds spent loading its dataset (once per key) and in its trials themselves."""
    loads = {trial["dataset"]["key"]: trial["dataset"]["load_s"] for trial in found.values()}
    return sum(loads.values()) + sum(trial["wall_s"] for trial in found.values())


def headline() -> None:
    """The seeds' way (a run per buffer pool, each loading the dataset, 50 % warmup) against innomatrix's."""
    # A run that finds its cells finished runs nothing, and its wall time would mean nothing.
    if earlier := sorted(path.name for path in RESULTS.glob("bench-headline-*")):
        sys.exit(f"{', '.join(earlier)} in {RESULTS} already: delete them to measure anew")
    seeds_wall, seeds_work, seeds = 0.0, 0.0, {}
    for bp_size in HEADLINE_BP_SIZES:
        forget_datasets()
        wall, found = timed_matrix(f"bench-headline-seeds-{bp_size}", "-e", json.dumps({"bp_sizes": [bp_size]}),
                                   "-e", f"warmup={HEADLINE_HALF}", "-e", f"duration={HEADLINE_HALF}")
        seeds_wall, seeds_work = seeds_wall + wall, seeds_work + loads_and_trials(found)
        seeds.update({trial["cell"]["bp_size"]: trial for trial in found.values()})
    forget_datasets()
    ours_wall, found = timed_matrix(
        "bench-headline-innomatrix", "-e", json.dumps({"bp_sizes": list(HEADLINE_BP_SIZES)}), "-e", "warmup=auto",
        "-e", f"warmup_max={HEADLINE_HALF}", "-e", "duration=auto", "-e", f"duration_max={HEADLINE_HALF}",
        "-e", f"duration_min={AUTO_RULES['duration_min']}", "-e", f"precision={AUTO_RULES['precision']}")
    ours_work = loads_and_trials(found)
    ours = {trial["cell"]["bp_size"]: trial for trial in found.values()}
    print(f"\n{'cell':12} {'seeds tps':>9} {'innomatrix tps':>14} {'diff':>7} {'seeds wall':>10} {'ours wall':>9}  decided")
    differences = []
    for bp_size, seed in sorted(seeds.items()):
        mine = ours[bp_size]
        a, b = seed["summary"]["throughput_median"], mine["summary"]["throughput_median"]
        differences.append(abs(b - a) / a)
        decided = mine["durations"]["adaptive"]
        print(f"xfs/A/{bp_size:6} {a:>9.1f} {b:>14.1f} {(b - a) / a:>+7.2%} {seed['wall_s']:>9.0f}s {mine['wall_s']:>8.0f}s  "
              f"warmup {decided['measure_start_s']:g} s ({decided['warmup_decided_by']}), measured "
              f"{decided['end_s'] - decided['measure_start_s']:g} s ({decided['ended_by']})")
    print(f"headline, {len(differences)} cells: wall time innomatrix / seeds {ours_wall / seeds_wall:.2f} "
          f"({ours_wall:.0f} s / {seeds_wall:.0f} s, whole playbooks); loads + trials alone {ours_work / seeds_work:.2f} "
          f"({ours_work:.0f} s / {seeds_work:.0f} s); target <= 0.5. Largest median difference "
          f"{max(differences):.2%} (target <= 2 %)")


def coverage(series: int) -> None:
    table = steady.coverage(phis=(0.0, 0.5, 0.7, 0.9), lengths=(20, 60, 120, 300, 600),
                            precisions=(0.005, 0.01, 0.02), series=series, seed=20261126)
    print(f"{'phi':>4} {'intervals':>9} {'precision':>9} {'stops':>11} {'within':>7} {'inside':>7}")
    for cell in table:
        shown = (f"{cell.within_precision / cell.stops:>7.1%} {cell.inside_interval / cell.stops:>7.1%}"
                 if cell.stops else f"{'-':>7} {'-':>7}")
        print(f"{cell.phi:>4g} {cell.length:>9} {cell.precision:>9.1%} {cell.stops:>5}/{cell.series:<5} {shown}")
    stops = sum(cell.stops for cell in table)
    print(f"pooled over {stops} stops: within the precision {sum(c.within_precision for c in table) / stops:.1%}, "
          f"inside the reported interval {sum(c.inside_interval for c in table) / stops:.1%}")


def main(argv: list[str]) -> int:
    command = argv[0] if argv else "replay"
    if command in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    if command == "record":
        record()
    elif command == "replay":
        replay(Path(argv[1]) if len(argv) > 1 else RESULTS / FULL_RUN)
    elif command == "live":
        live(int(argv[1]) if len(argv) > 1 else 3)
    elif command == "headline":
        headline()
    elif command == "coverage":
        coverage(int(argv[1]) if len(argv) > 1 else 300)
    else:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
