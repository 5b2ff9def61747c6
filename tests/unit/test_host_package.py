"""What runs on the benchmark host (host/: the modules and innomatrix_host) stands alone: the
standard library only — and the MySQL driver, in the one place that talks to the server — one copy
of each rule, no symlink. The controller imports its rules from
innomatrix_host; innomatrix_host never imports the controller's package."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = sorted((ROOT / "host" / "innomatrix_host").glob("*.py"))
# mysqlclient, which the collectors role installs (python3-mysqldb): runtime.py
# alone talks to the server, and imports it only when it does (a raw-device host has no server).
DRIVER = {"runtime.py": {"MySQLdb"}}
MODULES = sorted((ROOT / "host" / "modules").glob("*.py"))


def imports(path: Path) -> set[tuple[int, str]]:
    """(level, top name) of every import in a file: level 0 absolute, 1 relative."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update((0, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add((node.level, node.module))
        elif isinstance(node, ast.ImportFrom):  # from . import sysbench
            found.update((node.level, alias.name) for alias in node.names)
    return found


def test_the_package_holds_every_host_rule() -> None:
    assert [path.name for path in PACKAGE] == [
        "__init__.py", "cache_status.py", "collected.py", "flags.py", "flush_points.py", "layouts.py", "measured.py",
        "mounts.py", "mycnf.py", "numbers.py", "runtime.py", "server_log.py", "settings.py", "smart.py", "stalls.py", "steady.py",
        "sysbench.py", "tpcc.py", "tpcc_tool.py",
    ]


@pytest.mark.parametrize("path", PACKAGE, ids=[path.name for path in PACKAGE])
def test_the_package_imports_only_the_standard_library_and_itself(path: Path) -> None:
    for level, name in imports(path):
        if level:
            assert level == 1 and (ROOT / "host" / "innomatrix_host" / f"{name.partition('.')[0]}.py").exists(), name
        else:
            allowed = set(sys.stdlib_module_names) | {"__future__"} | DRIVER.get(path.name, set())
            assert name.partition(".")[0] in allowed, (path.name, name)


def test_the_driver_is_imported_only_where_the_server_is_talked_to() -> None:
    """Imported at module level, the driver would be needed by every module that packs or records."""
    runtime = ast.parse((ROOT / "host" / "innomatrix_host" / "runtime.py").read_text(encoding="utf-8"))
    top = {alias.name.partition(".")[0] for node in runtime.body if isinstance(node, ast.Import) for alias in node.names}
    top |= {node.module.partition(".")[0] for node in runtime.body if isinstance(node, ast.ImportFrom) and node.module}
    assert "MySQLdb" not in top and "os" in top


@pytest.mark.parametrize("path", MODULES, ids=[path.name for path in MODULES])
def test_a_module_imports_the_standard_library_ansible_basic_and_the_package(path: Path) -> None:
    for level, name in imports(path):
        assert level == 0, (path.name, name)
        allowed = (name.partition(".")[0] in set(sys.stdlib_module_names) | {"__future__"}
                   or name in ("ansible.module_utils.basic", "ansible.module_utils.innomatrix_host")
                   or name.startswith("ansible.module_utils.innomatrix_host."))
        assert allowed, (path.name, name)


def test_the_controller_never_keeps_a_copy_of_a_host_rule() -> None:
    """analysis/ imports the host's parsers and rules; it holds no file of the same name."""
    controller = {path.name for path in (ROOT / "analysis" / "innomatrix").rglob("*.py")}
    assert not controller & {path.name for path in PACKAGE if path.name != "__init__.py"} - {"runtime.py"}


def test_no_symlink_in_the_project() -> None:
    tracked = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-s"], capture_output=True, text=True, check=True)
    links = [line.split("\t", 1)[1] for line in tracked.stdout.splitlines() if line.startswith("120000")]
    assert links == []
