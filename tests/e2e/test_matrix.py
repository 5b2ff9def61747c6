"""The matrix end to end: a loop device, real mkfs and mounts, real MariaDB, real sysbench.

The tests share one isolated environment (its own loop file, state directory, mount point,
port and results) and run in file order: check mode, bad knobs, a reduced matrix, a rerun of
one buffer-pool size, a plain rerun, a failing cell. Cleanup finds the loop device by its
backing file and the processes by the environment's own paths.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
PLAYBOOK = ROOT / ".venv" / "bin" / "ansible-playbook"

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(os.geteuid() != 0, reason="END-TO-END TESTS SKIPPED: they need root (loop devices, mkfs, mount)"),
    pytest.mark.skipif(not PLAYBOOK.exists(), reason="END-TO-END TESTS SKIPPED: no .venv; run `make test`"),
]

WARMUP, DURATION = 2, 4


class Env:
    def __init__(self, base: Path):
        self.base = base
        self.results = base / "results"
        self.disk = base / "disk.img"
        self.state = base / "state"
        self.mnt = base / "mnt"
        self.port = 34000 + os.getpid() % 1000
        self.knobs = {
            "filesystems": ["ext4", "xfs"],
            "variants": ["A"],
            "bp_sizes": ["64M", "128M"],
            "threads": [2],
            "warmup": WARMUP,
            "duration": DURATION,
            "report_interval": 1,
            "oltp_tables": 2,
            "oltp_table_size": 5000,
            "run_name": "e2e",
            "results_dir": str(self.results),
            "mycnf_overrides": {"innodb_log_file_size": "48M"},
            "preflight_state_dir": str(self.state),
            "preflight_mountpoint": str(self.mnt),
            "preflight_port": self.port,
            "preflight_demo_file": str(self.disk),
            "preflight_demo_size": "2G",
        }
        self.vars_file = base / "knobs.yml"
        self.vars_file.write_text(yaml.safe_dump(self.knobs))

    @property
    def run_dir(self) -> Path:
        return self.results / "e2e"

    def play(self, *extra: str, check: bool = False) -> subprocess.CompletedProcess:
        argv = [str(PLAYBOOK), "matrix.yml", "-e", f"@{self.vars_file}", *extra]
        if check:
            argv.append("--check")
        done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=1800,
                              env=dict(os.environ, ANSIBLE_FORCE_COLOR="0", ANSIBLE_NOCOLOR="1"))
        (self.base / "last-play.log").write_text(done.stdout + done.stderr)
        return done

    def stray_processes(self) -> list[str]:
        listing = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
        return [line for line in listing.splitlines() if str(self.state) in line and "ps -eo" not in line]

    def loop_devices(self) -> list[str]:
        if not self.disk.exists():
            return []
        found = subprocess.run(["losetup", "-n", "-O", "NAME", "-j", str(self.disk)], capture_output=True, text=True)
        return found.stdout.split()


@pytest.fixture(scope="module")
def env():
    # Not under /tmp/pytest-of-root (mode 0700): mysqld runs as `mysql` and must reach its socket.
    base = Path(tempfile.mkdtemp(prefix="innomatrix-e2e-", dir="/var/tmp"))
    base.chmod(0o755)
    environment = Env(base)
    yield environment
    subprocess.run(["umount", str(environment.mnt)], capture_output=True)
    for line in environment.stray_processes():
        subprocess.run(["kill", "-9", line.split()[0]], capture_output=True)
    for device in environment.loop_devices():
        subprocess.run(["losetup", "-d", device], capture_output=True)
    shutil.rmtree(base, ignore_errors=True)


def _ok(done: subprocess.CompletedProcess) -> None:
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]


def _snapshot(directory: Path) -> dict[str, tuple[str, int]]:
    """Every file under a directory with its content hash and modification time."""
    return {
        str(path.relative_to(directory)): (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns)
        for path in sorted(directory.rglob("*"))
        if path.is_file()
    }


def _trials(run_dir: Path) -> dict[str, dict]:
    return {
        str(path.parent.relative_to(run_dir)): json.loads(path.read_text())
        for path in run_dir.glob("*/*/*/*/bp-*/t*/r[0-9]/trial.json")
    }


def test_check_mode_prints_the_plan_and_changes_nothing(env):
    done = env.play(check=True)
    _ok(done)
    assert "localhost/xfs/oltp/A/bp-128M/t2/r1" in done.stdout
    assert "4 cells: 4 to run, 0 already finished" in done.stdout
    assert "would format a new loop device on" in done.stdout
    assert not env.disk.exists()
    assert not env.results.exists()


@pytest.mark.parametrize(
    ("knob", "message"),
    [
        ("variants=A,Z", "variants: unknown Z; accepted: A, B, C, D"),
        ("filesystems=ext4,btrfs", "filesystems: unknown btrfs; accepted: ext4, xfs"),
        ("bp_sizes=64Q", "bp_sizes: cannot read size '64Q'"),
        ("bp_sizes=4T", "bp_sizes: 4T is not smaller than the memory of this host"),
        ("duration=0", "duration='0' must be a whole number above zero"),
        ("warmup=-1", "warmup='-1' must be a whole number of zero or more"),
    ],
)
def test_bad_knob_is_refused_before_anything_changes(env, knob, message):
    done = env.play("-e", knob)
    assert done.returncode != 0
    assert message in done.stdout + done.stderr
    assert not env.disk.exists()


def test_reduced_matrix_runs_every_cell(env):
    done = env.play()
    _ok(done)
    trials = _trials(env.run_dir)
    assert sorted(trials) == sorted(
        f"localhost/{fs}/oltp/A/bp-{bp}/t2/r1" for fs in ("ext4", "xfs") for bp in ("64M", "128M")
    )
    for path, trial in trials.items():
        assert trial["status"] == "ok", (path, trial["reasons"])
        assert trial["schema"] == 1 and len(trial["key"]) == 16
        assert trial["server"]["flavor"] == "mariadb"
        assert trial["summary"]["throughput_median"] > 0
        assert trial["summary"]["latency_p95_ms_median"] > 0
        # Warmup excluded by time: one interval per second measured, none of the warmup (sysbench
        # may stop before printing its last interval).
        assert trial["summary"]["intervals_measured"] in (DURATION - 1, DURATION)
        cell_dir = env.run_dir / path
        for name in ("driver.log", "my.cnf", "variables.txt", "vmstat.log", "iostat.json", "status.log"):
            assert (cell_dir / name).stat().st_size > 0, name
        iostat = json.loads((cell_dir / "iostat.json").read_text())
        disks = iostat["sysstat"]["hosts"][0]["statistics"][0]["disk"]
        assert disks[0]["disk_device"].startswith("loop")
        variables = dict(line.split("\t", 1) for line in (cell_dir / "variables.txt").read_text().splitlines())
        expected_bp = {"64M": 64 << 20, "128M": 128 << 20}[trial["cell"]["bp_size"]]
        assert int(variables["innodb_buffer_pool_size"]) == expected_bp
        assert variables["innodb_flush_method"] == "O_DIRECT"
        assert variables["port"] == str(env.port)
        assert "[ 1s ]" in (cell_dir / "driver.log").read_text()  # the warmup stays in the raw log
        expected_restore = "reflink" if trial["cell"]["filesystem"] == "xfs" else "copy"
        assert trial["dataset"]["restored_by"] == expected_restore
        assert trial["dataset"]["load_s"] > 0
    for fs in ("ext4", "xfs"):
        datasets = list((env.run_dir / "localhost" / fs / "oltp").glob("dataset-*/dataset.json"))
        assert len(datasets) == 1, "one load per filesystem"
    run = json.loads((env.run_dir / "run.json").read_text())
    assert run["run_name"] == "e2e" and len(run["sessions"]) == 1
    host = json.loads((env.run_dir / "localhost" / "host.json").read_text())
    assert host["sessions"][0]["device"]["identity"] == f"loop:{env.disk}"
    assert "mount" not in subprocess.run(["findmnt", str(env.mnt)], capture_output=True, text=True).stdout.lower()
    assert env.stray_processes() == []
    assert len(env.loop_devices()) == 1


def test_rerun_of_one_buffer_pool_size_touches_only_its_cells(env):
    before = _snapshot(env.run_dir / "localhost")
    old = _trials(env.run_dir)
    done = env.play("-e", "bp_sizes=128M", "-e", "force=true")
    _ok(done)
    assert "2 cells: 2 to run, 0 already finished" in done.stdout
    after = _snapshot(env.run_dir / "localhost")
    untouched = {name: value for name, value in before.items() if "/bp-64M/" in name}
    assert untouched and all(after.get(name) == value for name, value in untouched.items())
    new = _trials(env.run_dir)
    for fs in ("ext4", "xfs"):
        path = f"localhost/{fs}/oltp/A/bp-128M/t2/r1"
        assert new[path]["times"]["started"] > old[path]["times"]["started"]
        kept = list((env.run_dir / path).parent.glob("r1.ok-*"))
        assert len(kept) == 1, "the earlier result is kept beside the new one"
        assert json.loads((kept[0] / "trial.json").read_text())["times"] == old[path]["times"]
    # ext4 had to be made again (the device held xfs last), so its dataset was loaded again;
    # the first load's record is kept beside the new one.
    ext4 = env.run_dir / "localhost" / "ext4" / "oltp"
    assert len(list(ext4.glob("dataset-*.earlier-*/dataset.json"))) == 1


def test_plain_rerun_runs_nothing(env):
    before = _snapshot(env.run_dir / "localhost")
    sessions = len(json.loads((env.run_dir / "run.json").read_text())["sessions"])
    done = env.play()
    _ok(done)
    assert "4 cells: 0 to run, 4 already finished" in done.stdout
    after = _snapshot(env.run_dir / "localhost")
    # Only the host record changes: it gains this session.
    assert after.pop("host.json") != before.pop("host.json")
    assert after == before
    assert len(json.loads((env.run_dir / "run.json").read_text())["sessions"]) == sessions + 1


def test_failing_cell_is_recorded_and_the_matrix_goes_on(env):
    # More client threads than the server allows connections (10 is the least MariaDB takes):
    # sysbench fails on its own, and the next cell still runs.
    done = env.play(
        "-e", "run_name=e2e-fail", "-e", "filesystems=xfs", "-e", "bp_sizes=64M", "-e", "threads=16,2",
        "-e", '{"mycnf_overrides": {"innodb_log_file_size": "48M", "max_connections": "10"}}',
    )
    assert done.returncode != 0
    trials = _trials(env.results / "e2e-fail")
    ok, failed = trials["localhost/xfs/oltp/A/bp-64M/t2/r1"], trials["localhost/xfs/oltp/A/bp-64M/t16/r1"]
    assert ok["status"] == "ok"
    assert failed["status"] == "failed"
    assert any("sysbench exited" in reason for reason in failed["reasons"]), failed["reasons"]
    assert "1 cell(s) failed: xfs/oltp/A/bp-64M/t16/r1" in done.stdout + done.stderr
    assert env.stray_processes() == []
