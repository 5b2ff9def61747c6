"""The report of a run over storage layouts (seed 001): throughput against member count per layout,
and layout against layout (mdadm ÷ LVM) over the same members with the run's interval and verdict.
Known answers: the levels are written into the trees."""

from __future__ import annotations

import math
import random

import pytest
from innomatrix import frame, report, stats
from innomatrix.report import tables
from synth import Trial, steady, write_trial

# md-raid0 scales with its members; lvm-stripe over the same 2 runs at 0.9 × (seed 001: mdadm ~10 % faster).
LEVELS = {("md-raid0", 1): 1000.0, ("md-raid0", 2): 2000.0, ("md-raid0", 4): 4000.0, ("lvm-stripe", 2): 1800.0}


def layouts_run(run, levels=LEVELS, repeats: int = 3, spread: float = 0.02, seed: int = 0):
    between = random.Random(seed)
    for number, ((name, members), level) in enumerate(levels.items()):
        for repeat in range(1, repeats + 1):
            trial_level = level * math.exp(between.gauss(0.0, spread))
            write_trial(run, Trial(tps=steady(30, trial_level, 0.01, seed=number * 10 + repeat), layout=name,
                                   members=members, warmup_s=5, repeat=repeat, seed=number * 10 + repeat))
    return run


def test_throughput_by_member_count_per_layout(tmp_path):
    cells = stats.cells(frame.load(layouts_run(tmp_path / "run")))
    table = tables.layout_by_members(cells)
    rows = {row["layout"]: row for row in table.data.to_dict("records")}
    raid0 = rows["md-raid0"]
    assert raid0["median_m1"] == pytest.approx(1000, rel=0.05)
    assert (raid0["ratio_m2"], raid0["ratio_m4"]) == (pytest.approx(2, rel=0.05), pytest.approx(4, rel=0.05))
    assert rows["lvm-stripe"]["median_m2"] == pytest.approx(1800, rel=0.05)
    assert list(table.display.columns[-3:]) == ["m1", "m2", "m4"]


def test_mdadm_over_lvm_on_the_same_members_differs_with_the_right_sign(tmp_path):
    written = report.report(layouts_run(tmp_path / "run"))
    comparison = next(t for t in written_tables(written) if t.stem == "layout_compare")
    text = comparison.read_text()
    assert "lvm-stripe,md-raid0" in text.replace(" ", "")  # the pair, lvm-stripe first (sorted)
    # One pair of the same member count (2): LVM ÷ mdadm ≈ 0.9, the interval below 1.
    [line] = [line for line in written.lines if line.startswith("verdict: lvm-stripe / md-raid0, ")]
    assert line.startswith("verdict: lvm-stripe / md-raid0, localhost/m2/xfs/oltp/A/64M/2: ")
    ratio = float(line.rsplit(": ", 1)[1].split("×")[0])
    assert ratio == pytest.approx(0.9, rel=0.03) and line.endswith("differs")
    assert "verdict: layout vs layout: 1 matching configurations, 1 differ" in "\n".join(written.lines)
    # Each layout is a pass of its own: the table says its interval cannot see drift between passes.
    markdown = (tmp_path / "run" / "tables" / "layout_compare.md").read_text()
    assert "Each layout is a pass of its own (a layout build, a mkfs and a load apart)" in markdown


def test_more_members_read_more_and_the_verdict_says_so(tmp_path):
    written = report.report(layouts_run(tmp_path / "run"))
    lines = {line.split(",")[0]: line for line in written.lines if line.startswith("verdict: m")}
    # Pairs in sorted order, the first as A: 1 member ÷ 4 members ≈ 0.25, differs.
    assert lines["verdict: m1 / m4"].startswith("verdict: m1 / m4, localhost/md-raid0/xfs/oltp/A/64M/2: 0.2")
    assert lines["verdict: m1 / m4"].endswith("differs")
    assert (tmp_path / "run" / "tables" / "members_compare.csv").exists()


def test_each_layout_is_scaled_by_its_own_fewest_members_and_counts_sort_as_numbers(tmp_path):
    levels = {("md-raid0", 1): 1000.0, ("md-raid0", 4): 4000.0, ("md-raid0", 12): 12000.0,
              ("md-raid5", 4): 3000.0, ("md-raid5", 12): 11000.0}
    written = report.report(layouts_run(tmp_path / "run", levels))
    table = tables.layout_by_members(stats.cells(frame.load(tmp_path / "run")))
    rows = {row["layout"]: row for row in table.data.to_dict("records")}
    # A RAID5 has no 1-member array: its ratios are to its own 4.
    assert rows["md-raid5"]["ratio_m12"] == pytest.approx(11 / 3, rel=0.05)
    assert rows["md-raid0"]["ratio_m12"] == pytest.approx(12, rel=0.05)
    assert list(table.display.columns[-3:]) == ["m1", "m4", "m12"]
    raid5 = table.display[table.display["layout"] == "md-raid5"].iloc[0]
    assert "×" not in raid5["m4"] and float(raid5["m12"].split("×")[1]) == pytest.approx(11 / 3, rel=0.05)
    verdicts = [line.split(",")[0] for line in written.lines if line.startswith("verdict: m")]
    assert "verdict: m4 / m12" in verdicts and "verdict: m12 / m4" not in verdicts


def test_the_same_layout_twice_does_not_differ(tmp_path):
    same = {("md-raid0", 2): 2000.0, ("lvm-stripe", 2): 2000.0}
    written = report.report(layouts_run(tmp_path / "run", same, seed=7))
    [line] = [line for line in written.lines if line.startswith("verdict: lvm-stripe / md-raid0,")]
    assert line.endswith("no difference")


def test_a_run_on_the_plain_device_has_no_layout_tables_or_columns(tmp_path):
    written = report.report(layouts_run(tmp_path / "run", {("plain", 1): 1000.0}))
    names = {path.stem for path in written_tables(written)}
    assert not {"layout_by_members", "layout_compare"} & names
    assert "layout" not in (tmp_path / "run" / "tables" / "variant_by_bp.csv").read_text().splitlines()[0]


def written_tables(written):
    return [path for path in written.files if path.parent.name == "tables" and path.suffix == ".csv"]
