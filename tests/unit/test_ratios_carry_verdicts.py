"""Every ratio the suite prints carries its interval and verdict, or the reason it has none: the
report's tables (filesystem vs filesystem, host vs host, the settings-drift table), `compare` and
`compare --by host`. Walks every table these commands write."""

from __future__ import annotations

import re
import zlib
from pathlib import Path

import pandas as pd
from innomatrix import cli
from trees import Trial, steady, write_trial

# A ratio as a table shows it ("1.412×"), and what must stand beside it in the same cell.
SHOWN_RATIO = re.compile(r"\d\.\d+×")
CARRIED = re.compile(r"\d\.\d+× (\(\d\.\d+–\d\.\d+\) )?(differs|no difference|1 trial on a side|identical trial "
                     r"medians|two runs)")


def fleet(run: Path, level: float) -> Path:
    """Two hosts × two filesystems, 2 trials each, the hosts' servers set up apart (io_capacity)."""
    for host, capacity, factor in (("db1", 200, 1.0), ("db2", 10000, 1.3)):
        for fs in ("ext4", "xfs"):
            for repeat in (1, 2):
                seed = zlib.crc32(f"{host}/{fs}/{repeat}".encode()) % 1000
                directory = write_trial(run, Trial(tps=steady(30, level * factor * (1.1 if fs == "ext4" else 1.0),
                                                              0.02, seed=seed),
                                                   host=host, filesystem=fs, repeat=repeat, warmup_s=5, seed=seed))
                (directory / "variables.txt").write_text(f"innodb_io_capacity\t{capacity}\n")
    return run


def test_no_table_shows_a_ratio_without_its_interval_and_verdict(tmp_path, capsys) -> None:
    a, b = fleet(tmp_path / "a", 1000.0), fleet(tmp_path / "b", 900.0)
    assert cli.main(["report", str(a)]) == 0
    assert cli.main(["compare", str(a), str(b)]) == 0
    assert cli.main(["compare", str(a), "--by", "host"]) == 0
    printed, _ = capsys.readouterr()
    csvs = sorted(a.rglob("*.csv"))
    names = {path.stem for path in csvs}
    assert {"fs_compare", "host_compare", "settings_drift", "compare", "cost_compare"} <= names, names
    for path in csvs:
        data = pd.read_csv(path)
        ratio_columns = [c for c in data.columns if "ratio" in c.lower() or c in ("A/B",)]
        for column in ratio_columns:
            assert {"ci_low", "ci_high", "verdict"} <= set(data.columns), f"{path.name}: {column} without its interval"
    texts = [path.read_text() for path in sorted(a.rglob("*.md"))] + [printed]
    for text in texts:
        for line in text.splitlines():
            for cell in line.split("|"):
                if SHOWN_RATIO.search(cell):
                    assert CARRIED.search(cell), f"a ratio shown bare: {cell.strip()!r}"
    # And the tables where a ratio is a column show its interval and verdict beside it.
    for name in ("fs_compare.md", "host_compare.md", "compare.md", "cost_compare.md"):
        table = next(a.rglob(name)).read_text()
        assert "| A/B |" in table and "| 95 % CI |" in table and "| verdict |" in table, name


def test_compare_by_host_prints_and_writes_the_settings_drift_table(tmp_path, capsys) -> None:
    run = fleet(tmp_path / "a", 1000.0)
    assert cli.main(["compare", str(run), "--by", "host"]) == 0
    printed, _ = capsys.readouterr()
    assert "Settings that differ between servers, per variant (as the servers ran them)" in printed
    assert "| innodb_io_capacity | 200 | 10000 |" in printed
    drift = pd.read_csv(run / "compare-hosts" / "settings_drift.csv")
    ratio = drift[drift["setting"].str.startswith("throughput ÷ db1")]
    [db2] = [column for column in drift.columns if column.startswith("db2")]
    assert all(CARRIED.search(text) for text in ratio[db2])
    assert 'id="settings-drift"' in (run / "compare-hosts" / "host_compare.html").read_text()
