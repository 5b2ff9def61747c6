"""The capacity search (rates=auto): which rate each configuration runs next, from what its
finished trials say.

A configuration's search starts at START_SHARE of its closed-loop throughput (the median of its
ok closed-loop trials' medians: what its threads carry with no latency limit, so a rate beyond it
can only saturate) and bisects: a rate whose trials, merged, meet the SLA (`capacity.point_met`:
the percentile of every measured event within the limit and no trial behind its rate) raises the
bracket's low end, one that misses it lowers the high end; with no rate missed yet the next one
doubles (up to the closed-loop throughput), with none met yet it halves. It stops when the two
ends are within RESOLUTION of the low one (or 1 a second), after `search_steps` rates, or when a
step's trials failed in this pass, and it says which.

Nothing is kept beside the trials: every decision is made again from the results tree, in the
same order, so a search stopped half way (an interrupted run, a search given more steps) resumes
from its finished steps, and a step's trial is the same cell (key, path) as that rate listed in
`rates`. The steps steer the search only: how sure the capacity is, and whether two differ, is
the report's (innomatrix.capacity over every rate run).
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from innomatrix import plan, results, tree

# The first step: this share of the closed-loop throughput.
START_SHARE = 0.5
# Stop when the bracket's ends are this close, as a share of its low end (or 1 transaction a second).
RESOLUTION = 0.1


@dataclass(frozen=True)
class Decision:
    """The next rate to run (None: the search stops) and why."""

    rate: int | None
    reason: str = ""


def next_rate(closed_tps: float, judged: Mapping[int, bool], most_steps: int) -> Decision:
    """The rate after the steps `judged` (rate → met the SLA), starting from `closed_tps`."""
    ceiling = min(plan.MAX_RATE, max(1, round(closed_tps)))
    if not judged:
        return Decision(min(ceiling, max(1, round(closed_tps * START_SHARE))))
    missed = sorted(rate for rate, met in judged.items() if not met)
    high = missed[0] if missed else None
    # A rate met above one missed is noise, not the capacity: the low end lies below the high one.
    low = max((rate for rate, met in judged.items() if met and (high is None or rate < high)), default=None)
    if len(judged) >= most_steps:
        return Decision(None, f"{len(judged)} step(s) run, as many as search_steps allows: {_bracket(low, high)}")
    if high is None:
        if low >= ceiling:
            return Decision(None, f"met up to the closed-loop throughput ({ceiling}/s): capacity ≥ {low}/s")
        rate = min(2 * low, ceiling)
    elif low is None:
        if high <= 1:
            return Decision(None, "missed at 1/s: capacity below 1 transaction a second")
        rate = high // 2
    else:
        if high - low <= max(1.0, RESOLUTION * low):
            return Decision(None, f"resolved to within {RESOLUTION:.0%}: {_bracket(low, high)}")
        rate = (low + high) // 2
    if rate in judged:  # cannot happen with the rules above; never run a rate twice
        return Decision(None, f"{rate}/s already run: {_bracket(low, high)}")
    return Decision(rate)


def _bracket(low: int | None, high: int | None) -> str:
    ends = [f"met at {low}/s" if low is not None else "none met",
            f"missed at {high}/s" if high is not None else "none missed"]
    return ", ".join(ends)


@dataclass(frozen=True)
class Trial:
    """What the search reads of one finished trial."""

    ok: bool
    reason: str = ""
    throughput: float | None = None
    saturated: bool = False
    histogram: list[tuple[float, int]] | None = None
    # ok in the tree, but its files cannot be read: the plan counts it done, the search cannot use it.
    unreadable: bool = False


def _usable_step(trial: Trial | None) -> bool:
    """A step's trial the search can judge: ok, with its histogram (or saturated: missed whatever it kept)."""
    return trial is not None and trial.ok and (trial.histogram is not None or trial.saturated)


def _why_unusable(cell: dict[str, Any], trial: Trial | None) -> str:
    if trial is None:
        return f"{cell['path']}: not recorded"
    return trial.reason if not trial.ok else f"{cell['path']}: kept no latency histogram"


Reader = Callable[[dict[str, Any]], "Trial | None"]


def tree_reader(run_dir: str | Path, finished: Mapping[str, dict[str, Any]]) -> Reader:
    """What the search reads of a cell's trial in the run's tree (`finished`: results.finished)."""
    run = tree.run_root(run_dir) if Path(run_dir).is_dir() else Path(run_dir)
    return lambda cell: _read(run, cell, finished)


