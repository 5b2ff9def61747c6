"""Host vs host within one run (stats.compare_hosts, `compare RUN --by host`, the report's host tables),
on synthetic runs whose answers are known."""

from __future__ import annotations

import json
import math
import random
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from innomatrix import cli, frame, report, stats
from innomatrix.report import tables
from trees import Trial, steady, write_trial

SESSION = {
    "started": "2026-11-23T02:40:00Z", "kernel": "6.1.0-28-amd64", "distribution": "Debian 12.8",
    "cpu": "AMD EPYC 7763 64-Core Processor", "vcpus": 2, "memory_mb": 7940,
    "device": {"path": "/dev/nvme1n1", "identity": "wwn:eui.0025388b91b2c3d4", "size_bytes": 960197124096,
               "scheduler": "[none] mq-deadline", "read_ahead_kb": "128", "rotational": False},
    "server": {"flavor": "mariadb", "version": "10.11.19-MariaDB-0+deb12u1", "server": "mariadbd"},
    "driver": "sysbench 1.0.20",
}


def _run(run: Path, levels: dict[str, float], repeats: int = 3, configurations: tuple[int, ...] = (1, 2),
         run_to_run: float = 0.03, seed: int = 0, intervals: int = 30) -> Path:
    """Each host at its level, per configuration (a thread count), `repeats` trials a side, each trial
    moved by a lognormal run-to-run drift of `run_to_run` (what a restart or restore does)."""
    between = random.Random(seed)
    trial_seed = seed
    for host, level in levels.items():
        for threads in configurations:
            for repeat in range(1, repeats + 1):
                trial_seed += 1
                drift = math.exp(between.gauss(0.0, run_to_run))
                write_trial(run, Trial(tps=steady(intervals, level * drift, 0.02, seed=trial_seed), host=host,
                                       threads=threads, repeat=repeat, warmup_s=5, seed=trial_seed))
    return run


def _cells(run: Path) -> pd.DataFrame:
    return stats.cells(frame.load(run))


def test_a_faster_host_differs_with_its_ratio_and_the_right_sign(tmp_path):
    cells = _cells(_run(tmp_path / "run", {"fast": 1500.0, "slow": 1000.0}))
    table = stats.compare_hosts(cells)
    assert len(table) == 2 and (table["host_a"] == "fast").all() and (table["host_b"] == "slow").all()
    assert table["differs"].all() and (table["verdict"] == stats.DIFFERS).all()
    assert (table["ratio"] > 1.3).all() and (table["ci_low"] > 1).all()
    assert table["ratio"].to_numpy() == pytest.approx([1.5, 1.5], abs=0.08)
    assert ((table["ci_low"] <= 1.5) & (1.5 <= table["ci_high"])).all()
    assert (table["a_trials"] == 3).all() and (table["b_trials"] == 3).all() and (table["only_in"] == "").all()


def test_the_first_host_in_sorted_order_is_a_whatever_its_speed(tmp_path):
    # "a-slow" sorts first: it is A, and A/B reads below 1 with the interval below 1 too.
    table = stats.compare_hosts(_cells(_run(tmp_path / "run", {"b-fast": 1500.0, "a-slow": 1000.0})))
    assert (table["host_a"] == "a-slow").all() and table["differs"].all()
    assert (table["ratio"] < 1 / 1.3).all() and (table["ci_high"] < 1).all()


def test_it_is_compare_on_each_hosts_rows_with_host_dropped_from_the_match(tmp_path):
    cells = _cells(_run(tmp_path / "run", {"h1": 1200.0, "h2": 1000.0}))
    by_host = stats.compare_hosts(cells).drop(columns=["host_a", "host_b"])
    direct = stats.compare(cells[cells["host"] == "h1"], cells[cells["host"] == "h2"])
    assert "host" not in direct.columns
    pd.testing.assert_frame_equal(by_host, direct[list(by_host.columns)], check_dtype=False)


