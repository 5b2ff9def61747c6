"""A host module loaded for the unit tests uses the host package's own submodules, not copies:
an exception class caught by identity (TrialError) must be the one the tests and the e2e helpers
import, whatever order pytest collects them in."""

from __future__ import annotations

import pkgutil
import sys

import innomatrix_host
import innomatrix_host.runtime
from host_module import ALIAS
from trial_module import trial_module


def test_every_submodule_has_one_copy_under_both_names() -> None:
    names = [info.name for info in pkgutil.iter_modules(innomatrix_host.__path__)]
    assert "runtime" in names and "layouts" in names
    for name in names:
        assert sys.modules[f"{ALIAS}.{name}"] is sys.modules[f"innomatrix_host.{name}"], name


def test_the_module_and_the_tests_share_one_runtime() -> None:
    assert trial_module.TrialError is innomatrix_host.runtime.TrialError
    assert innomatrix_host.runtime.__name__ == "innomatrix_host.runtime"
    assert trial_module.watched_devices.__module__ == "innomatrix_host.collected"
