"""Fixtures of the end-to-end tests; the environment itself is e2e_env.py."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from e2e_env import Env


@pytest.fixture(scope="module")
def env(request):
    # Not under /tmp/pytest-of-root (mode 0700): mysqld runs as `mysql` and must reach its socket.
    # A module may name another parent (ENV_PARENT), e.g. one in memory for its loop file.
    parent = getattr(request.module, "ENV_PARENT", "/var/tmp")
    base = Path(tempfile.mkdtemp(prefix="innomatrix-e2e-", dir=parent))
    base.chmod(0o755)
    environment = Env(base)
    yield environment
    subprocess.run(["umount", str(environment.mnt)], capture_output=True)
    for line in environment.stray_processes():
        subprocess.run(["kill", "-9", line.split()[0]], capture_output=True)
    for device in environment.loop_devices():
        subprocess.run(["losetup", "-d", device], capture_output=True)
    shutil.rmtree(base, ignore_errors=True)
