"""Figure for the report issue: seconds per million interval lines loaded into the frame,
against `grep -c .` over the same files (target: at most 10 times grep).

Builds a synthetic run of 100 trials × 3600 intervals in a temporary directory, with files the
size a real one-hour trial at a 1 s interval leaves (driver.log, vmstat.log, iostat.json,
status.log: see bench/synth.py), then times, with the page cache warm for both:
    grep -c . <every driver.log, vmstat.log, iostat.json and status.log>
    innomatrix.frame.load(run)
Prints the figures, each run's wall time, and where one process spends its CPU time (each file's
reader over every trial, then assembling the frame); asserts nothing.

    .venv/bin/python bench/report_speed.py [--trials 100] [--intervals 3600] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path


from innomatrix import frame
from innomatrix.frame import TRIAL_FILES
from innomatrix.parse import fast_sysbench, iostat, status, vmstat
from synth import Trial, ramp, write_trial


def build(run: Path, trials: int, intervals: int) -> list[Path]:
    cells = [(fs, variant, bp, threads) for fs in ("ext4", "xfs") for variant in ("A", "B", "C", "D")
             for bp in ("4G", "13G", "25G", "50G", "75G") for threads in (32, 64, 128)]
    directories = []
    for index in range(trials):
        fs, variant, bp, threads = cells[index % len(cells)]
        trial = Trial(tps=ramp(600, intervals - 600, level=1500.0 + 10 * index, seed=index), filesystem=fs,
                      variant=variant, bp_size=bp, threads=threads, repeat=1 + index // len(cells),
                      warmup_s=1800, seed=index)
        directories.append(write_trial(run, trial))
    return directories


def timed(function, repeat: int = 3) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds (this process and its children) of each of `repeat` runs; the cache is warm."""
    walls, cpus = [], []
    for _ in range(repeat):
        before = os.times()
        started = time.perf_counter()
        function()
        walls.append(time.perf_counter() - started)
        after = os.times()
        cpus.append(sum(after[:4]) - sum(before[:4]))
    return walls, cpus


def stages(run: Path, directories: list[Path]) -> dict[str, float]:
    """CPU seconds of each part of a one-process load: each file's reader over every trial, then assembly."""
    readers = {
        "driver.log": lambda d: fast_sysbench.parse_output_columns((d / "driver.log").read_text(errors="replace")),
        "vmstat.log": lambda d: vmstat.read(d / "vmstat.log"),
        "iostat.json": lambda d: iostat.read(d / "iostat.json"),
        "status.log": lambda d: status.read(d / "status.log", frame.STATUS_COUNTERS + frame.STATUS_GAUGES),
    }
    spent = {}
    for name, reader in readers.items():
        started = time.process_time()
        for directory in directories:
            reader(directory)
        spent[name] = time.process_time() - started
    loaded = [frame.load_trial(directory, run) for directory in directories]
    started = time.process_time()
    frame.assemble(run, loaded)
    spent["assembly"] = time.process_time() - started
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--intervals", type=int, default=3600)
    parser.add_argument("--repeat", type=int, default=3, help="timed runs of each (median reported)")
    parser.add_argument("--keep", type=Path, help="build the tree here and keep it")
    args = parser.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="imx-report-speed-"))
    run = base / "speed"
    try:
        started = time.perf_counter()
        directories = build(run, args.trials, args.intervals)
        built_s = time.perf_counter() - started
        files = [str(d / name) for d in directories for name in TRIAL_FILES]
        lines = sum(Path(f).read_bytes().count(b"\n") for f in files)
        size = sum(os.path.getsize(f) for f in files)
        per_file = {name: sum(os.path.getsize(d / name) for d in directories) / len(directories) for name in TRIAL_FILES}
        grep = ["grep", "-c", ".", *files]
        subprocess.run(grep, check=True, capture_output=True)  # warm the page cache
        load_before = os.getloadavg()[0]
        # stdout must be read: GNU grep stops at the first match when its output is /dev/null.
        grep_walls, grep_cpus = timed(lambda: subprocess.run(grep, check=True, capture_output=True), args.repeat)
        rows = []
        one_walls, one_cpus = timed(lambda: rows.append(len(frame.load(run, workers=1).intervals)), args.repeat)
        auto = min(os.cpu_count() or 1, 8) if len(directories) >= frame.PARALLEL_FROM else 1
        auto_walls, _ = timed(lambda: rows.append(len(frame.load(run).intervals)), args.repeat)
        load_after = os.getloadavg()[0]
        spent = stages(run, directories)
        grep_wall, grep_cpu = statistics.median(grep_walls), statistics.median(grep_cpus)
        million = lines / 1e6
        print(f"tree: {args.trials} trials × {args.intervals} intervals, {len(files)} files, {size / 2**20:,.0f} MiB, "
              f"{lines:,} lines (built in {built_s:.0f} s)")
        print("mean file size per trial: " + ", ".join(f"{n} {s / 2**20:.2f} MiB" for n, s in per_file.items()))
        print(f"frame: {rows[-1]:,} rows (one per interval per metric per trial)")
        print(f"load average before timing: {load_before:.1f} on {os.cpu_count()} CPUs (after: {load_after:.1f}); "
              f"median of {args.repeat} warm runs each; LANG={os.environ.get('LANG', '')!r}")
        print(f"{'':34}{'wall s':>8}{'s/M lines':>11}{'× grep':>8}   {'CPU s':>7}{'× grep':>8}   wall s of each run")
        one_cpu = statistics.median(one_cpus)
        for name, walls, cpu in (("grep -c .", grep_walls, grep_cpu), ("frame.load, 1 process", one_walls, one_cpu),
                                 (f"frame.load, {auto} worker processes", auto_walls, None)):
            wall = statistics.median(walls)
            cpu_text = f"{cpu:7.2f}{cpu / grep_cpu:7.1f}×" if cpu is not None else f"{'–':>7}{'':8}"
            runs = ", ".join(f"{run_wall:.2f}" for run_wall in walls)
            print(f"{name:34}{wall:8.2f}{wall / million:11.3f}{wall / grep_wall:7.1f}×   {cpu_text}   {runs}")
        print("target: frame.load ≤ 10 × grep per million lines")
        if auto > 1:
            print("(the first run with workers also starts the server they are forked from, once per process)")
        print("CPU s of one process by stage: " + ", ".join(f"{name} {seconds:.2f}" for name, seconds in spent.items())
              + f" (frame.load, 1 process: {one_cpu:.2f} in all)")
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
