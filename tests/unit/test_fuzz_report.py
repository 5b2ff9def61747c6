"""The results-tree fuzzer (bench/fuzz.py) with fixed seeds: every kind of damage, a
few seeds each, on a real demo run; then every case it ever found broken, by name.

Each case copies the clean run, damages it, runs `innomatrix report` in this process and checks the
property: one line naming a file of the tree and exit 2, or exit 0 with the figures of the clean
tree or the trial marked; no traceback, no inf or nan shown, nothing read or shown from outside
the tree. Drawing the figures takes half a second a report: they are drawn in one case of ten
(bench/fuzz_report.py draws them in every case).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import fuzz
from innomatrix.report import plots

SEEDS_PER_KIND = 8
KINDS = fuzz.every_kind()
DRAW_ONE_IN = 10


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    run, outside = fuzz.prepare(tmp_path_factory.mktemp("clean"))
    outcome = fuzz.run_report(run, outside)
    assert outcome.code == 0, outcome.err
    cells = outcome.cells.set_index("trial")
    assert not cells["flagged"].any(), cells["flags"].to_dict()
    return cells


def _judge(tmp_path: Path, baseline: pd.DataFrame, seed: int, kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if seed % DRAW_ONE_IN:
        monkeypatch.setattr(plots, "report_plots", lambda *_: [])
    run, outside = fuzz.prepare(tmp_path)
    case = fuzz.mutate(run, outside, seed, kind)
    outcome = fuzz.run_report(run, outside)
    assert fuzz.violations(case, outcome, baseline, run) == [], str(case)


@pytest.mark.parametrize("seed", range(SEEDS_PER_KIND * len(KINDS)))
def test_a_damaged_tree_is_an_error_or_a_marked_trial(tmp_path, baseline, seed, monkeypatch) -> None:
    _judge(tmp_path, baseline, seed, KINDS[seed % len(KINDS)], monkeypatch)


def test_every_kind_of_damage_is_reached_and_most_are_caught(tmp_path_factory, baseline, monkeypatch) -> None:
    """The fuzzer does damage: over these seeds, each kind changes a file, and at least one case
    of each class ends in an error or a mark (a fuzzer whose mutations never land proves nothing)."""
    monkeypatch.setattr(plots, "report_plots", lambda *_: [])
    caught: dict[str, int] = {}
    for seed in range(len(KINDS) * 2):
        kind = KINDS[seed % len(KINDS)]
        run, outside = fuzz.prepare(tmp_path_factory.mktemp(f"reach-{seed}"))
        case = fuzz.mutate(run, outside, seed, kind)
        assert case.detail, f"{kind} changed nothing"
        outcome = fuzz.run_report(run, outside)
        marked = outcome.code == 0 and any(
            row["flagged"] and row["flags"] != baseline.loc[trial, "flags"] if trial in baseline.index else True
            for trial, row in outcome.cells.set_index("trial").iterrows())
        group = next(name for name, kinds in fuzz.CLASSES.items() if kind in kinds)
        caught[group] = caught.get(group, 0) + (outcome.code == 2 or marked)
    assert all(caught[group] > 0 for group in fuzz.CLASSES), caught


# Every case the fuzzer has found broken, by what it did (written out, so that a change to the
# fuzzer's choices cannot lose one), and the clean tree it was found in; each now holds.
TINY = (fuzz.FIXTURES / "report" / "real-tiny", "localhost/xfs/oltp/A/bp-64M/t2/r1")
DEMO_OLTP = (fuzz.REAL_DEMO, "localhost/xfs/oltp/A/bp-16M/t4/r2")
DEMO_FILEIO = (fuzz.REAL_DEMO, "localhost/xfs/fileio/sync-rndrd/bs-16K/t1/r1")


def _edit(path: Path, old: bytes, new: bytes) -> None:
    data = path.read_bytes()
    assert old in data
    path.write_bytes(data.replace(old, new, 1))


def _drop_line(path: Path, start: bytes) -> None:
    path.write_bytes(b"\n".join(line for line in path.read_bytes().split(b"\n") if not line.strip().startswith(start)))


def _swap_lines(path: Path, first: int) -> None:
    lines = path.read_bytes().split(b"\n")
    lines[first - 1], lines[first] = lines[first], lines[first - 1]
    path.write_bytes(b"\n".join(lines))


REGRESSIONS = {
    # A 400-digit time field made numpy warn on stderr before the error: two lines.
    "vmstat time made 400 digits": (TINY, lambda trial: _edit(trial / "vmstat.log", b"02:43:57",
                                                              b"02:1" + b"0" * 400 + b":57")),
    # A 400-digit status value: int() read it, float() overflowed (a traceback).
    "status value made 400 digits": (TINY, lambda trial: _edit(trial / "status.log", b"Innodb_data_written\t",
                                                               b"Innodb_data_written\t1" + b"0" * 400 + b"\t")),
    # trial.json without durations.measured_s: a short trial could no longer be told.
    "trial.json loses measured_s": (TINY, lambda trial: _drop_line(trial / "trial.json", b'"measured_s"')),
    # A driver.log with no interval left: the summary check printed "driver.log's nan".
    "driver.log re-encoded as UTF-16": (TINY, lambda trial: (trial / "driver.log").write_bytes(
        (trial / "driver.log").read_text().encode("utf-16"))),
    "driver.log cut in its banner": (TINY, lambda trial: (trial / "driver.log").write_bytes(
        (trial / "driver.log").read_bytes()[:257])),
    # A trial without intervals showed its unit as "nan" in the table of every trial.
    "driver.log without intervals shows no unit": (DEMO_OLTP, lambda trial: (trial / "driver.log").write_bytes(
        (trial / "driver.log").read_text().encode("utf-16"))),
    # A 400-digit number in trial.json: its error message formatted it as a float (a traceback).
    "trial.json number made 400 digits": (DEMO_FILEIO, lambda trial: _edit(
        trial / "trial.json", b'"measured_s": 10', b'"measured_s": 1' + b"0" * 400)),
    # vmstat's since-boot line after the first sample: the first sample was dropped in its place,
    # and the since-boot averages read as a sample.
    "vmstat since-boot line second": (DEMO_FILEIO, lambda trial: _swap_lines(trial / "vmstat.log", 3)),
    # trial.json without times.ended: the log budget fell back on the planned time through an
    # unimported module (a NameError traceback).
    "trial.json loses times.ended": (TINY, lambda trial: _drop_line(trial / "trial.json", b'"ended"')),
    # A noise floor without its spread: read as None, a TypeError in the noise note (a traceback).
    "noise floor without sd_log": (DEMO_OLTP, lambda trial: (trial.parents[5] / "host.json").write_text(json.dumps(
        {**json.loads((trial.parents[5] / "host.json").read_text()),
         "noise_floors": [{"device": "loop:/var/lib/innomatrix/demo-disk.img", "workload": "oltp",
                           "server": "mariadb 10.11", "layout": "plain", "df": 2, "trials": 6}]}))),
}


@pytest.mark.parametrize("name", REGRESSIONS)
def test_a_case_the_fuzzer_found_stays_caught(tmp_path, name, monkeypatch) -> None:
    (source, trial), damage = REGRESSIONS[name]
    monkeypatch.setattr(plots, "report_plots", lambda *_: [])
    clean, outside = fuzz.prepare(tmp_path / "clean", source)
    baseline = fuzz.run_report(clean, outside).cells.set_index("trial")
    run, outside = fuzz.prepare(tmp_path / "case", source)
    damage(run / trial)
    case = fuzz.Case(seed=-1, kind=name, file=trial)
    outcome = fuzz.run_report(run, outside)
    assert fuzz.violations(case, outcome, baseline, run) == [], outcome.err
