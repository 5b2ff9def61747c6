"""What ships to the benchmark host as Ansible module_utils stands alone: the standard library only."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

MODULE_UTILS = sorted((Path(__file__).resolve().parents[2] / "module_utils").glob("*.py"))


def test_every_module_util_is_checked() -> None:
    assert [path.name for path in MODULE_UTILS] == [
        "innomatrix_mounts.py", "innomatrix_runtime.py", "innomatrix_smart.py", "innomatrix_steady.py", "innomatrix_sysbench.py",
        "innomatrix_tpcc.py",
        "innomatrix_tpcc_parse.py",
    ]


@pytest.mark.parametrize("path", MODULE_UTILS, ids=[path.name for path in MODULE_UTILS])
def test_imports_only_the_standard_library(path: Path) -> None:
    imported = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            imported.update(alias.name.partition(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path.name}: relative import"
            imported.add(str(node.module).partition(".")[0])
    assert imported
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}, path.name
