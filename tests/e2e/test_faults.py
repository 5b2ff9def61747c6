"""Faults on a real trial: each is injected from outside, as it would happen on a real host.

A watcher thread waits for the process it is after (found by the environment's own paths),
lets it run a few seconds, and kills it; the test then reads what the suite recorded and checks
that nothing was left running and that a rerun picks up exactly the unfinished cells.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path


from e2e_env import NEEDS_ROOT, PLAYBOOK, PS, ROOT, ok, trials_of

pytestmark = NEEDS_ROOT

LONG = ["-e", "duration=12", "-e", "warmup=1", "-e", "filesystems=xfs", "-e", "bp_sizes=64M"]


def _pids(env, needle: str) -> list[int]:
    """Processes of this environment (their arguments name its directory) that match `needle`."""
    listing = subprocess.run(PS, capture_output=True, text=True).stdout
    return [int(line.split()[0]) for line in listing.splitlines()[1:]
            if needle in line and str(env.base) in line and "ps -e" not in line]


def _kill_later(env, needle: str, sig: int, after: float) -> threading.Thread:
    """Once a trial's driver runs (`sysbench ... run`), wait `after` s and signal what matches `needle`."""
    def watch():
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if _pids(env, "--events=0 run"):
                time.sleep(after)
                for pid in _pids(env, needle):
                    os.kill(pid, sig)
                return
            time.sleep(0.2)
    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def _collectors(env) -> list[int]:
    """vmstat and iostat processes started for this environment's trials (their environment says so)."""
    found = []
    for pid in _pids_matching("vmstat -n -t") + _pids_matching("iostat -o JSON"):
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue
        if f"INNOMATRIX_TRIAL={env.base}".encode() in environ:
            found.append(pid)
    return found


def _pids_matching(needle: str) -> list[int]:
    listing = subprocess.run(PS, capture_output=True, text=True).stdout
    return [int(line.split()[0]) for line in listing.splitlines()[1:] if needle in line]


def test_server_killed_mid_trial_fails_that_cell_and_the_next_runs(env):
    watcher = _kill_later(env, "mariadbd --defaults-file", signal.SIGKILL, after=5)
    done = env.play(*LONG, "-e", "run_name=server-killed", "-e", "threads=2,3")
    watcher.join(timeout=5)
    assert done.returncode != 0
    trials = trials_of(env.results / "server-killed")
    killed, next_cell = trials["localhost/xfs/oltp/A/bp-64M/t2/r1"], trials["localhost/xfs/oltp/A/bp-64M/t3/r1"]
    assert killed["status"] == "failed"
    assert killed["reasons"][0].startswith("server died during the trial"), killed["reasons"]
    assert next_cell["status"] == "ok"
    assert env.stray_processes() == [] and _collectors(env) == []


def test_driver_killed_mid_trial_fails_that_cell(env):
    watcher = _kill_later(env, "sysbench oltp_read_write", signal.SIGKILL, after=4)
    done = env.play(*LONG, "-e", "run_name=driver-killed", "-e", "threads=2")
    watcher.join(timeout=5)
    assert done.returncode != 0
    trial = trials_of(env.results / "driver-killed")["localhost/xfs/oltp/A/bp-64M/t2/r1"]
    assert trial["status"] == "failed"
    assert trial["reasons"][0].startswith("sysbench was killed by signal 9"), trial["reasons"]
    assert env.stray_processes() == []


def test_ctrl_c_mid_cell_stops_everything_and_the_rerun_resumes(env):
    knobs = [*LONG, "-e", "run_name=interrupted", "-e", "threads=2,3"]
    argv = [str(PLAYBOOK), "matrix.yml", "-e", f"@{env.vars_file}", *knobs]
    # Its own process group, as in a terminal: Ctrl-C reaches ansible-playbook and its children.
    play = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + 300
    while not _pids(env, "--events=0 run") and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(3)
    os.killpg(play.pid, signal.SIGINT)
    play.wait(timeout=120)
    run_dir = env.results / "interrupted"
    # ansible-playbook ends at once; the module it started cleans up on its own (it stops the
    # driver, the collectors and the server, then removes its staging directory, last).
    deadline = time.monotonic() + 120
    while (env.stray_processes() or _collectors(env) or list(run_dir.rglob(".r1.tmp-*"))) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert env.stray_processes() == []
    assert _collectors(env) == []
    assert trials_of(run_dir) == {}, "an interrupted cell never leaves a trial.json"
    assert list(run_dir.rglob(".r1.tmp-*")) == []
    done = env.play(*knobs)
    ok(done)
    assert "2 cells: 2 to run, 0 already finished" in done.stdout
    assert {t["status"] for t in trials_of(run_dir).values()} == {"ok"}