def _read(run: Path, cell: dict[str, Any], finished: Mapping[str, dict[str, Any]]) -> Trial | None:
    """A cell's trial as the tree holds it; None when it has none (or one measured with other
    inputs: the step runs it again, the old one kept beside it by the trial module)."""
    seen = finished.get(cell["path"])
    if seen is None:
        return None
    if seen.get("status") != "ok":
        return Trial(False, f"{cell['path']}: {seen.get('status')}")
    if seen.get("key") != cell["key"]:
        return None
    # The report's reader (one parser for a histogram), with pandas: imported when a trial is read,
    # as the plan (and every play's filters) need none of it (nor scipy, in `step`).
    from innomatrix import frame
    from innomatrix.parse import ParseError

    try:
        loaded = frame.load_trial(run / cell["path"], run)
    except (frame.FrameError, ParseError, tree.TreeError, OSError) as exc:
        return Trial(False, str(exc), unreadable=True)
    meta = loaded.meta
    return Trial(True, throughput=meta["recorded_median"], saturated=bool(meta["saturated"]), histogram=loaded.histogram)


def step(searched: dict[str, Any], search: dict[str, Any], read: Reader, tried: Collection[str] = (),
         force: bool = False) -> dict[str, Any]:
    """One configuration's search as far as its finished trials take it: {cells: the next step's
    cells not yet run (none: it stops or waits), line: what it found, open: steps left to run,
    failed: why a step failed, if it did}.

    `tried`: the cells this pass already ran (its planned cells and the steps so far); a step whose
    trial failed (or kept no histogram) in this pass stops the search (run again, it would fail
    again), one that failed before is run again, as any cell is. A closed-loop trial that is ok but
    cannot be read stops it at once (the plan counts it done: nothing would run it again). With
    `force`, a step finished before this pass is measured again."""
    from innomatrix import capacity

    name = searched["configuration"]
    closed = [read(cell) for cell in searched["cells"]]
    if damaged := [trial.reason for trial in closed if trial is not None and trial.unreadable]:
        return {"cells": [], "open": False, "failed": f"{name}: {damaged[0]}",
                "line": f"{name}: no capacity search: a closed-loop trial cannot be read ({damaged[0]})"}
    if any(trial is None or not trial.ok for trial in closed):
        # Still to run (open), or run in this pass and failed: nothing to start from.
        waiting = any(cell["path"] not in tried for cell in searched["cells"])
        return {"cells": [], "open": waiting,
                "line": f"{name}: no capacity search {'yet' if waiting else 'run'}: its closed-loop trials are not all ok"}
    rates = [trial.throughput for trial in closed if trial.throughput]
    if not rates:
        return {"cells": [], "open": False, "line": f"{name}: no capacity search: no closed-loop throughput recorded"}
    closed_tps = statistics.median(rates)
    judged: dict[int, bool] = {}
    steps: list[str] = []
    while True:
        decided = next_rate(closed_tps, judged, search["steps"])
        if decided.rate is None:
            return {"cells": [], "open": False, "line": _line(name, closed_tps, steps, f"stopped: {decided.reason}")}
        cells = [plan.at_rate(cell, decided.rate, cell["repeat"]) for cell in searched["cells"]]
        trials = [None if force and cell["path"] not in tried else read(cell) for cell in cells]
        failed = [_why_unusable(cell, trial) for cell, trial in zip(cells, trials)
                  if cell["path"] in tried and not _usable_step(trial)]
        if failed:
            return {"cells": [], "open": False, "failed": f"{name}: {decided.rate}/s failed ({failed[0]})",
                    "line": _line(name, closed_tps, steps, f"stopped: {decided.rate}/s failed ({failed[0]})")}
        todo = [cell for cell, trial in zip(cells, trials) if not _usable_step(trial)]
        if todo:
            return {"cells": todo, "open": True, "line": _line(name, closed_tps, steps, f"next {decided.rate}/s")}
        saturated = any(trial.saturated for trial in trials)
        met, at_sla = capacity.point_met([trial.histogram or [] for trial in trials], saturated,
                                         search["sla_percentile"], search["sla_ms"])
        judged[decided.rate] = met
        latency = f"p{search['sla_percentile']:g} {at_sla:.3g} ms" if at_sla is not None else "no events"
        steps.append(f"{decided.rate}/s {'met' if met else 'missed'} ({latency}{', saturated' if saturated else ''})")


def _line(name: str, closed_tps: float, steps: list[str], then: str) -> str:
    return f"{name}: closed-loop {closed_tps:.1f} tps; " + "; ".join([*steps, then])


