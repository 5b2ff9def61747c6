"""How far the suite's verdicts can be trusted on this machine, from trials it recorded.

    .venv/bin/python bench/verdicts.py results/RUN [results/OTHER ...]

For every configuration with at least 3 trials in the runs given (a run made with repeats=8 on
one configuration is the natural input):
- the run-to-run CoV of the trial medians (the noise floor of this host);
- the A/A false-difference rate: 4000 simulated A/A comparisons at 2, 3 and 5 repeats a side,
  each side drawn with replacement from the recorded trial medians, judged by the same
  stats.between_runs that `innomatrix compare` uses (target: at most 5 %);
- the minimum detectable effect at 1, 3 and 5 repeats a side: the half-width of the 95 % interval
  that run-to-run noise alone gives (with 1 trial a side there is no verdict at all).

Prints the figures; asserts nothing (the known-answer tests are tests/unit/test_stats.py and
tests/e2e/test_verdicts.py).
"""

from __future__ import annotations

import sys

import numpy as np

from innomatrix import frame, stats

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


def main(runs: list[str]) -> int:
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
