"""Read what a results tree already holds: which cells finished, with which key."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from innomatrix import layout, tree
from innomatrix_host import flags


def finished(run_dir: str | Path) -> dict[str, dict[str, Any]]:
    """Cell path → {key, status} for every trial.json in the run; an unreadable one counts as failed."""
    if not Path(run_dir).is_dir():
        return {}
    run = tree.run_root(run_dir)
    out: dict[str, dict[str, Any]] = {}
    for trial in tree.trial_dirs(run):
        relative = trial.relative_to(run).as_posix()
        data = _read_trial(trial / layout.TRIAL_FILE)
        out[relative] = {"key": data.get("key"), "status": data.get("status", "unreadable")}
    return out


def _read_trial(path: Path) -> dict[str, Any]:
    """A trial.json as a dict; anything unreadable or not an object reads as unreadable."""
    try:
        data = tree.read_json(path)
    except tree.TreeError:
        return {"status": "unreadable", "reasons": [f"{path.name} cannot be read as JSON"]}
    if not isinstance(data, dict):
        return {"status": "unreadable", "reasons": [f"{path.name} is not a JSON object"]}
    return data


def outcomes(the_plan: dict[str, Any], run_dir: str | Path) -> dict[str, Any]:
    """One line per cell of the plan (cell, median throughput, p95, status), and the failed ones."""
    run = Path(run_dir)
    lines, failed = [], []
    for cell in the_plan["cells"]:
        path = run / cell["path"] / layout.TRIAL_FILE
        trial = _read_trial(path) if path.exists() else {"status": "missing", "reasons": ["no trial.json was recorded"]}
        if not isinstance(trial.get("status"), str):  # what the host wrote, or a damaged record: said, never raised
            trial["status"] = "unreadable"
        summary = _object(trial.get("summary"))
        unit = summary.get("throughput_unit")
        throughput = _figure(summary.get("throughput_median"), unit if isinstance(unit, str) else "")
        latency = _figure(summary.get("latency_p95_ms_median"), "ms p95")
        line = f"{cell['id']:<40} {throughput:>14} {latency:>14}  {trial['status']}"
        recorded = trial.get("flags")
        if isinstance(recorded, list) and all(isinstance(found, dict) and isinstance(found.get("label"), str) for found in recorded):
            line += f", {flags.labels(recorded)}" if recorded else ""
        decided = _object(_object(trial.get("durations")).get("adaptive"))
        if all(_number(decided.get(name)) for name in ("end_s", "measure_start_s")):
            line += (f"  warmup {decided['measure_start_s']:g} s ({decided.get('warmup_decided_by', '?')}), measured "
                     f"{decided['end_s'] - decided['measure_start_s']:g} s ({decided.get('ended_by', '?')})")
        if trial["status"] != "ok":
            reasons = trial.get("reasons")
            reason = "; ".join(str(r) for r in reasons) if isinstance(reasons, list) and reasons else "no reason recorded"
            line += f" ({reason})"
            failed.append(f"{cell['id']}: {reason}")
        lines.append(line)
    return {"lines": lines, "failed": failed}


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _number(value: Any) -> bool:
    """A plain finite number (a 400-digit one is not: it has no float)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def _figure(value: Any, unit: str) -> str:
    return f"{value:.1f} {unit}" if _number(value) else "-"
