"""Oracle MySQL 9.7 on a remote host over real SSH (remote_hosts.py): a podman container of the
trixie-mysql image (tests/molecule/image.sh), which carries MySQL 9.7 from Debian sid, already
installed. The server role uses it as it is, whatever source it was asked for: nothing is fetched
from Oracle's repository (unreachable here, so a fetch would fail), and the source and the exact
package go into the facts host.json records.

The whole matrix cannot run on this host: sid's mysql-server conflicts with mariadb-common,
which Debian's sysbench needs (through libmariadb3), so the driver cannot be installed beside it.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from e2e_env import NEEDS_ROOT, ROOT
from remote_hosts import needs_podman, remote_hosts, write_inventory

pytestmark = [*NEEDS_ROOT, needs_podman]

PLAYBOOK = ROOT / ".venv" / "bin" / "ansible-playbook"
HOST = "db-mysql"


@pytest.fixture(scope="module")
def mysql_host():
    with remote_hosts("innomatrix-mysql-", {HOST: "trixie"}, kind="mysql") as (base, hosts):
        write_inventory(base / "hosts.yml", hosts)
        yield base, hosts[HOST]


def server_role(base, *extra: str) -> subprocess.CompletedProcess:
    """tests/e2e/playbooks/server.yml (the server role alone) against base/hosts.yml."""
    return subprocess.run([str(PLAYBOOK), "-i", str(base / "hosts.yml"), "tests/e2e/playbooks/server.yml", *extra],
                          cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, ANSIBLE_STDOUT_CALLBACK="ansible.posix.json"))


def recorded(done: subprocess.CompletedProcess) -> dict:
    """What the playbook's last task printed: the facts the role recorded."""
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    document, _ = json.JSONDecoder().raw_decode(done.stdout[done.stdout.index("{"):])
    return json.loads(document["plays"][0]["tasks"][-1]["hosts"][HOST]["msg"])


def test_the_image_holds_oracle_mysql_9_7_and_no_mariadb(mysql_host):
    _, host = mysql_host
    version = host.exec(["mysqld", "--version"]).stdout
    assert " 9.7." in version and "MariaDB" not in version, version
    assert host.exec(["sh", "-c", "command -v mariadbd"]).returncode != 0


@pytest.mark.parametrize("source", ["vendor", "distribution"])
def test_an_installed_mysql_9_7_is_used_as_it_is(mysql_host, source):
    base, _ = mysql_host
    facts = recorded(server_role(base, "-e", "mysql_server_flavor=mysql", "-e", f"mysql_server_source={source}"))
    assert facts["flavor"] == "mysql" and facts["version"].startswith("9.7."), facts
    assert facts["source"] == "already installed", facts
    assert facts["package"].startswith("mysql-server 9.7."), facts
    assert facts["server"] == "mysqld"


def test_a_mariadb_host_is_not_mistaken_for_mysql():
    """Debian's mariadb-server answers as mysqld too, but it is not MySQL: asked for mysql, the
    role tries to install mysql-server (not in Debian 12's sources, so it fails) instead of
    recording MariaDB as MySQL."""
    with remote_hosts("innomatrix-mariadb-", {"db-mariadb": "bookworm"}) as (base, hosts):
        assert "MariaDB" in hosts["db-mariadb"].exec(["mysqld", "--version"]).stdout
        write_inventory(base / "hosts.yml", hosts)
        done = server_role(base, "-e", "mysql_server_flavor=mysql")
        assert done.returncode != 0
        assert "No package matching 'mysql-server'" in done.stdout, done.stdout[-3000:]