def test_identical_hosts_mostly_say_no_difference(tmp_path):
    # 20 configurations, 3 trials a side, 5 % run-to-run spread, the same level on both hosts: at
    # a 5 % false-positive rate about 1 of 20 says "differs". Fixed seeds: the count is fixed.
    cells = _cells(_run(tmp_path / "run", {"h1": 1000.0, "h2": 1000.0}, configurations=tuple(range(1, 21)),
                        run_to_run=0.05, seed=1000, intervals=12))
    table = stats.compare_hosts(cells)
    assert len(table) == 20 and set(table["verdict"]) <= {stats.DIFFERS, stats.SAME}
    assert (table["verdict"] == stats.SAME).sum() >= 18, table[["threads", "ratio", "ci_low", "ci_high"]]
    assert table["ratio"].to_numpy() == pytest.approx(np.ones(20), abs=0.15)


def test_one_trial_a_side_gives_a_ratio_and_no_verdict(tmp_path):
    table = stats.compare_hosts(_cells(_run(tmp_path / "run", {"fast": 1500.0, "slow": 1000.0}, repeats=1,
                                                  run_to_run=0.0)))
    assert (table["verdict"] == stats.UNKNOWN).all() and not table["differs"].any()
    assert table["ci_low"].isna().all() and table["ci_high"].isna().all()
    assert table["ratio"].to_numpy() == pytest.approx([1.5, 1.5], abs=0.08)


def test_three_hosts_give_every_pair_in_sorted_order_and_one_host_none(tmp_path):
    cells = _cells(_run(tmp_path / "run", {"c": 1000.0, "a": 1000.0, "b": 1000.0}, configurations=(1,)))
    table = stats.compare_hosts(cells)
    assert list(zip(table["host_a"], table["host_b"])) == [("a", "b"), ("a", "c"), ("b", "c")]
    alone = stats.compare_hosts(cells[cells["host"] == "a"])
    assert alone.empty and list(alone.columns[:2]) == ["host_a", "host_b"]


def test_compare_by_host_prints_the_table_and_the_noise_floor_and_writes_like_compare(tmp_path, capsys):
    run = _run(tmp_path / "fleet", {"db-a": 1500.0, "db-b": 1000.0})
    (run / "db-a" / "host.json").write_text(json.dumps({"schema": 1, "host": "db-a", "sessions": [
        {"started": "2026-11-22T02:40:00Z", "kernel": "6.1.0-old"}, SESSION]}))
    assert cli.main(["compare", str(run), "--by", "host"]) == 0
    stdout, _ = capsys.readouterr()
    lines = stdout.splitlines()
    assert lines[0] == "host vs host db-a / db-b: 2 matching configurations, 2 differ (95 % CI excludes 1)"
    # Pooled within each host: 2 configurations × 2 hosts.
    assert re.fullmatch(r"noise floor: run-to-run CoV of the trial medians \d\.\d% \(pooled over 4 configurations\); "
                        r"at 3 trials a side, a difference within ±\d+\.\d% cannot show", lines[1])
    assert any(line.startswith("| db-a | db-b | xfs | oltp | A | 64M |") and "| differs |" in line for line in lines)
    assert "db-b: no host.json (the run was recorded without it)" in lines
    hosts_row = next(line for line in lines if line.startswith("| db-a | 2 |"))  # the latest of 2 sessions
    for shown in ("6.1.0-28-amd64", "AMD EPYC 7763", "7.8 GiB", "wwn:eui.0025388b91b2c3d4", "| none |",
                  "mariadb 10.11.19-MariaDB-0+deb12u1"):
        assert shown in hosts_row, shown
    out = run / "compare-hosts"
    assert stdout.rstrip().endswith(f"compare: {out / 'host_compare.html'}")
    table = pd.read_csv(out / "host_compare.csv")
    assert table["differs"].all() and (table["ratio"] > 1.3).all() and (table["ci_low"] > 1).all()
    assert (out / "host_compare.md").exists() and (out / "hosts.csv").exists()
    assert (out / "plots" / "host_compare_ratios.png").exists()
    assert 'src="data:image/png;base64,' in (out / "host_compare.html").read_text()


