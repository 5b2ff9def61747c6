"""Who holds a mount point: found from the real /proc, the suite's own processes told apart by
the mark in their environment, and only those stopped (by pid)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from innomatrix_host import mounts


@pytest.fixture
def sleepers(tmp_path):
    """Two processes that hold tmp_path (their working directory): one started as the suite
    starts its processes (marked), one started by somebody else."""
    started = []

    def start(marked: bool, cwd: Path) -> subprocess.Popen:
        env = dict(os.environ)
        env.pop(mounts.STARTED_BY, None)
        if marked:
            env[mounts.STARTED_BY] = "test:1"
        proc = subprocess.Popen(["sleep", "300"], cwd=cwd, env=env, start_new_session=True)
        started.append(proc)
        return proc

    yield start
    for proc in started:
        proc.kill()
        proc.wait()


def test_holders_are_found_by_working_directory_and_told_apart_by_the_mark(tmp_path, sleepers) -> None:
    ours, theirs = sleepers(True, tmp_path), sleepers(False, tmp_path)
    elsewhere = sleepers(True, tmp_path.parent)
    found = {holder.pid: holder for holder in mounts.holders(str(tmp_path))}
    assert set(found) >= {ours.pid, theirs.pid} and elsewhere.pid not in found
    assert found[ours.pid].ours and not found[theirs.pid].ours
    assert str(found[theirs.pid]) == f"sleep (pid {theirs.pid})"


def test_an_open_file_and_a_deleted_one_hold_the_mount(tmp_path) -> None:
    held = tmp_path / "held"
    held.write_text("x")
    reader = subprocess.Popen([sys.executable, "-c", "import sys, time; f = open(sys.argv[1]); time.sleep(300)",
                               str(held)], cwd="/")
    try:
        for _ in range(100):
            if any(h.pid == reader.pid for h in mounts.holders(str(tmp_path))):
                break
            subprocess.run(["sleep", "0.05"])
        held.unlink()
        assert reader.pid in [holder.pid for holder in mounts.holders(str(tmp_path))]
        # A sibling whose name starts with the mount point's name is not under it.
        assert reader.pid not in [holder.pid for holder in mounts.holders(str(tmp_path) + "-other")]
    finally:
        reader.kill()
        reader.wait()


def test_only_the_suites_own_holders_are_stopped(tmp_path, sleepers) -> None:
    ours, theirs = sleepers(True, tmp_path), sleepers(False, tmp_path)
    stopped = mounts.stop_ours(mounts.holders(str(tmp_path)), grace=5)
    assert [holder.pid for holder in stopped] == [ours.pid]
    assert ours.wait(timeout=5) == -15
    assert theirs.poll() is None


def test_a_holder_that_ignores_sigterm_is_killed_after_the_grace(tmp_path) -> None:
    env = dict(os.environ, **{mounts.STARTED_BY: "test:1"})
    stubborn = subprocess.Popen([sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, "
                                 "signal.SIG_IGN); print('ready', flush=True); time.sleep(300)"],
                                cwd=tmp_path, env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert stubborn.stdout.readline().strip() == "ready"
        mounts.stop_ours(mounts.holders(str(tmp_path)), grace=0.5)
        assert stubborn.wait(timeout=5) == -9
    finally:
        stubborn.kill()
        stubborn.wait()


def test_nothing_mounted_is_nothing_to_do(tmp_path) -> None:
    assert not mounts.is_mounted(str(tmp_path))
    assert mounts.unmount(str(tmp_path)) == {"changed": False, "stopped": [], "error": None}
    assert mounts.is_mounted("/")


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")


@pytest.fixture
def tmpfs(tmp_path):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "innomatrix-test", str(mnt)], check=True)
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


@needs_root
def test_a_busy_unmount_names_who_holds_it_and_stops_only_the_suites_own(tmpfs, sleepers) -> None:
    ours, theirs = sleepers(True, tmpfs), sleepers(False, tmpfs)
    result = mounts.unmount(str(tmpfs), grace=5)
    assert result["stopped"] == [f"sleep (pid {ours.pid})"]
    assert result["error"] == f"cannot unmount {tmpfs}: held by sleep (pid {theirs.pid})"
    assert ours.wait(timeout=5) == -15 and theirs.poll() is None
    assert mounts.is_mounted(str(tmpfs))
    theirs.kill()
    theirs.wait()
    assert mounts.unmount(str(tmpfs)) == {"changed": True, "stopped": [], "error": None}
    assert not mounts.is_mounted(str(tmpfs))


@needs_root
def test_the_suites_leftovers_are_stopped_and_the_unmount_goes_through(tmpfs, sleepers) -> None:
    ours = sleepers(True, tmpfs)
    result = mounts.unmount(str(tmpfs), grace=5)
    assert result == {"changed": True, "stopped": [f"sleep (pid {ours.pid})"], "error": None}
    assert not mounts.is_mounted(str(tmpfs))
