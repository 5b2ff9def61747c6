"""The isolated environment the end-to-end tests share: its own loop file, state directory,
mount point, port and results, so that tests never touch the machine's other loop devices or
servers. Cleanup finds the loop device by its backing file and processes by the env's paths."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from innomatrix_host import runtime

ROOT = Path(__file__).resolve().parents[2]
PLAYBOOK = ROOT / ".venv" / "bin" / "ansible-playbook"

NEEDS_ROOT = [
    pytest.mark.e2e,
    pytest.mark.skipif(os.geteuid() != 0, reason="END-TO-END TESTS SKIPPED: they need root (loop devices, mkfs, mount)"),
    pytest.mark.skipif(not PLAYBOOK.exists(), reason="END-TO-END TESTS SKIPPED: no .venv; run `make test`"),
]

WARMUP, DURATION = 2, 4
PLAY_ENV = dict(os.environ, ANSIBLE_FORCE_COLOR="0", ANSIBLE_NOCOLOR="1")
# Full command lines whatever COLUMNS says (pytest sets it; ps would cut lines to fit).
PS = ["ps", "-e", "-ww", "-o", "pid,args"]


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
            "preflight_secrets_dir": str(base / "secrets"),
            "preflight_mountpoint": str(self.mnt),
            "preflight_port": self.port,
            "preflight_demo_file": str(self.disk),
            "preflight_demo_size": "2G",
        }
        self.vars_file = base / "knobs.yml"
        self.vars_file.write_text(yaml.safe_dump(self.knobs))

    def bench_password(self) -> str:
        return (self.base / "secrets" / "localhost-bench.password").read_text().strip()

    @property
    def run_dir(self) -> Path:
        return self.results / "e2e"

    def play_argv(self, *extra: str) -> list[str]:
        return [str(PLAYBOOK), "matrix.yml", "-e", f"@{self.vars_file}", *extra]

    def play(self, *extra: str, check: bool = False) -> subprocess.CompletedProcess:
        argv = self.play_argv(*extra, *(["--check"] if check else []))
        done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=1800, env=PLAY_ENV)
        (self.base / "last-play.log").write_text(done.stdout + done.stderr)
        return done

    def stray_processes(self) -> list[str]:
        listing = subprocess.run(PS, capture_output=True, text=True).stdout
        # Every process of this environment names its directory: mysqld its my.cnf under results,
        # sysbench its config file under state.
        return [line for line in listing.splitlines() if str(self.base) in line and "ps -e" not in line]

    def loop_devices(self) -> list[str]:
        if not self.disk.exists():
            return []
        found = subprocess.run(["losetup", "-n", "-O", "NAME", "-j", str(self.disk)], capture_output=True, text=True)
        return found.stdout.split()


def ok(done: subprocess.CompletedProcess) -> None:
    """The play succeeded; if not, say why: its error lines first (a long recap follows them), then its tail."""
    output = done.stdout + done.stderr
    errors = [line for line in output.splitlines() if line.lstrip().startswith(("fatal:", "[ERROR]", "msg:"))]
    assert done.returncode == 0, "\n".join(errors[-20:]) + "\n...\n" + output[-3000:]


def innomatrix(*args: str) -> str:
    """The analysis CLI on the controller, as a user runs it on what a play brought home: its output."""
    done = subprocess.run([str(ROOT / ".venv/bin/innomatrix"), *args], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def snapshot(directory: Path) -> dict[str, tuple[str, int]]:
    """Every file under a directory with its content hash and modification time."""
    return {
        str(path.relative_to(directory)): (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns)
        for path in sorted(directory.rglob("*"))
        if path.is_file()
    }


def trials_of(run_dir: Path) -> dict[str, dict]:
    return {
        str(path.parent.relative_to(run_dir)): json.loads(path.read_text())
        for path in run_dir.glob("*/*/*/*/bp-*/t*/r[0-9]/trial.json")
    }




def pages_flushed_by_type(loaded) -> dict[str, dict[str, float]]:
    """Each trial's pages flushed over its intervals (their rates × the interval): all of them
    (Innodb_buffer_pool_pages_flushed) and those of flush-list and of LRU batches (INNODB_METRICS,
    as the sampler reads them). `loaded`: an innomatrix.frame.Frame."""
    from innomatrix_host.flush_points import FLUSH_TYPE_METRICS, METRIC_PREFIX

    names = {"all": "status.Innodb_buffer_pool_pages_flushed",
             **dict(zip(("list", "lru"), (f"status.{METRIC_PREFIX}{name}" for name in FLUSH_TYPE_METRICS)))}
    found: dict[str, dict[str, float]] = {}
    for trial, meta in loaded.trials.iterrows():
        rows = loaded.intervals[(loaded.intervals["trial"] == trial).to_numpy()]
        found[trial] = {kind: float(rows.loc[(rows["metric"] == name).to_numpy(), "value"].sum())
                        * float(meta["report_interval_s"]) for kind, name in names.items()}
    return found


# This machine's MariaDB, for a private server: root by its socket, no test database.
MARIADB = {"server": "mariadbd", "client": "mariadb", "admin": "mariadb-admin",
           "install_db": ["mariadb-install-db", "--defaults-file={cnf}", "--auth-root-authentication-method=socket",
                          "--skip-test-db"]}


@contextlib.contextmanager
def private_mariadb(options: str, port: int, prefix: str) -> Iterator[tuple[runtime.Server, Path]]:
    """A MariaDB of its own (datadir, socket, port) under a new directory of /var/tmp, started with
    `options`; stopped by the PID it started and its directory removed when the block ends.
    Yields the server and that directory."""
    # Not under /tmp/pytest-of-root (mode 0700): mysqld runs as `mysql` and must reach its socket.
    base = Path(tempfile.mkdtemp(prefix=prefix, dir="/var/tmp"))
    base.chmod(0o755)
    datadir, run_dir = base / "data", base / "run"
    for directory in (datadir, run_dir):
        directory.mkdir()
        shutil.chown(directory, "mysql", "mysql")
    instance = {"socket": str(run_dir / "mysqld.sock"), "port": port}
    cnf = base / "my.cnf"
    runtime.write_cnf(cnf, options, instance, datadir, run_dir / "mysqld.err", runtime.server_tmpdir(str(run_dir), instance))
    mysqld = runtime.Server(MARIADB, cnf, instance["socket"], base / "mysqld.out")
    try:
        mysqld.initialize()
        mysqld.start()
        yield mysqld, base
    finally:
        mysqld.stop(timeout=120)
        runtime.end(mysqld.proc)  # by the PID it started, if the clean shutdown did not end it
        shutil.rmtree(base, ignore_errors=True)
