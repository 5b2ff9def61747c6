"""host/modules/innomatrix_trial.py loaded as a Python module for the unit tests (Ansible's wrapper
names the host package ansible.module_utils.innomatrix_host; here it is the package itself)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import innomatrix_host

ROOT = Path(__file__).resolve().parents[2]
sys.modules.setdefault("ansible.module_utils.innomatrix_host", innomatrix_host)
_spec = importlib.util.spec_from_file_location("innomatrix_trial", ROOT / "host/modules/innomatrix_trial.py")
trial_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(trial_module)