def expand(knobs: dict[str, Any], ctx: plan.Context, run_dir: str | Path) -> dict[str, Any]:
    """The plan against the run's tree (plan.expand), with a pass wherever a capacity search has
    steps left to run though its closed-loop cells be done."""
    finished = results.finished(run_dir)
    the_plan = plan.expand(knobs, ctx, finished)
    if not (search := the_plan["spec"]["search"]):
        return the_plan
    read = tree_reader(run_dir, finished)
    open_ones = {searched["configuration"] for searched in plan.searches(the_plan["cells"])
                 if step(searched, search, read, force=the_plan["spec"]["force"])["open"]}
    return plan.with_searches(the_plan, open_ones)


def next_cells(searching: list[dict[str, Any]], search: dict[str, Any], run_dir: str | Path,
               tried: Collection[str] = (), force: bool = False) -> dict[str, Any]:
    """The next step of every configuration a pass searches: its cells (each numbered within the
    step, for the progress line) and a line each."""
    read = tree_reader(run_dir, results.finished(run_dir))
    found = [step(searched, search, read, tried, force) for searched in searching]
    cells = [cell for one in found for cell in one["cells"]]
    for index, cell in enumerate(cells, start=1):
        cell["index"], cell["total"] = index, len(cells)
    return {"cells": cells, "lines": [one["line"] for one in found]}


class _Everything:
    """Every cell, as `tried` once the run is over: what failed, failed in it."""

    def __contains__(self, item: object) -> bool:
        return True


def outcomes(the_plan: dict[str, Any], run_dir: str | Path) -> dict[str, list[str]]:
    """Where each configuration's search ended, a line each, and the steps that failed."""
    found = _replayed(the_plan, run_dir, _Everything())
    return {"lines": [f"capacity search {one['line']}" for one in found],
            "failed": [one["failed"] for one in found if one.get("failed")]}


# The most a plan.json is read of for its SLA: a plan of ~10 000 cells (each ~6 KB with its my.cnf).
PLAN_LIMIT = 64 << 20


def unfinished(the_plan: dict[str, Any], run_dir: str | Path) -> list[str]:
    """The capacity searches with steps left to run (a host gone in the middle of a run), each by
    where it stands."""
    return [one["line"] for one in _replayed(the_plan, run_dir) if one["open"]]


def _replayed(the_plan: dict[str, Any], run_dir: str | Path, tried: Collection[str] = ()) -> list[dict[str, Any]]:
    """Every capacity search of the plan as far as the run's tree takes it (step); none without a search."""
    if not (search := the_plan["spec"]["search"]):
        return []
    read = tree_reader(run_dir, results.finished(run_dir))
    return [step(searched, search, read, tried) for searched in plan.searches(the_plan["cells"])]


def recorded_sla(run_dir: str | Path) -> tuple[tuple[float, float] | None, str]:
    """The SLA (percentile, ms) the run's capacity searches aimed at, from each host's plan.json
    (the latest plan a host ran), when every search in the run aimed at one; and a note when
    one cannot be told (a plan.json unreadable or absurd, searches that differ). (None, "") for a
    run without a search. Read through innomatrix.tree: nothing outside the run."""
    run = Path(run_dir)
    found: set[tuple[float, float]] = set()
    try:
        hosts = sorted(run.iterdir()) if run.is_dir() else []
    except OSError as exc:
        return None, f"{run} cannot be listed ({exc.strerror})"
    for host in hosts:
        path = host / "plan.json"
        if host.is_symlink() or not host.is_dir() or not os.path.lexists(path):
            continue
        try:
            spec = tree.read_json(path, PLAN_LIMIT)
        except tree.TreeError as exc:
            return None, str(exc)
        aimed = (spec.get("spec") or {}).get("search") if isinstance(spec, dict) and isinstance(spec.get("spec"), dict) else None
        if aimed is None:
            continue
        sla = _sla_of(aimed)
        if sla is None:
            return None, f"{path}: its search's SLA is not a percentile in (0, 100) and a limit in (0, 1e9] ms"
        found.add(sla)
    if len(found) > 1:
        return None, "the run's capacity searches aimed at different SLAs: " + ", ".join(
            f"p{percentile:g} ≤ {limit:g} ms" for percentile, limit in sorted(found))
    return (found.pop() if found else None), ""


def _sla_of(aimed: Any) -> tuple[float, float] | None:
    """A plan's search SLA, or None unless both are plain numbers in the range plan._search accepts."""
    if not isinstance(aimed, dict):
        return None
    numbers = [aimed.get("sla_percentile"), aimed.get("sla_ms")]
    if not all(isinstance(number, (int, float)) and not isinstance(number, bool) for number in numbers):
        return None
    try:
        percentile, limit = (float(number) for number in numbers)
    except OverflowError:
        return None
    return (percentile, limit) if 0 < percentile < 100 and 0 < limit <= 1e9 else None
