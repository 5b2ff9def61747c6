"""The matrix as the benches run it: matrix.yml on the demo's inventory, from the checkout's venv."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PLAYBOOK = [str(ROOT / ".venv/bin/ansible-playbook"), "matrix.yml", "-e", "@inventory/demo.yml"]


def run(*extra: str) -> None:
    """One quiet run (its results and its error output are what the bench reads); fails loudly."""
    subprocess.run([*PLAYBOOK, *extra], cwd=ROOT, check=True, stdout=subprocess.DEVNULL,
                   env=dict(os.environ, ANSIBLE_NOCOLOR="1"))
