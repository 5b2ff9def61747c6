"""Figures for the untrusted-tree issue (#27): the memory `innomatrix report` takes on large driver logs.

Builds, in a temporary directory, one-trial runs (sysbench OLTP at a 1 s interval, written by
bench/synth.py) and runs `innomatrix report` on each as a process of its own,
printing its exit, wall time and peak resident memory (the kernel's high-water mark, ru_maxrss):
  - a small trial (60 intervals): what Python, pandas and matplotlib take before any log;
  - the same trial with its driver.log made a 256 MB and a 2 GB sparse file: far more than a
    60-second trial can write, refused before it is read;
  - a long trial whose driver.log is within its budget (--intervals, default 500 000: a six-day
    trial, ~80 MB of log): read, and its memory above the small trial's ÷ the log's size.

    .venv/bin/python bench/report_memory.py [--intervals 500000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


from synth import Trial, steady, write_trial  # beside this script

INNOMATRIX = [sys.executable, "-m", "innomatrix.cli"]


def report(run: Path) -> tuple[int, float, int, str]:
    """Exit, wall seconds, peak RSS in bytes and the last line of stderr of `innomatrix report RUN`."""
    started = time.monotonic()
    # ru_maxrss of the children is the largest of any child so far: one fresh process per measure.
    probe = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
             "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); "
             "print((r.stderr.strip().splitlines() or [''])[-1])")
    done = subprocess.run([sys.executable, "-c", probe, *INNOMATRIX, "report", str(run)], capture_output=True,
                          text=True, check=True)
    first, last = (done.stdout.splitlines() + [""])[:2]
    code, peak_kib = (int(word) for word in first.split())
    return code, time.monotonic() - started, peak_kib * 1024, last


def trial(run: Path, intervals: int) -> Path:
    directory = write_trial(run, Trial(tps=steady(intervals, 1500.0, 0.05), warmup_s=10, files=("driver.log",)))
    return directory / "driver.log"


def sparse(log: Path, size: int) -> None:
    with open(log, "r+b") as handle:
        handle.truncate(size)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--intervals", type=int, default=500_000)
    parser.add_argument("--keep", type=Path, help="build the runs here and keep them")
    args = parser.parse_args(argv)
    scratch = args.keep or Path(tempfile.mkdtemp(prefix="innomatrix-memory-"))
    try:
        rows = []
        small = scratch / "small"
        small_log = trial(small, 60)
        code, wall, base, _ = report(small)
        rows.append(("60-interval trial", small_log.stat().st_size, code, wall, base, ""))
        for label, size in (("256 MB sparse driver.log", 256 << 20), ("2 GB sparse driver.log", 2 << 30)):
            run = scratch / label.split()[0]
            sparse(trial(run, 60), size)
            rows.append((label, size, *report(run)))
        long_run = scratch / "long"
        log = trial(long_run, args.intervals)
        rows.append((f"{args.intervals}-interval trial", log.stat().st_size, *report(long_run)))
        print(f"{'run':<28}{'log':>10}{'exit':>6}{'wall s':>9}{'peak RSS':>11}  last line")
        for label, size, code, wall, peak, last in rows:
            print(f"{label:<28}{size / (1 << 20):>8.0f}MB{code:>6}{wall:>9.1f}{peak / (1 << 20):>9.0f}MB  {last[:110]}")
        size, peak = rows[-1][1], rows[-1][4]
        print(f"long trial: {(peak - base) / (1 << 20):.0f} MB above the small trial's {base / (1 << 20):.0f} MB "
              f"for a {size / (1 << 20):.0f} MB log: {(peak - base) / size:.1f} × its size")
    finally:
        if args.keep is None:
            shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