def test_compare_by_host_refuses_one_host_and_two_runs_in_one_line(tmp_path, capsys):
    run = _run(tmp_path / "alone", {"only": 1000.0}, configurations=(1,))
    assert cli.main(["compare", str(run), "--by", "host"]) == 2
    assert cli.main(["compare", str(run), str(run), "--by", "host"]) == 2
    assert cli.main(["compare", str(run)]) == 2
    _, stderr = capsys.readouterr()
    assert "only only ran trials here; --by host compares two or more hosts of one run" in stderr
    assert "compare --by host takes one run" in stderr and "compare needs RUN_A and RUN_B" in stderr
    assert "Traceback" not in stderr and not (run / "compare-hosts").exists()


def test_the_report_adds_host_tables_only_for_two_or_more_hosts(tmp_path):
    alone = _run(tmp_path / "alone", {"only": 1000.0}, configurations=(1,))
    written = report.report(alone)
    assert not (alone / "tables" / "hosts.csv").exists() and not (alone / "tables" / "host_compare.csv").exists()
    assert "Host vs host" not in written.html.read_text()

    fleet = _run(tmp_path / "fleet", {"h1": 1500.0, "h2": 1000.0}, configurations=(1,))
    written = report.report(fleet)
    compared = pd.read_csv(fleet / "tables" / "host_compare.csv")
    assert compared[["host_a", "host_b"]].values.tolist() == [["h1", "h2"]]
    assert compared["differs"].item() and compared["ci_low"].item() > 1
    assert pd.read_csv(fleet / "tables" / "hosts.csv")["host"].tolist() == ["h1", "h2"]
    assert (fleet / "tables" / "hosts.md").exists() and (fleet / "tables" / "host_compare.md").exists()
    html = written.html.read_text()
    assert 'id="by-host">Host vs host' in html and 'id="host_compare"' in html and 'id="hosts"' in html
    assert "host vs host h1 / h2: 1 matching configurations, 1 differ (95 % CI excludes 1)" in written.lines
    # Neither host has a host.json: a note each, empty rows, the report written all the same.
    assert "h1: no host.json (the run was recorded without it)" in (fleet / "tables" / "hosts.md").read_text()
    assert "h2: no host.json (the run was recorded without it)" in written.lines


@pytest.mark.parametrize(("content", "note"), [
    (None, "h2: no host.json (the run was recorded without it)"),
    ("{not json", "h2: host.json cannot be read ("),
    ('["a list"]', "h2: host.json holds no session"),
    ('{"schema": 1, "sessions": []}', "h2: host.json holds no session"),
    ('{"sessions": ["not an object"]}', "h2: host.json holds no session"),
])
def test_a_missing_or_unreadable_host_json_is_a_note_not_a_crash(tmp_path, content, note):
    run = tmp_path / "fleet"
    for host in ("h1", "h2"):
        (run / host).mkdir(parents=True)
    (run / "h1" / "host.json").write_text(json.dumps({"sessions": [{"kernel": "6.1.0", "device": "not a dict"}]}))
    if content is not None:
        (run / "h2" / "host.json").write_text(content)
    sessions, notes = report.host_sessions(run, ["h1", "h2"])
    table = tables.hosts_table(sessions, notes)
    assert [n for n in notes if n.startswith("h2")] == [n for n in notes if n.startswith(note)] and len(notes) == 1
    hosts_md = "\n".join(table.write(tmp_path / "tables")[1].read_text().splitlines())
    assert note in hosts_md
    rows = {line.split("|")[1].strip(): [cell.strip() for cell in line.split("|")[2:-1]]
            for line in hosts_md.splitlines() if line.startswith("| h")}
    assert rows["h1"][2] == "6.1.0" and rows["h1"][7] == "–"   # kernel read; device not an object: –
    assert rows["h2"][0] == "0" and set(rows["h2"][1:]) == {"–"}
