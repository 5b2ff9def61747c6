"""The matrix as the benches run it: matrix.yml on the demo's inventory, from the checkout's venv."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
PLAYBOOK = [str(ROOT / ".venv/bin/ansible-playbook"), "matrix.yml", "-e", "@inventory/demo.yml"]
# MariaDB's commands as the mysql_server role knows them (server, client, admin, install_db).
MARIADB_COMMANDS = yaml.safe_load((ROOT / "roles/mysql_server/vars/mariadb.yml").read_text())["__mysql_server_commands"]


def run(*extra: str) -> None:
    """One quiet run: the bench reads its results. A failed run ends the bench with the end of
    its output, where the playbook says what failed and why."""
    done = subprocess.run([*PLAYBOOK, *extra], cwd=ROOT, capture_output=True, text=True,
                          env=dict(os.environ, ANSIBLE_NOCOLOR="1"))
    if done.returncode != 0:
        sys.exit(f"ansible-playbook {' '.join(extra)} failed ({done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-1000:]}")
