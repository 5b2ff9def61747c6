"""What a role reads from another role is declared, and what a role returns is named for it.

The rule (README, "Roles"): a role's tasks read its own options (`<role>_*`, in its
meta/argument_specs.yml), its private facts (`__<role>_*`) and Ansible's variables. What a role
returns is one fact, `<role>_facts`. Another role reads it only if it declares it as an option of
its own argument specs (Ansible then refuses to start the role without it) or includes the role
that sets it. Anything else — another role's option, another role's private fact — fails here.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
ROLES_DIR = ROOT / "roles"
ROLES = sorted(p.name for p in ROLES_DIR.iterdir() if p.is_dir())
# Keys whose whole value is a Jinja expression, without braces.
BARE_EXPRESSIONS = {"when", "failed_when", "changed_when", "until", "that"}
JINJA = re.compile(r"{{(.*?)}}|{%(.*?)%}", re.S)
QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
NAME = re.compile(r"(?<![\w.])[A-Za-z_]\w*")


def walk(node: Any, key: str = "") -> Iterator[tuple[str, str]]:
    """(key, text) for every string in a task file: keys too, since set_fact names are keys."""
    if isinstance(node, dict):
        for name, value in node.items():
            yield "", str(name)
            yield from walk(value, str(name))
    elif isinstance(node, list):
        for value in node:
            yield from walk(value, key)
    elif isinstance(node, str):
        yield key, node


def expressions(text: str, key: str) -> list[str]:
    if key in BARE_EXPRESSIONS:
        return [text]
    return [a or b for a, b in JINJA.findall(text)]


def names_read(expression: str) -> set[str]:
    return set(NAME.findall(QUOTED.sub("''", expression)))


def task_files(role: str) -> list[Path]:
    return sorted((ROLES_DIR / role / "tasks").glob("*.yml"))


def reads(role: str) -> dict[str, set[str]]:
    """Every name a role's tasks read inside Jinja, with the files that read it."""
    found: dict[str, set[str]] = {}
    for path in task_files(role):
        for key, text in walk(yaml.safe_load(path.read_text())):
            for expression in expressions(text, key):
                for name in names_read(expression):
                    found.setdefault(name, set()).add(path.name)
    return found


def owner(name: str) -> str | None:
    """The role a variable name belongs to by its prefix (the longest role name that fits)."""
    bare = name.lstrip("_")
    fitting = [role for role in ROLES if bare.startswith(role + "_")]
    return max(fitting, key=len) if fitting else None


def declared(role: str) -> set[str]:
    specs = yaml.safe_load((ROLES_DIR / role / "meta" / "argument_specs.yml").read_text())["argument_specs"]
    return {name for entry in specs.values() for name in (entry.get("options") or {})}


def included(role: str) -> set[str]:
    """Roles whose tasks this role includes (it then sees what they return)."""
    names = set()
    for path in task_files(role):
        for key, text in walk(yaml.safe_load(path.read_text())):
            if key == "name" and text in ROLES and text != role:
                names.add(text)
    return names


def set_facts(role: str) -> set[str]:
    names = set()
    for path in task_files(role):
        for task in yaml.safe_load(path.read_text()) or []:
            for block in [task, *task.get("block", []), *task.get("rescue", []), *task.get("always", [])]:
                names |= set((block.get("ansible.builtin.set_fact") or {}))
    return names


def undeclared_reads(role: str) -> list[str]:
    problems = []
    for name, files in sorted(reads(role).items()):
        other = owner(name)
        if other is None or other == role:
            continue
        where = f"{role} reads {name} ({', '.join(sorted(files))})"
        if name != f"{other}_facts":
            problems.append(f"{where}: not what {other} returns ({other}_facts)")
        elif name not in declared(role) and other not in included(role):
            problems.append(f"{where}: declare it in roles/{role}/meta/argument_specs.yml")
    return problems


@pytest.mark.parametrize("role", ROLES)
def test_a_role_reads_only_what_it_declares_or_includes(role: str) -> None:
    assert undeclared_reads(role) == []


@pytest.mark.parametrize("role", ROLES)
def test_a_role_returns_one_fact_named_for_it(role: str) -> None:
    public = {name for name in set_facts(role) if not name.startswith("__")}
    assert public <= {f"{role}_facts"}, f"{role} sets {sorted(public)}: name what it keeps for itself __{role}_*"


@pytest.mark.parametrize("role", ROLES)
def test_what_a_role_declares_from_others_is_what_they_return(role: str) -> None:
    for name in declared(role):
        other = owner(name)
        if other != role:
            assert other is not None and name == f"{other}_facts", f"{role} declares {name}"
            assert f"{other}_facts" in set_facts(other), f"{role} declares {name}, which {other} never sets"


def test_the_rule_finds_an_undeclared_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The checker itself: a matrix task reading the device role's option, or preflight's facts
    without declaring them, is caught (a test that cannot fail proves nothing)."""
    fake = tmp_path / "roles"
    for role in ("matrix", "preflight", "device"):
        (fake / role / "tasks").mkdir(parents=True)
        (fake / role / "meta").mkdir()
        (fake / role / "meta" / "argument_specs.yml").write_text(
            "argument_specs: {main: {short_description: x, options: {}}}\n")
    (fake / "matrix" / "tasks" / "main.yml").write_text(
        "- name: Read\n  ansible.builtin.debug:\n    msg: \"{{ preflight_facts.plan }} {{ device_path }}\"\n"
        "  when: __device_private | length > 0\n")
    monkeypatch.setattr(sys.modules[__name__], "ROLES_DIR", fake)
    monkeypatch.setattr(sys.modules[__name__], "ROLES", ["device", "matrix", "preflight"])
    assert undeclared_reads("matrix") == [
        "matrix reads __device_private (main.yml): not what device returns (device_facts)",
        "matrix reads device_path (main.yml): not what device returns (device_facts)",
        "matrix reads preflight_facts (main.yml): declare it in roles/matrix/meta/argument_specs.yml",
    ]


def test_the_matrix_declares_what_it_reads() -> None:
    assert {"preflight_facts", "mysql_server_facts", "sysbench_facts", "tpcc_facts"} <= declared("matrix")
