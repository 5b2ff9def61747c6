"""How far the suite's verdicts can be trusted on this machine, from trials it recorded.

    .venv/bin/python bench/verdicts.py results/RUN [results/OTHER ...]
    .venv/bin/python bench/verdicts.py --live      (as root: runs the live A/A check first)

For every configuration with at least 3 trials in the runs given (a run made with repeats=8 on
one configuration is the natural input):
- the run-to-run CoV of the trial medians (the noise floor of this host);
- the A/A false-difference rate: 4000 simulated A/A comparisons at 2, 3 and 5 repeats a side,
  each side drawn with replacement from the recorded trial medians, judged by the same
  stats.between_runs that `innomatrix compare` uses (target: at most 5 %);
- the minimum detectable effect at 1, 3 and 5 repeats a side: the half-width of the 95 % interval
  that run-to-run noise alone gives (with 1 trial a side there is no verdict at all).

--live is the check beside the simulated pairs: the demo's xfs configurations (variants A and C,
both buffer pools: 4 cells) run five times, unchanged, 3 interleaved repeats each, on the demo
device; `innomatrix noise` on the first three gives the host's floor (OLTP, this server); then
`innomatrix compare` of the last two (A/A across runs, each run's drift from the floor: how many of
the 4 say "differs"), the same for every pair of the five runs (the pairs with one of the first
three share trials with the floor), what the trials alone would have said of each pair, and
every 1-trial-a-side A/A pair of the last two runs, judged by the floor.

Prints the figures; asserts nothing (the known-answer tests are tests/unit/test_stats.py,
tests/unit/test_noise_floor.py and tests/e2e/test_known_answers.py).
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np

import demo_matrix
from innomatrix import frame, report, stats

ROOT = Path(__file__).resolve().parents[1]
LIVE_RUNS = tuple(f"bench-aa-{index}" for index in range(1, 6))
LIVE_KNOBS = ["-e", "filesystems=xfs", "-e", "repeats=3", "-e", "report=false"]

PAIRS = 4000
REPEATS = (2, 3, 5)


def trial_medians(runs: list[str]) -> dict[str, np.ndarray]:
    """Trial medians of every configuration (run and cell without the repeat) with >= 3 trials."""
    pools: dict[str, np.ndarray] = {}
    for run in runs:
        cells = stats.cells(frame.load(run))
        cells = cells[cells["status"] == "ok"]
        for key, group in cells.groupby(["host", "filesystem", "workload", "variant", "bp_size", "threads"]):
            medians = group["throughput_median"].dropna().to_numpy(dtype=np.float64)
            if medians.size >= 3:
                pools[f"{run}: {'/'.join(map(str, key))}"] = medians
    return pools


def false_difference_rate(pool: np.ndarray, repeats: int, rng: np.random.Generator) -> float:
    verdicts = [stats.between_runs(rng.choice(pool, repeats), rng.choice(pool, repeats)) for _ in range(PAIRS)]
    return sum(v.differs for v in verdicts) / PAIRS


def live_aa() -> list[str]:
    """The demo's xfs cells in five runs, unchanged; a floor from the first three, then A/A of
    every pair of runs judged with each run's drift, as `compare` judges two runs."""
    results = ROOT / "results"
    for name in LIVE_RUNS:
        # Without force=true a run already complete runs nothing: delete results/bench-aa-* to measure anew.
        print(f"running {name} (4 configurations x 3 interleaved repeats; finished cells are kept) ...", flush=True)
        demo_matrix.run(*LIVE_KNOBS, "-e", f"run_name={name}")
    runs = [results / name for name in LIVE_RUNS]
    for line in report.noise(*runs[:3]).lines[:2]:
        print(f"  {line}")
    compared = report.compare(runs[3], runs[4])
    print(f"live A/A across runs, 3 repeats a side, {runs[3].name} / {runs[4].name}: {compared.lines[0]}")
    for row in compared.cells.itertuples():
        print(f"  {row.variant} {row.bp_size}: A/A {row.ratio:.3f} (95 % CI {row.ci_low:.3f}-{row.ci_high:.3f}) "
              f"{row.verdict} ({row.interval_from})")
    cells = {run: stats.cells(frame.load(run)) for run in runs}
    ok = {run: table[table["status"] == "ok"] for run, table in cells.items()}
    floors = report.noise_floors.floors_for(runs[4], ["localhost"])
    judged = alone = pairs = 0
    for first, second in itertools.combinations(runs, 2):
        both = stats.compare(ok[first], ok[second], floors_a=floors, floors_b=floors, across_runs=True)
        judged += int(both["differs"].sum())
        alone += int(stats.compare(ok[first], ok[second])["differs"].sum())
        pairs += len(both)
    print(f"live A/A, every pair of the {len(runs)} runs ({pairs} comparisons): 'differs' in {judged} with each run's "
          f"drift from the floor; the trials alone would have said 'differs' in {alone}")
    [floor] = floors.values()
    singles = differs = 0
    for key, group in ok[runs[3]].groupby(["variant", "bp_size"]):
        other = ok[runs[4]][(ok[runs[4]]["variant"] == key[0]) & (ok[runs[4]]["bp_size"] == key[1])]
        for a, b in itertools.product(group["throughput_median"], other["throughput_median"]):
            verdict = stats.between_runs(np.array([a]), np.array([b]), floors=(floor, floor), across_runs=True)
            singles, differs = singles + 1, differs + verdict.differs
    print(f"live A/A, 1 trial a side, {runs[3].name} against {runs[4].name}, judged by the floor: 'differs' in "
          f"{differs} of {singles} pairs ({differs / singles:.1%}; pairs share trials, so this is a check, not a rate)")
    return [str(run) for run in runs]


def main(runs: list[str]) -> int:
    if runs[:1] in (["-h"], ["--help"]):
        print(__doc__.strip())
        return 0
    if runs[:1] == ["--live"]:
        runs = [*live_aa(), *runs[1:]]
    if not runs:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    rng = np.random.default_rng(20131122)
    pools = trial_medians(runs)
    if not pools:
        print("no configuration with 3 or more ok trials in these runs", file=sys.stderr)
        return 1
    for name, pool in pools.items():
        sd_log = float(np.std(np.log(pool), ddof=1))
        print(f"{name}: {pool.size} trials, medians {', '.join(f'{m:.1f}' for m in pool)}")
        print(f"  run-to-run CoV of the median: {stats.log_cov(sd_log):.1%} (as compare's noise floor computes it)")
        rates = ", ".join(f"{r} repeats {false_difference_rate(pool, r, rng):.1%}" for r in REPEATS)
        print(f"  A/A 'differs' in {PAIRS} simulated pairs: {rates}")
        effects = ", ".join(f"{r} repeats " + ("no verdict" if r < 2 else f"±{stats.minimum_detectable_effect(sd_log, r):.1%}")
                            for r in (1, 3, 5))
        print(f"  minimum detectable effect: {effects}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