def _last_error(output: str) -> str:
    """What the play printed after its last FAILED!: the error it ends with."""
    assert "FAILED!" in output, output[-3000:]
    return output[output.rindex("FAILED!"):]


def _once_loading(env, action) -> threading.Thread:
    """Run `action()` in a thread as soon as the dataset load's sysbench prepare runs."""
    def watch():
        deadline = time.monotonic() + 300
        while not _pids(env, " prepare") and time.monotonic() < deadline:
            time.sleep(0.1)
        action()
    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def _hold(directory: Path) -> subprocess.Popen:
    """Somebody else's process (not started by the suite) that keeps a mount point busy."""
    env = {k: v for k, v in os.environ.items() if k != "INNOMATRIX_STARTED_BY"}
    return subprocess.Popen(["sleep", "600"], cwd=directory, env=env, start_new_session=True)


def test_disk_full_while_loading_names_the_device_and_the_space(env):
    # A fresh filesystem (another mkfs option), so the load must run; fill it once it starts, and
    # keep the mount busy (somebody's shell in it) so that the cleanup fails after the load did.
    holder = []

    def fill():
        if not env.mnt.exists():
            return
        holder.append(_hold(env.mnt))
        free = os.statvfs(env.mnt).f_bavail * os.statvfs(env.mnt).f_frsize
        subprocess.run(["fallocate", "-l", str(free - (1 << 20)), str(env.mnt / "ballast")], capture_output=True)
    before = {p: p.read_bytes() for p in env.results.rglob("trial.json")}
    filler = _once_loading(env, fill)
    try:
        done = env.play("-e", "run_name=disk-full", "-e", "filesystems=ext4", "-e", "bp_sizes=64M",
                        "-e", "oltp_table_size=200000", "-e", '{"mkfs_options": {"ext4": "-m 0"}}')
        filler.join(timeout=5)
        assert holder, "the load never started"
        output = done.stdout + done.stderr
        assert done.returncode != 0
        device = env.loop_devices()[0]
        # The first error wins: the play ends with the full device, and the refused unmount comes after it.
        last = _last_error(output)
        assert f"{device} is full (" in last and "the matrix needs about" in last, last
        held = f"then, cleaning up: cannot unmount {env.mnt}: held by sleep (pid {holder[0].pid})"
        assert held in last and last.index("is full (") < last.index(held), last
        assert "target is busy" not in output
        assert holder[0].poll() is None, "somebody else's process is named, never stopped"
        assert {p: p.read_bytes() for p in env.results.rglob("trial.json")} == before
        assert env.stray_processes() == []
    finally:
        for proc in holder:
            proc.kill()
            proc.wait()
    subprocess.run(["umount", str(env.mnt)], check=True)


def test_a_load_whose_module_dies_leaves_nothing_holding_the_device(env):
    # The module that loads the dataset dies (as on an out-of-memory kill): the server it started
    # lives on in its own session and holds the mount. The cleanup stops it by pid and unmounts.
    killed = []

    def kill_the_loader():
        # At once, while the prepare runs: a load can end within a second on a fast machine (CI saw it).
        for pid in _pids(env, "mariadbd --defaults-file"):
            module = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
            os.kill(module, signal.SIGKILL)
            killed.append((module, pid))
    killer = _once_loading(env, kill_the_loader)
    done = env.play("-e", "run_name=loader-died", "-e", "filesystems=ext4", "-e", "bp_sizes=64M",
                    "-e", "oltp_table_size=200000", "-e", '{"mkfs_options": {"ext4": "-m 1"}}')
    killer.join(timeout=5)
    assert killed, "the load never started"
    output = done.stdout + done.stderr
    assert done.returncode != 0
    last = _last_error(output)
    # The first error is the load's own (its module died), named by its task; nothing after it.
    assert "Dataset | load once, keep pristine" in last and "then, cleaning up" not in last, last
    assert "target is busy" not in output
    assert env.stray_processes() == []
    assert subprocess.run(["findmnt", str(env.mnt)], capture_output=True).returncode != 0, "unmounted after the failure"
