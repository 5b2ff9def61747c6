"""Three remote benchmark hosts at once (Debian 12 with MariaDB 10.11, Debian 13 with MariaDB 11.8,
Debian 13 with Oracle MySQL 9.7), over real SSH: podman containers on 127.0.0.1 ports, each
with its own loop device, reached as a non-root user with sudo (remote_hosts.py).

Every cell is written on its host and brought home to the controller's results tree, which the
rerun decides from; the report compares the hosts and the settings their servers ran; a host lost
mid-matrix holds no other back.
Tests run in file order.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from e2e_env import NEEDS_ROOT, PLAYBOOK, ROOT, ok, snapshot, trials_of
from remote_hosts import RemoteHost, needs_podman, play_matrix, project_inventory, remote_hosts

pytestmark = [*NEEDS_ROOT, needs_podman]

# Heterogeneous hosts: Debian 12 with MariaDB 10.11, Debian 13 with MariaDB 11.8 and with MySQL 9.7.
IMAGES = {"bench-a": "bookworm-bench", "bench-b": "trixie-bench", "bench-c": "trixie-mysql"}
SERVERS = {"bench-a": ("mariadb", "10.11."), "bench-b": ("mariadb", "11.8."), "bench-c": ("mysql", "9.7.")}
PACKAGES = {"bench-a": "mariadb-server-core 1:10.11.", "bench-b": "mariadb-server-core 1:11.8.",
            "bench-c": "mysql-server-core 9.7."}
HOSTS = tuple(IMAGES)
# Each host's server, and a redo log that fits the 2 GiB test device: as files on MariaDB, as
# the one capacity on MySQL 9.7 (which refuses an override of the files it replaced).
HOST_VARS = {
    host: {"mysql_flavor": flavor,
           "mycnf_overrides": {"innodb_redo_log_capacity": "96M"} if flavor == "mysql" else {"innodb_log_file_size": "48M"}}
    for host, (flavor, _) in SERVERS.items()
}
CELLS = ("xfs/oltp/A/bp-64M/t2/r1", "xfs/oltp/A/bp-128M/t2/r1")
STATE_DIR = "/var/lib/innomatrix-fleet"


class Fleet:
    def __init__(self, base: Path, hosts: dict[str, RemoteHost]):
        self.base = base
        self.hosts = hosts
        self.results = base / "results"
        self.inventory = project_inventory(base, hosts, host_vars=HOST_VARS)
        self.knobs = base / "knobs.yml"
        self.knobs.write_text(yaml.safe_dump({
            "filesystems": ["xfs"], "variants": ["A"], "bp_sizes": ["64M", "128M"], "threads": [2],
            "warmup": 2, "duration": 4, "report_interval": 1, "oltp_tables": 2, "oltp_table_size": 5000,
            "run_name": "fleet", "results_dir": str(self.results),
            # A host lost in the middle of a trial is given up a minute after the trial's end.
            "reconnect_grace": 60,
            "preflight_state_dir": STATE_DIR, "preflight_secrets_dir": str(base / "secrets"),
            "preflight_mountpoint": "/mnt/innomatrix-fleet",
        }))

    @property
    def run_dir(self) -> Path:
        return self.results / "fleet"

    def play(self, *extra: str) -> subprocess.CompletedProcess:
        return play_matrix(self.inventory, self.knobs, *extra, log=self.base / "last-play.log")

    def start(self, *extra: str) -> subprocess.Popen:
        argv = [str(PLAYBOOK), "-i", str(self.inventory), "matrix.yml", "-e", f"@{self.knobs}", *extra]
        return subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                env=dict(os.environ, ANSIBLE_FORCE_COLOR="0", ANSIBLE_NOCOLOR="1"))

    def password(self, host: str) -> str:
        return (self.base / "secrets" / f"{host}-bench.password").read_text().strip()


@pytest.fixture(scope="module")
def fleet():
    with remote_hosts("innomatrix-fleet-", IMAGES) as (base, hosts):
        yield Fleet(base, hosts)


def test_every_host_runs_its_cells_and_every_cell_comes_home(fleet):
    done = fleet.play()
    ok(done)
    trials = trials_of(fleet.run_dir)
    assert sorted(trials) == sorted(f"{host}/{cell}" for host in HOSTS for cell in CELLS)
    for path, trial in trials.items():
        host = path.split("/")[0]
        assert trial["status"] == "ok", (path, trial["reasons"])
        assert trial["cell"]["host"] == host and trial["summary"]["throughput_median"] > 0
        assert trial["device"]["path"] == fleet.hosts[host].device
        # The server on that host ran the my.cnf the plan rendered for its own server version,
        # and started.
        flavor, series = SERVERS[host]
        assert trial["server"]["flavor"] == flavor and trial["server"]["version"].startswith(series), trial["server"]
        directory = fleet.run_dir / path
        mycnf = (directory / "my.cnf").read_text()
        assert f"for {flavor} {series}" in mycnf and "innodb_buffer_pool_size" in mycnf
        assert (directory / "variables.txt").stat().st_size > 0
    for host in HOSTS:
        records = fleet.run_dir / host
        session = json.loads((records / "host.json").read_text())["sessions"][-1]
        assert session["device"]["path"] == fleet.hosts[host].device
        # The image holds the server: used as it is, and recorded with the exact package.
        assert session["server"]["source"] == "already installed", session["server"]
        assert session["server"]["package"].startswith(PACKAGES[host]), session["server"]
        assert [r["label"] for r in json.loads((records / "smart.json").read_text())["readings"]] == ["xfs before", "xfs after"]
        assert len(list((records / "xfs" / "oltp").glob("dataset-*/dataset.json"))) == 1
    # Nothing half-brought: no archive left on the controller or in a host's outbox.
    assert [p for p in fleet.run_dir.rglob("*.tar.gz")] == []
    for host in fleet.hosts.values():
        assert host.exec(["find", "/home/bench/.innomatrix-outbox", "-type", "f"]).stdout == ""


def test_the_report_compares_the_hosts_and_their_servers_settings(fleet):
    with open(fleet.run_dir / "tables" / "host_compare.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    pairs = [("bench-a", "bench-b"), ("bench-a", "bench-c"), ("bench-b", "bench-c")]
    assert sorted((r["host_a"], r["host_b"], r["bp_size"]) for r in rows) == sorted(
        (*pair, bp) for pair in pairs for bp in ("64M", "128M"))
    # One trial a side: a ratio, and no verdict.
    assert all(float(r["ratio"]) > 0 and r["differs"] == "False" for r in rows)
    with open(fleet.run_dir / "tables" / "hosts.csv", newline="") as handle:
        assert [r["host"] for r in csv.DictReader(handle)] == list(HOSTS)
    # Variant A is not one configuration across servers: the drift table shows what each ran,
    # read from the running servers (MySQL 8.4 raised innodb_io_capacity from 200 to 10000).
    with open(fleet.run_dir / "tables" / "settings_drift.csv", newline="") as handle:
        drift = {row["setting"]: row for row in csv.DictReader(handle) if row["variant"] == "A"}
    capacity = {column.split(" · ")[0]: value for column, value in drift["innodb_io_capacity"].items() if " · " in column}
    assert capacity == {"bench-a": "200", "bench-b": "200", "bench-c": "10000"}, drift["innodb_io_capacity"]
    assert any(name.startswith("median throughput") for name in drift)


def test_the_rerun_is_decided_on_the_controller_and_runs_nothing(fleet):
    before = {path: (fleet.run_dir / path / "trial.json").read_bytes() for path in trials_of(fleet.run_dir)}
    # The hosts' staging trees are a cache: without them the controller still knows what is done.
    for host in fleet.hosts.values():
        host.exec(["rm", "-rf", f"{STATE_DIR}/stage"])
    done = fleet.play()
    ok(done)
    assert "2 cells: 0 to run, 2 already finished" in done.stdout
    assert {path: (fleet.run_dir / path / "trial.json").read_bytes() for path in trials_of(fleet.run_dir)} == before


def test_check_mode_against_every_host_changes_nothing_on_any(fleet):
    def state() -> tuple:
        listing = f"find {STATE_DIR} /mnt/innomatrix-fleet -printf '%p %s %T@\\n' | sort"
        hosts = tuple(host.exec(["sh", "-c", listing]).stdout for host in fleet.hosts.values())
        return snapshot(fleet.results), hosts

    before = state()
    done = fleet.play("--check", "-e", "run_name=fleet-check")
    ok(done)
    for host in HOSTS:
        assert f"{host}/xfs/oltp/A/bp-64M/t2/r1" in done.stdout
    assert done.stdout.count("would format") == len(HOSTS)
    assert state() == before


def test_a_lost_host_holds_no_other_back_and_the_rerun_runs_only_its_cells(fleet):
    run_dir, lost = fleet.results / "fleet-loss", fleet.hosts["bench-b"]
    argv = ["-e", "run_name=fleet-loss", "-e", "repeats=2"]
    playing = fleet.start(*argv)
    deadline = time.monotonic() + 900
    while not list(run_dir.glob("bench-b/*/*/*/bp-*/t*/r*/trial.json")):
        assert playing.poll() is None and time.monotonic() < deadline, "bench-b never brought a cell home"
        time.sleep(0.5)
    lost.stop_sshd()
    out, _ = playing.communicate(timeout=1800)
    (fleet.base / "lost-play.log").write_text(out)
    assert playing.returncode != 0
    assert "UNREACHABLE" in out and "bench-b did not finish:" in out
    trials = trials_of(run_dir)
    kept = {path: (run_dir / path / "trial.json").read_bytes() for path in trials}
    on = {host: sorted(path for path in trials if path.startswith(host + "/")) for host in HOSTS}
    # The other hosts ran all their cells; the lost one's finished cells were home before it went.
    for other in ("bench-a", "bench-c"):
        assert len(on[other]) == 4 and all(trials[path]["status"] == "ok" for path in on[other])
    assert 1 <= len(on["bench-b"]) < 4
    lost.start_sshd()
    # Back: whatever the cut connection left running on the host ends by itself first.
    deadline = time.monotonic() + 300
    while [line for line in lost.processes() if "mariadbd" in line or "sysbench" in line or "AnsiballZ" in line]:
        assert time.monotonic() < deadline, lost.processes()
        time.sleep(1)
    done = fleet.play(*argv)
    ok(done)
    assert "4 cells: 0 to run, 4 already finished" in done.stdout
    assert f"4 cells: {4 - len(on['bench-b'])} to run, {len(on['bench-b'])} already finished" in done.stdout
    trials = trials_of(run_dir)
    assert len(trials) == 4 * len(HOSTS) and all(trial["status"] == "ok" for trial in trials.values())
    assert {path: (run_dir / path / "trial.json").read_bytes() for path in kept} == kept


def test_a_trial_survives_a_dropped_connection_and_comes_home_when_the_host_is_back(fleet):
    run_dir, host = fleet.results / "fleet-drop", fleet.hosts["bench-a"]
    playing = fleet.start("--limit", "bench-a", "-e", "run_name=fleet-drop", "-e", "bp_sizes=64M",
                          "-e", "duration=30")

    def driving() -> bool:
        return any("sysbench" in line and line.endswith(" run") for line in host.processes())

    deadline = time.monotonic() + 600
    while not driving():
        assert playing.poll() is None and time.monotonic() < deadline, "the trial never started"
        time.sleep(0.5)
    time.sleep(2)
    # Every SSH session ends, the controller's polls among them, for longer than several polls.
    host.stop_sshd()
    time.sleep(8)
    assert driving(), "the trial ended with its connection"
    host.start_sshd()
    out, _ = playing.communicate(timeout=900)
    (fleet.base / "drop-play.log").write_text(out)
    assert playing.returncode == 0, out[-3000:]
    trials = trials_of(run_dir)
    assert list(trials) == ["bench-a/xfs/oltp/A/bp-64M/t2/r1"]
    trial = trials["bench-a/xfs/oltp/A/bp-64M/t2/r1"]
    assert trial["status"] == "ok", trial["reasons"]
    assert trial["summary"]["intervals_measured"] >= 28


def test_no_stray_process_and_no_secret_anywhere(fleet):
    for name, host in fleet.hosts.items():
        running = host.processes()
        assert not [line for line in running if any(tool in line for tool in ("mariadbd", "mysqld", "sysbench",
                                                                              "iostat", "vmstat"))], running
        secret = fleet.password(name)
        assert secret not in "\n".join(running)
        assert host.exec(["grep", "-rlF", secret, f"{STATE_DIR}/stage"]).stdout == ""
        found = subprocess.run(["grep", "-rlF", secret, str(fleet.results), str(fleet.base / "last-play.log")],
                               capture_output=True, text=True)
        assert found.stdout == "", found.stdout
