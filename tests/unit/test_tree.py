"""innomatrix.tree: a results tree read as untrusted input. Its walk finds the trial directories and
refuses what a tree the suite wrote never holds; its reads refuse what is not a regular file of a
sane size, and JSON that is not a number innomatrix writes."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any

import pytest

from innomatrix import layout, tree


def write_trial(run: Path, cell_path: str, payload: Any) -> Path:
    directory = run / cell_path
    directory.mkdir(parents=True, exist_ok=True)
    (directory / layout.TRIAL_FILE).write_text(json.dumps(payload))
    return directory


def trial(key: str, status: str) -> dict[str, Any]:
    return {"key": key, "status": status, "reasons": []}


def test_trial_dirs_finds_only_real_trial_directories(tmp_path: Path) -> None:
    run = tmp_path / "main"
    wanted = [
        write_trial(run, "db1/ext4/fileio/seqwr/bs-1M/t1/r1", trial("k0", "ok")),
        write_trial(run, "db1/ext4/oltp/A/bp-64M/t4/r1", trial("k1", "ok")),
        write_trial(run, "db1/ext4/oltp/A/bp-64M/t4/r2", trial("k2", "failed")),
        write_trial(run, "db1/xfs/oltp/B/bp-1536M/t16/r1", trial("k3", "ok")),
    ]
    # An earlier attempt moved aside by publish(), and the temporary directory of an interrupted cell.
    write_trial(run, "db1/ext4/oltp/A/bp-64M/t4/r1.failed-20240101T000000", trial("old", "failed"))
    write_trial(run, "db1/ext4/oltp/A/bp-64M/t4/.r3.tmp-4242", trial("tmp", "ok"))
    # Not the trial layout: non-numeric threads/repeat, no bp- prefix, too shallow, too deep.
    write_trial(run, "db1/ext4/oltp/A/bp-64M/tfour/r1", trial("x", "ok"))
    write_trial(run, "db1/ext4/oltp/A/bp-64M/t4/rx", trial("x", "ok"))
    write_trial(run, "db1/ext4/oltp/A/64M/t4/r1", trial("x", "ok"))
    write_trial(run, "ext4/oltp/A/bp-64M/t4/r1", trial("x", "ok"))
    write_trial(run, "db1/ext4/oltp/A/bp-64M/t4/r1/extra", trial("x", "ok"))
    # A trial directory without trial.json (the module never published it) is not a trial.
    (run / "db1/ext4/oltp/B/bp-64M/t4/r1").mkdir(parents=True)
    assert tree.trial_dirs(run) == wanted


def test_trial_dirs_in_path_order(tmp_path: Path) -> None:
    for cell in ("h/xfs/oltp/A/bp-1G/t4/r1", "h/ext4/oltp/B/bp-1G/t4/r1", "h/ext4/oltp/A/bp-1G/t4/r2",
                 "h/ext4/oltp/A/bp-1G/t4/r10", "h/ext4/oltp/A/bp-1G/t4/r1"):
        write_trial(tmp_path, cell, trial("k", "ok"))
    assert [p.relative_to(tmp_path).as_posix() for p in tree.trial_dirs(tmp_path)] == [
        "h/ext4/oltp/A/bp-1G/t4/r1",
        "h/ext4/oltp/A/bp-1G/t4/r10",
        "h/ext4/oltp/A/bp-1G/t4/r2",
        "h/ext4/oltp/B/bp-1G/t4/r1",
        "h/xfs/oltp/A/bp-1G/t4/r1",
    ]


def test_trial_dirs_of_an_empty_run(tmp_path: Path) -> None:
    assert tree.trial_dirs(tmp_path) == []


OUTSIDE = "a line from outside the tree"


@pytest.fixture()
def run_with_a_trial(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    write_trial(run, "h/xfs/oltp/A/bp-1G/t4/r1", trial("k", "ok"))
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "secret").write_text(OUTSIDE + "\n")
    return run


@pytest.mark.parametrize("where", ["h/xfs/oltp/A/bp-1G/t4/r1/vmstat.log", "h/xfs/oltp/A/bp-1G/t4/r2",
                                   "h/host.json", "other-host", "plots/x.png", "report.html"])
def test_a_symlink_anywhere_in_the_run_refuses_it_naming_the_link(run_with_a_trial: Path, where: str) -> None:
    link = run_with_a_trial / where
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(run_with_a_trial.parent / "elsewhere" / ("secret" if "." in where else ""))
    with pytest.raises(tree.TreeError) as refused:
        tree.trial_dirs(run_with_a_trial)
    message = str(refused.value)
    assert message.startswith(f"{link}: a symlink (to ") and "\n" not in message
    assert OUTSIDE not in message


def test_a_fifo_or_a_socket_in_the_run_refuses_it(run_with_a_trial: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trial_dir = run_with_a_trial / "h/xfs/oltp/A/bp-1G/t4/r1"
    os.mkfifo(trial_dir / "driver.log")
    with pytest.raises(tree.TreeError, match=r"driver\.log: a FIFO"):
        tree.trial_dirs(run_with_a_trial)
    os.unlink(trial_dir / "driver.log")
    # Bound by a relative name: a socket's path has at most 107 bytes, and a worker's tmp_path
    # (pytest-xdist: …/popen-gw0/…) plus the trial's directories can be longer.
    monkeypatch.chdir(trial_dir)
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind("status.log")
        with pytest.raises(tree.TreeError, match=r"status\.log: a socket"):
            tree.trial_dirs(run_with_a_trial)


def test_the_run_itself_may_be_reached_through_a_symlink(run_with_a_trial: Path) -> None:
    link = run_with_a_trial.parent / "latest"
    link.symlink_to(run_with_a_trial)
    root = tree.run_root(link)
    assert root == run_with_a_trial.resolve()
    assert [p.relative_to(root).as_posix() for p in tree.trial_dirs(root)] == ["h/xfs/oltp/A/bp-1G/t4/r1"]


def test_a_read_never_follows_a_symlink_or_blocks_on_a_fifo(tmp_path: Path) -> None:
    (tmp_path / "secret").write_text(OUTSIDE)
    (tmp_path / "link").symlink_to(tmp_path / "secret")
    with pytest.raises(tree.TreeError, match=r"link: a symlink"):
        tree.read_bytes(tmp_path / "link", 1 << 20)
    os.mkfifo(tmp_path / "fifo")  # nobody writes it: a blocking open would hang the test
    with pytest.raises(tree.TreeError, match=r"fifo: a FIFO"):
        tree.read_bytes(tmp_path / "fifo", 1 << 20)
    with pytest.raises(tree.TreeError, match=r"null: a character device"):
        tree.read_bytes(Path("/dev/null"), 1 << 20)


def test_a_file_larger_than_its_limit_is_refused_unread(tmp_path: Path) -> None:
    sparse = tmp_path / "driver.log"
    with open(sparse, "wb") as handle:  # 2 GB that take no disk: reading it would take the memory
        handle.truncate(2 << 30)
    with pytest.raises(tree.TreeError, match=r"driver\.log: 2\.0 GB, more than \d\.\d MB, what a trial of 40 s "
                                             r"at 1-s intervals can write: refused unread"):
        tree.read_log(sparse, seconds=40, interval_s=1)


def test_a_log_within_its_budget_is_read(tmp_path: Path) -> None:
    log = tmp_path / "vmstat.log"
    log.write_bytes(b"x" * 1000)
    assert tree.read_log(log, seconds=40, interval_s=1) == b"x" * 1000


@pytest.mark.parametrize("text, fault", [("{\"a\": NaN}", "NaN is not a number innomatrix writes"),
                                         ("{\"a\": -Infinity}", "-Infinity is not a number"),
                                         ("{\"a\": 1e309}", "1e309 is too large for a number")])
def test_json_that_innomatrix_never_writes_is_refused(tmp_path: Path, text: str, fault: str) -> None:
    path = tmp_path / "trial.json"
    path.write_text(text)
    with pytest.raises(tree.TreeError) as refused:
        tree.read_json(path)
    assert str(refused.value).startswith(f"{path}: cannot be read as JSON (") and fault in str(refused.value)


def test_a_directory_where_a_file_should_be_is_refused_in_one_line_and_nothing_is_left_open(tmp_path: Path) -> None:
    (tmp_path / "trial.json").mkdir()
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(3):
        with pytest.raises(tree.TreeError, match=f"^{tmp_path / 'trial.json'}: not a regular file$"):
            tree.read_json(tmp_path / "trial.json")
    assert len(os.listdir("/proc/self/fd")) == before
