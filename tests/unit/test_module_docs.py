"""Keep every custom module's DOCUMENTATION options and the ARGUMENT_SPEC Ansible checks in step.

The modules import ansible.module_utils.innomatrix_host, a name that exists only inside Ansible's module
wrapper, so both literals are read from the source rather than by importing the module.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path
from typing import Any

import pytest
import yaml

LIBRARY = Path(__file__).resolve().parents[2] / "host" / "modules"
MODULES = sorted(LIBRARY.glob("innomatrix_*.py"))

# What an option says when it does not say it (Ansible's own defaults).
IMPLIED = {"type": "str", "required": False, "default": None, "choices": None, "elements": None, "no_log": False}
# Keys that describe an option to readers only.
DOCUMENTATION_ONLY = {"description"}


@functools.cache
def tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def module_constant(path: Path, name: str) -> Any:
    """The literal value of a module-level `name = ...`."""
    for node in tree(path).body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == [name]:
            return ast.literal_eval(node.value)
    raise AssertionError(f"{path.name} has no module-level {name}")


def documented(path: Path) -> dict[str, dict[str, Any]]:
    return yaml.safe_load(module_constant(path, "DOCUMENTATION"))["options"] or {}


def specified(path: Path) -> dict[str, dict[str, Any]]:
    return module_constant(path, "ARGUMENT_SPEC")


def compared(option: dict[str, Any]) -> dict[str, Any]:
    """The keys this test compares, with what an option leaves out made explicit."""
    return {**IMPLIED, **{key: value for key, value in option.items() if key not in DOCUMENTATION_ONLY}}


def differences(path: Path) -> list[str]:
    docs, spec = documented(path), specified(path)
    problems = [f"{name}: only in DOCUMENTATION" for name in sorted(set(docs) - set(spec))]
    problems += [f"{name}: only in ARGUMENT_SPEC" for name in sorted(set(spec) - set(docs))]
    for name in sorted(set(docs) & set(spec)):
        doc, code = compared(docs[name]), compared(spec[name])
        problems += [f"{name}.{key}: DOCUMENTATION says {doc.get(key)!r}, ARGUMENT_SPEC {code.get(key)!r}"
                     for key in sorted(set(doc) | set(code)) if doc.get(key) != code.get(key)]
    return problems


def test_every_module_is_checked() -> None:
    assert [path.name for path in MODULES] == [
        "innomatrix_dataset.py", "innomatrix_device_facts.py", "innomatrix_layout.py", "innomatrix_pack.py",
        "innomatrix_record.py", "innomatrix_smart.py", "innomatrix_tpcc_build.py", "innomatrix_trial.py",
        "innomatrix_unmount.py",
    ]


@pytest.mark.parametrize("path", MODULES, ids=[path.name for path in MODULES])
def test_documentation_and_argument_spec_agree(path: Path) -> None:
    assert specified(path), f"{path.name}: empty ARGUMENT_SPEC"
    assert differences(path) == []


@pytest.mark.parametrize("path", MODULES, ids=[path.name for path in MODULES])
def test_every_option_is_described(path: Path) -> None:
    assert [name for name, option in documented(path).items() if not option.get("description")] == []


@pytest.mark.parametrize("path", MODULES, ids=[path.name for path in MODULES])
def test_the_module_checks_its_arguments_against_argument_spec(path: Path) -> None:
    """A spec written inline again in main() would leave ARGUMENT_SPEC, and this test, checking nothing."""
    calls = [node for node in ast.walk(tree(path))
             if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "AnsibleModule"]
    assert len(calls) == 1, path.name
    passed = {keyword.arg: keyword.value for keyword in calls[0].keywords}
    assert isinstance(passed.get("argument_spec"), ast.Name) and passed["argument_spec"].id == "ARGUMENT_SPEC", path.name


def test_differences_names_each_disagreement(tmp_path) -> None:
    module = tmp_path / "innomatrix_example.py"
    module.write_text('DOCUMENTATION = r"""\noptions:\n'
                      '  path: {description: A file, type: path, required: true}\n'
                      '  grace: {description: Seconds, type: float, default: 30}\n'
                      '  mode: {description: How, choices: [a, b]}\n'
                      '  gone: {description: Removed from the code}\n"""\n'
                      'ARGUMENT_SPEC = {"path": {"type": "str", "required": True}, "grace": {"type": "float"},\n'
                      '                 "mode": {"choices": ["a", "b"], "no_log": True}, "new": {"type": "int"}}\n')
    assert differences(module) == [
        "gone: only in DOCUMENTATION",
        "new: only in ARGUMENT_SPEC",
        "grace.default: DOCUMENTATION says 30, ARGUMENT_SPEC None",
        "mode.no_log: DOCUMENTATION says False, ARGUMENT_SPEC True",
        "path.type: DOCUMENTATION says 'path', ARGUMENT_SPEC 'str'",
    ]
