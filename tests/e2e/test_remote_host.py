"""The remote-host harness itself (remote_hosts.py): two podman containers reached over real SSH
on 127.0.0.1 as `bench` with passwordless sudo, each with its own loop device, and nothing of
them left once closed. Tests run in file order; the last one checks the cleanup."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from e2e_env import NEEDS_ROOT, ROOT
from remote_hosts import PREFIX, RemoteHost, needs_podman, our_containers, remote_hosts, write_inventory

pytestmark = [*NEEDS_ROOT, needs_podman]

ANSIBLE = ROOT / ".venv" / "bin" / "ansible"
# One host of each Debian release the suite is tested on.
IMAGES = {"rh-a": "bookworm-bench", "rh-b": "trixie-bench"}
SERVERS = {"rh-a": "10.11.", "rh-b": "11.8."}
HOSTS = tuple(IMAGES)


class Pair:
    def __init__(self, base: Path, hosts: dict[str, RemoteHost], seconds: float):
        self.base = base
        self.hosts = hosts
        self.seconds = seconds
        self.inventory = base / "hosts.yml"
        write_inventory(self.inventory, hosts)
        self.closed: dict[str, tuple[str, Path]] = {}

    def ansible(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(ANSIBLE), "-i", str(self.inventory), "bench", "-o", *args], cwd=ROOT,
                              capture_output=True, text=True, timeout=300,
                              env={**os.environ, "ANSIBLE_NOCOLOR": "1", "ANSIBLE_FORCE_COLOR": "0"})


@pytest.fixture(scope="module")
def pair():
    started = time.monotonic()
    with remote_hosts("innomatrix-e2e-rh-", IMAGES) as (base, hosts):
        yield Pair(base, hosts, time.monotonic() - started)


def by_host(done: subprocess.CompletedProcess) -> dict[str, str]:
    """`ansible -o` lines: `NAME | CHANGED | rc=0 | (stdout) OUTPUT` → {NAME: OUTPUT}."""
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    found = {}
    for line in done.stdout.splitlines():
        name, _, rest = line.partition(" | ")
        if "(stdout)" in rest:
            found[name] = rest.split("(stdout)", 1)[1].strip()
    return found


def test_inventory_names_every_host_in_group_bench(pair):
    print(f"two hosts up in {pair.seconds:.1f} s")
    listed = subprocess.run([str(ROOT / ".venv" / "bin" / "ansible-inventory"), "-i", str(pair.inventory), "--list"],
                            capture_output=True, text=True, check=True)
    inventory = json.loads(listed.stdout)
    assert sorted(inventory["bench"]["hosts"]) == sorted(HOSTS)
    for name, host in pair.hosts.items():
        assert inventory["_meta"]["hostvars"][name]["ansible_port"] == host.port
        assert inventory["_meta"]["hostvars"][name]["device"] == host.device
    assert len({host.port for host in pair.hosts.values()}) == len(HOSTS)


def test_bench_logs_in_over_ssh_and_becomes_root(pair):
    assert by_host(pair.ansible("-m", "ansible.builtin.command", "-a", "id -u")) == {name: "0" for name in HOSTS}
    uids = {name: host.exec(["id", "-u", "bench"]).stdout.strip() for name, host in pair.hosts.items()}
    assert all(uid.isdigit() and uid != "0" for uid in uids.values()), uids
    plain = by_host(pair.ansible("-m", "ansible.builtin.command", "-a", "id -u", "-e", "ansible_become=false"))
    assert plain == uids
    # Over SSH, not podman exec: sshd shows the bench user's session.
    for host in pair.hosts.values():
        assert any("sshd" in line for line in host.processes())


def test_ansible_shares_no_ssh_connection(pair):
    """A master connection would outlive a stopped sshd (and its container): see inventory_vars."""
    done = pair.ansible("-m", "ansible.builtin.ping", "--limit", HOSTS[0], "-vvv")
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    commands = [line for line in done.stdout.splitlines() if "SSH: EXEC ssh " in line]
    assert commands, done.stdout[-4000:]
    for command in commands:
        # ssh keeps the first value of an option: that one must be the one that shares nothing.
        assert re.search(r"-o ControlMaster=(\w+)", command).group(1) == "no", command
        assert re.search(r"-o '?ControlPath=\"?([^\s'\"]+)", command).group(1) == "none", command
        assert "ControlPersist" not in command, command


def test_each_host_has_its_own_loop_device_as_a_block_device(pair):
    devices = {name: host.device for name, host in pair.hosts.items()}
    assert len(set(devices.values())) == len(HOSTS), devices
    for name, host in pair.hosts.items():
        assert host.device.startswith("/dev/loop")
        assert host.loop_devices() == [host.device]
        assert host.exec(["test", "-b", host.device]).returncode == 0, name
        # The same device as the host's: its size is the backing file's.
        size = host.exec(["blockdev", "--getsize64", host.device])
        assert size.stdout.strip() == str(2 * 1024**3), size
    # And through Ansible, as the playbook will see it.
    seen = by_host(pair.ansible("-m", "ansible.builtin.shell", "-a", "test -b {{ device }} && echo {{ device }}"))
    assert seen == devices


def test_a_stopped_sshd_loses_the_host_and_a_started_one_brings_it_back(pair):
    host = pair.hosts[HOSTS[0]]
    host.stop_sshd()
    lost = subprocess.run(host.ssh_argv("true"), capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert lost.returncode == 255, lost
    done = pair.ansible("-m", "ansible.builtin.command", "-a", "true", "--limit", HOSTS[0])
    assert done.returncode != 0 and "UNREACHABLE" in done.stdout, done.stdout + done.stderr
    host.start_sshd()
    assert by_host(pair.ansible("-m", "ansible.builtin.command", "-a", "id -u")) == {name: "0" for name in HOSTS}


def test_the_server_and_the_workload_are_in_the_image(pair):
    for name, host in pair.hosts.items():
        for argv in (["mariadbd", "--version"], ["sysbench", "--version"], ["iostat", "-V"], ["mkfs.xfs", "-V"]):
            done = host.exec(argv)
            assert done.returncode == 0, (argv, done.stdout + done.stderr)
        # Each release's own server: the matrix meets two MariaDB major versions.
        assert f"Ver {SERVERS[name]}" in host.exec(["mariadbd", "--version"]).stdout, name


def test_close_leaves_no_container_and_no_loop_device(pair):
    for host in pair.hosts.values():
        disk = host.disk
        host.close()
        host.close()  # idempotent
        assert not host.container_exists()
        found = subprocess.run(["losetup", "-n", "-O", "NAME", "-j", str(disk)], capture_output=True, text=True)
        assert found.stdout.strip() == "", found.stdout
    assert our_containers() == [], PREFIX
