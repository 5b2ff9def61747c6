"""Figures for the untrusted-tree issue (#27): the results-tree fuzzer at length.

Damages a copy of a real demo run (tests/fixtures/report/real-demo) once per case, every kind of
damage in turn with its own seed, runs `innomatrix report` on it in this process and judges the
outcome by the property in bench/fuzz.py. Prints, per class of damage, how many
cases ended in a one-line error, a marked trial, figures equal to the clean tree's, or (for damage
a real collector could have written too) the weaker property; then every case that broke it, with
its seed to replay. `make test` runs a few hundred of these (tests/unit/test_fuzz_report.py); this
runs as many as you ask, with the report's figures drawn in every case unless --no-plots.

    .venv/bin/python bench/fuzz_report.py [--cases 2000] [--first-seed 0] [--no-plots] [--source RUN]
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import time
from pathlib import Path


import fuzz  # beside this script


def classify(case: fuzz.Case, outcome: fuzz.Outcome, baseline) -> str:
    if outcome.code == 2:
        return "error"
    cells = outcome.cells.set_index("trial")
    if any(trial not in baseline.index or (row["flagged"] and row["flags"] != baseline.loc[trial, "flags"])
           for trial, row in cells.iterrows()):
        return "marked"
    return "possible" if case.possible else "equal"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--no-plots", action="store_true", help="skip drawing the report's figures (10x faster)")
    parser.add_argument("--source", type=Path, default=fuzz.REAL_DEMO, help="the clean run to damage")
    args = parser.parse_args(argv)
    if args.no_plots:
        from innomatrix.report import plots
        plots.report_plots = lambda *_: []
    kinds = fuzz.every_kind()
    tally: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    broken = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="innomatrix-fuzz-") as scratch:
        clean, outside = fuzz.prepare(Path(scratch) / "clean", args.source)
        baseline_outcome = fuzz.run_report(clean, outside)
        if baseline_outcome.code != 0:
            print(f"the clean tree does not report: {baseline_outcome.err}", file=sys.stderr)
            return 1
        baseline = baseline_outcome.cells.set_index("trial")
        for number in range(args.cases):
            seed = args.first_seed + number
            kind = kinds[seed % len(kinds)]
            run, outside = fuzz.prepare(Path(scratch) / f"case-{seed}", args.source)
            case = fuzz.mutate(run, outside, seed, kind)
            try:
                outcome = fuzz.run_report(run, outside)
            except Exception as exc:  # a traceback is a broken property, not the end of the bench
                broken.append((case, [f"traceback: {type(exc).__name__}: {exc}"]))
                tally[kind]["traceback"] += 1
                continue
            found = fuzz.violations(case, outcome, baseline, run)
            tally[kind]["broken" if found else classify(case, outcome, baseline)] += 1
            if found:
                broken.append((case, found))
            fuzz.cleanup(Path(scratch) / f"case-{seed}")
    columns = ("error", "marked", "equal", "possible", "broken", "traceback")
    print(f"{'damage':<18}" + "".join(f"{name:>10}" for name in columns))
    for group, members in fuzz.CLASSES.items():
        for kind in members:
            print(f"{group + '/' + kind:<18}" + "".join(f"{tally[kind][name]:>10}" for name in columns))
    total = collections.Counter()
    for counts in tally.values():
        total.update(counts)
    print(f"{'all':<18}" + "".join(f"{total[name]:>10}" for name in columns))
    print(f"{args.cases} cases in {time.monotonic() - started:.0f} s; {len(broken)} broke the property")
    for case, found in broken[:50]:
        print(f"  {case}: {'; '.join(found)}")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
