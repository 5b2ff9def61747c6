"""host/modules/innomatrix_trial.py loaded as a Python module for the unit tests (host_module.py)."""

from __future__ import annotations

from host_module import load_host_module

trial_module = load_host_module("innomatrix_trial")
