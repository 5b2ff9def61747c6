"""A module of host/modules loaded as a Python module for the unit tests. Ansible's wrapper names
the host package ansible.module_utils.innomatrix_host; here that name is the package itself, and
each submodule's name is the submodule itself too: with the package alone aliased, a module's
`from ansible.module_utils.innomatrix_host.runtime import …` loads a second copy of runtime.py
(its own TrialError class, say) and rebinds the package's attribute to it, under every other test."""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import sys
from pathlib import Path
from types import ModuleType

import innomatrix_host

ROOT = Path(__file__).resolve().parents[2]
ALIAS = "ansible.module_utils.innomatrix_host"


def _alias_host_package() -> None:
    names = {ALIAS: innomatrix_host}
    for info in pkgutil.iter_modules(innomatrix_host.__path__):
        names[f"{ALIAS}.{info.name}"] = importlib.import_module(f"innomatrix_host.{info.name}")
    for alias, module in names.items():
        # An alias already there must be the module itself, never a copy loaded under that name.
        assert sys.modules.setdefault(alias, module) is module, f"{alias} is a second copy of {module.__name__}"


def load_host_module(name: str) -> ModuleType:
    """host/modules/<name>.py, executed (anew, on each call) as the module `name`: callers keep it."""
    _alias_host_package()
    spec = importlib.util.spec_from_file_location(name, ROOT / "host" / "modules" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
