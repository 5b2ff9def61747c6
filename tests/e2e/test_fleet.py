"""Two remote benchmark hosts at once (Debian 12 with MariaDB 10.11, Debian 13 with MariaDB 11.8),
over real SSH: podman containers on 127.0.0.1 ports, each
with its own loop device, reached as a non-root user with sudo (remote_hosts.py).

Every cell is written on its host and brought home to the controller's results tree, which the
rerun decides from; the report compares the two hosts; a host lost mid-matrix holds no other back.
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
from remote_hosts import RemoteHost, needs_podman, remote_hosts, write_inventory

pytestmark = [*NEEDS_ROOT, needs_podman]

# Heterogeneous hosts: Debian 12 with MariaDB 10.11, Debian 13 with MariaDB 11.8.
RELEASES = {"bench-a": "bookworm", "bench-b": "trixie"}
SERVERS = {"bench-a": "10.11.", "bench-b": "11.8."}
HOSTS = tuple(RELEASES)
CELLS = ("xfs/oltp/A/bp-64M/t2/r1", "xfs/oltp/A/bp-128M/t2/r1")
STATE_DIR = "/var/lib/innomatrix-fleet"


class Fleet:
    def __init__(self, base: Path, hosts: dict[str, RemoteHost]):
        self.base = base
        self.hosts = hosts
        self.results = base / "results"
        inventory_dir = base / "inventory"
        inventory_dir.mkdir()
        # The project's knob defaults, as inventory/ gives them to any inventory beside them; the
        # device is each host's own (a host variable, which -e device= would override for all).
        (inventory_dir / "group_vars").symlink_to(ROOT / "inventory" / "group_vars")
        self.inventory = inventory_dir / "hosts.yml"
        write_inventory(self.inventory, hosts)
        self.knobs = base / "knobs.yml"
        self.knobs.write_text(yaml.safe_dump({
            "filesystems": ["xfs"], "variants": ["A"], "bp_sizes": ["64M", "128M"], "threads": [2],
            "warmup": 2, "duration": 4, "report_interval": 1, "oltp_tables": 2, "oltp_table_size": 5000,
            "run_name": "fleet", "results_dir": str(self.results),
            # A host lost in the middle of a trial is given up a minute after the trial's end.
            "reconnect_grace": 60,
            "mycnf_overrides": {"innodb_log_file_size": "48M"},
            "preflight_state_dir": STATE_DIR, "preflight_secrets_dir": str(base / "secrets"),
            "preflight_mountpoint": "/mnt/innomatrix-fleet",
        }))

    @property
    def run_dir(self) -> Path:
        return self.results / "fleet"

    def play(self, *extra: str) -> subprocess.CompletedProcess:
        argv = [str(PLAYBOOK), "-i", str(self.inventory), "matrix.yml", "-e", f"@{self.knobs}", *extra]
        done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=1800,
                              env=dict(os.environ, ANSIBLE_FORCE_COLOR="0", ANSIBLE_NOCOLOR="1"))
        (self.base / "last-play.log").write_text(done.stdout + done.stderr)
        return done

    def start(self, *extra: str) -> subprocess.Popen:
        argv = [str(PLAYBOOK), "-i", str(self.inventory), "matrix.yml", "-e", f"@{self.knobs}", *extra]
        return subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                env=dict(os.environ, ANSIBLE_FORCE_COLOR="0", ANSIBLE_NOCOLOR="1"))

    def password(self, host: str) -> str:
        return (self.base / "secrets" / f"{host}-bench.password").read_text().strip()


@pytest.fixture(scope="module")
def fleet():
    with remote_hosts("innomatrix-fleet-", RELEASES) as (base, hosts):
        yield Fleet(base, hosts)


def test_both_hosts_run_their_cells_and_every_cell_comes_home(fleet):
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
        assert trial["server"]["version"].startswith(SERVERS[host]), trial["server"]
        directory = fleet.run_dir / path
        mycnf = (directory / "my.cnf").read_text()
        assert f"for mariadb {SERVERS[host]}" in mycnf and "innodb_buffer_pool_size" in mycnf
        assert (directory / "variables.txt").stat().st_size > 0
    for host in HOSTS:
        records = fleet.run_dir / host
        session = json.loads((records / "host.json").read_text())["sessions"][-1]
        assert session["device"]["path"] == fleet.hosts[host].device
        # The image holds the server: used as it is, and recorded with the exact package.
        assert session["server"]["source"] == "already installed", session["server"]
        assert session["server"]["package"].startswith("mariadb-server 1:" + SERVERS[host]), session["server"]
        assert [r["label"] for r in json.loads((records / "smart.json").read_text())["readings"]] == ["xfs before", "xfs after"]
        assert len(list((records / "xfs" / "oltp").glob("dataset-*/dataset.json"))) == 1
    # Nothing half-brought: no archive left on the controller or in a host's outbox.
    assert [p for p in fleet.run_dir.rglob("*.tar.gz")] == []
    for host in fleet.hosts.values():
        assert host.exec(["find", "/home/bench/.innomatrix-outbox", "-type", "f"]).stdout == ""


def test_the_report_compares_the_two_hosts(fleet):
    with open(fleet.run_dir / "tables" / "host_compare.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["host_a"], r["host_b"], r["bp_size"]) for r in rows] == [("bench-a", "bench-b", "64M"),
                                                                        ("bench-a", "bench-b", "128M")]
    # One trial a side: a ratio, and no verdict.
    assert all(float(r["ratio"]) > 0 and r["differs"] == "False" for r in rows)
    with open(fleet.run_dir / "tables" / "hosts.csv", newline="") as handle:
        assert [r["host"] for r in csv.DictReader(handle)] == list(HOSTS)


def test_the_rerun_is_decided_on_the_controller_and_runs_nothing(fleet):
    before = {path: (fleet.run_dir / path / "trial.json").read_bytes() for path in trials_of(fleet.run_dir)}
    # The hosts' staging trees are a cache: without them the controller still knows what is done.
    for host in fleet.hosts.values():
        host.exec(["rm", "-rf", f"{STATE_DIR}/stage"])
    done = fleet.play()
    ok(done)
    assert "2 cells: 0 to run, 2 already finished" in done.stdout
    assert {path: (fleet.run_dir / path / "trial.json").read_bytes() for path in trials_of(fleet.run_dir)} == before


def test_check_mode_against_both_hosts_changes_nothing_on_either(fleet):
    def state() -> tuple:
        listing = f"find {STATE_DIR} /mnt/innomatrix-fleet -printf '%p %s %T@\\n' | sort"
        hosts = tuple(host.exec(["sh", "-c", listing]).stdout for host in fleet.hosts.values())
        return snapshot(fleet.results), hosts

    before = state()
    done = fleet.play("--check", "-e", "run_name=fleet-check")
    ok(done)
    for host in HOSTS:
        assert f"{host}/xfs/oltp/A/bp-64M/t2/r1" in done.stdout
    assert done.stdout.count("would format") == 2
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
    # The other host ran all its cells; the lost one's finished cells were home before it went.
    assert len(on["bench-a"]) == 4 and all(trials[path]["status"] == "ok" for path in on["bench-a"])
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
    assert len(trials) == 8 and all(trial["status"] == "ok" for trial in trials.values())
    assert {path: (run_dir / path / "trial.json").read_bytes() for path in kept} == kept


def test_a_trial_survives_a_dropped_connection_and_comes_home_when_the_host_is_back(fleet):
    run_dir, host = fleet.results / "fleet-drop", fleet.hosts["bench-a"]
    playing = fleet.start("--limit", "bench-a", "-e", "run_name=fleet-drop", "-e", "bp_sizes=64M",
                          "-e", "duration=20")

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
    assert trial["summary"]["intervals_measured"] >= 18


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
