"""tpcc-mysql on a remote host over real SSH (a podman container, remote_hosts.py): the source
tree is copied from the controller to the host, built there, loaded and measured, and the cells
come home to the controller's tree: on a MariaDB 10.11 host and on an Oracle MySQL 9.7 one.

The upstream repository cannot be reached from CI here, so without TPCC_MYSQL_SRC this test
skips, loudly. To run it: fetch Percona-Lab/tpcc-mysql anywhere and
    TPCC_MYSQL_SRC=/path/to/tpcc-mysql .venv/bin/pytest tests/e2e/test_tpcc_remote.py
"""

from __future__ import annotations

import json

import pytest
import yaml

from e2e_env import NEEDS_ROOT, ok, trials_of
from remote_hosts import needs_podman, play_matrix, project_inventory, remote_hosts
from test_tpcc_matrix import SOURCE, TPCC_KNOBS

pytestmark = [
    *NEEDS_ROOT,
    needs_podman,
    pytest.mark.skipif(
        not SOURCE,
        reason="TPCC-MYSQL REMOTE-HOST TEST SKIPPED: set TPCC_MYSQL_SRC to a tpcc-mysql source tree "
        "(github.com/Percona-Lab/tpcc-mysql is not reachable from CI here)",
    ),
]


# MariaDB 10.11, and Oracle MySQL 9.7 (its driver account is caching_sha2_password's: 9.x has no other).
SERVERS = {
    "mariadb": ("bookworm-bench", {"mysql_flavor": "mariadb", "mycnf_overrides": {"innodb_log_file_size": "48M"}}),
    "mysql": ("trixie-mysql", {"mysql_flavor": "mysql", "mycnf_overrides": {"innodb_redo_log_capacity": "96M"}}),
}


@pytest.mark.parametrize("server", sorted(SERVERS))
def test_tpcc_on_a_remote_host_is_built_there_and_its_cells_come_home(server):
    image, host_vars = SERVERS[server]
    with remote_hosts("innomatrix-tpcc-remote-", {"tpcc-host": image}) as (base, hosts):
        # The image carries no apt lists (as Molecule's prepare, refresh them): a real host has
        # them, and the tpcc role installs a compiler and headers the image does not hold.
        updated = hosts["tpcc-host"].exec(["apt-get", "update", "-q"], timeout=300)
        assert updated.returncode == 0, updated.stdout + updated.stderr
        inventory = project_inventory(base, hosts, host_vars={"tpcc-host": host_vars})
        knobs = base / "knobs.yml"
        knobs.write_text(yaml.safe_dump({
            **TPCC_KNOBS, "bp_sizes": ["64M"], "tpcc_mysql_src": SOURCE, "run_name": "tpcc-remote",
            "results_dir": str(base / "results"), "reconnect_grace": 120,
            "preflight_secrets_dir": str(base / "secrets"),
        }))
        ok(play_matrix(inventory, knobs, log=base / "play.log"))
        run_dir = base / "results" / "tpcc-remote"
        trials = trials_of(run_dir)
        assert list(trials) == ["tpcc-host/xfs/tpcc/A/bp-64M/t2/r1"]
        [trial] = trials.values()
        assert trial["status"] == "ok", trial["reasons"]
        assert trial["driver"]["name"] == "tpcc-mysql" and trial["summary"]["tpmc_measured"] > 0
        assert trial["server"]["flavor"] == host_vars["mysql_flavor"]
        [dataset] = [json.loads(p.read_text()) for p in run_dir.glob("tpcc-host/xfs/tpcc/dataset-*/dataset.json")]
        assert dataset["tpcc"]["row_counts"]["stock"] == 200000 and dataset["tpcc_commit"]
        # Built on the host from the tree the controller copied there.
        host = hosts["tpcc-host"]
        built = host.exec(["find", "/opt/innomatrix/tpcc-mysql", "-name", "tpcc_start", "-type", "f", "-perm", "-u+x"])
        assert built.stdout.strip(), built
        assert not [line for line in host.processes() if any(name in line for name in ("tpcc_start", "mariadbd", "mysqld"))]
