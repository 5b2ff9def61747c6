"""Keep every role's defaults, argument specs, the documented knobs and the playbook in step."""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
ROLES_DIR = ROOT / "roles"
GROUP_VARS = ROOT / "inventory" / "group_vars" / "all.yml"
DEMO = ROOT / "inventory" / "demo.yml"
PLAYBOOK = ROOT / "playbooks" / "matrix.yml"

ROLES = sorted(p.name for p in ROLES_DIR.iterdir() if p.is_dir())
# Knobs that reach the preflight role as its own options rather than inside preflight_knobs.
PASSED_SEPARATELY = {"device", "wipe_device", "run_name", "results_dir", "io_scheduler", "read_ahead_kb", "report",
                     "tpcc_mysql_src", "tpcc_mysql_ref", "mysql_server_source"}

TYPES: dict[str, tuple[type, ...]] = {
    "str": (str,),
    "path": (str,),
    "int": (int,),
    "float": (int, float),
    "raw": (object,),
    "bool": (bool,),
    "list": (list,),
    "dict": (dict,),
}


@functools.cache
def load(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def specs(role: str) -> dict[str, Any]:
    return load(ROLES_DIR / role / "meta" / "argument_specs.yml")["argument_specs"]


def options(role: str, entry: str = "main") -> dict[str, Any]:
    return specs(role)[entry].get("options") or {}


def defaults(role: str) -> dict[str, Any] | None:
    path = ROLES_DIR / role / "defaults" / "main.yml"
    if not path.is_file():
        return None
    return load(path) or {}


def fits(value: Any, type_name: str) -> bool:
    assert type_name in TYPES, f"unknown argument spec type {type_name!r}"
    if isinstance(value, bool) and type_name != "bool":
        return False
    return isinstance(value, TYPES[type_name])


def check_value(where: str, value: Any, option: dict[str, Any]) -> list[str]:
    problems = []
    type_name = option.get("type", "str")
    if not fits(value, type_name):
        problems.append(f"{where}={value!r} is {type(value).__name__}, the spec says {type_name}")
    elif type_name == "list" and "elements" in option:
        problems += [f"{where}[{i}]={item!r} is not {option['elements']}"
                     for i, item in enumerate(value) if not fits(item, option["elements"])]
    if "choices" in option and value not in option["choices"]:
        problems.append(f"{where}={value!r} is not one of {option['choices']}")
    return problems


# ---------------------------------------------------------------- roles


def test_the_roles() -> None:
    assert ROLES == ["collectors", "dataset", "device", "matrix", "mysql_server", "preflight", "results_home", "sysbench", "tpcc",
                     "trial"]


def test_fits() -> None:
    assert fits("x", "str") and fits("/x", "path") and fits(3, "int") and fits(0, "float") and fits(0.5, "float")
    assert fits(True, "bool") and fits([], "list") and fits({}, "dict")
    assert not fits(True, "int") and not fits(False, "float") and not fits("1", "int") and not fits(1, "str")
    assert not fits("true", "bool") and not fits({}, "list") and not fits([], "dict") and not fits(1.5, "int")


@pytest.mark.parametrize("role", ROLES)
def test_every_role_has_a_main_entry_point(role: str) -> None:
    entry = specs(role)["main"]
    assert entry.get("short_description")


@pytest.mark.parametrize("role", ROLES)
def test_options_and_defaults_name_the_same_variables(role: str) -> None:
    # What a role takes from another role (`<other>_facts`, tests/unit/test_role_inputs.py) has no
    # default: a role started without it is refused by Ansible's argument check.
    names = {name for name in options(role) if not name.endswith("_facts")}
    found = defaults(role)
    if found is None:
        assert names == set(), f"{role} has options {sorted(names)} but no defaults/main.yml"
        return
    assert set(found) == names, (
        f"{role}: only in the spec: {sorted(names - set(found))}; only in defaults: {sorted(set(found) - names)}"
    )


@pytest.mark.parametrize("role", ROLES)
def test_defaults_match_the_spec(role: str) -> None:
    found = defaults(role) or {}
    problems = []
    for name, option in options(role).items():
        if name not in found:
            continue
        if "default" in option and found[name] != option["default"]:
            problems.append(f"{name}: defaults/main.yml has {found[name]!r}, the spec {option['default']!r}")
        if "default" in option and type(found[name]) is not type(option["default"]):
            problems.append(f"{name}: {type(found[name]).__name__} in defaults, {type(option['default']).__name__} "
                            "in the spec")
        problems += check_value(name, found[name], option)
    assert problems == []


@pytest.mark.parametrize("role", ROLES)
def test_every_option_is_typed_and_described(role: str) -> None:
    for entry, spec in specs(role).items():
        for name, option in (spec.get("options") or {}).items():
            assert option.get("type") in TYPES, f"{role}.{entry}.{name}: type {option.get('type')!r}"
            assert option.get("description"), f"{role}.{entry}.{name} has no description"


@pytest.mark.parametrize("role", ROLES)
def test_other_entry_points_agree_with_the_defaults(role: str) -> None:
    found = defaults(role) or {}
    main = options(role)
    for entry in specs(role):
        if entry == "main":
            continue
        for name, option in options(role, entry).items():
            assert name in found, f"{role}.{entry}.{name} has no default in defaults/main.yml"
            assert option.get("type") == main[name].get("type"), f"{role}.{entry}.{name}"
            if "default" in option:
                assert option["default"] == found[name], f"{role}.{entry}.{name}"


def test_the_entry_points() -> None:
    assert {role: sorted(specs(role)) for role in ROLES} == {
        "collectors": ["main"],
        "dataset": ["main"],
        "device": ["main", "unmount"],
        "matrix": ["main"],
        "mysql_server": ["facts", "main"],
        "preflight": ["main"],
        "results_home": ["main"],
        "sysbench": ["facts", "main"],
        "tpcc": ["facts", "main"],
        "trial": ["main"],
    }


# ---------------------------------------------------------------- the knobs


def knobs() -> dict[str, Any]:
    return load(GROUP_VARS)


def knob_spec() -> dict[str, Any]:
    return options("preflight")["preflight_knobs"]["options"]


def test_the_knobs() -> None:
    assert list(knobs()) == [
        "device", "wipe_device", "filesystems", "mkfs_options", "mount_options", "variants", "bp_sizes", "workloads", "threads",
        "repeats", "cell_order", "cell_order_seed", "warmup", "warmup_max", "duration",
        "duration_min", "duration_max", "precision", "reconnect_grace", "report_interval", "oltp_tables", "oltp_table_size", "oltp_rand_type",
        "oltp_percentile", "tpcc_warehouses", "tpcc_load_jobs", "tpcc_mysql_src", "tpcc_mysql_ref", "fileio_tests", "fileio_total_size", "fileio_block_size", "fileio_threads_max",
        "fileio_block_sizes", "fileio_table_threads", "fileio_step_duration", "mysql_flavor", "mysql_server_source", "mycnf_overrides", "run_name", "results_dir", "force", "io_scheduler",
        "read_ahead_kb", "report",
    ]


def test_preflight_knobs_options_are_the_documented_knobs() -> None:
    assert PASSED_SEPARATELY <= set(knobs())
    assert set(knob_spec()) == set(knobs()) - PASSED_SEPARATELY


def test_documented_knob_values_fit_the_preflight_spec() -> None:
    documented = knobs()
    problems = []
    for name, option in knob_spec().items():
        problems += check_value(name, documented[name], option)
    assert problems == []


@pytest.mark.parametrize("demo_file", [DEMO, DEMO.with_name("demo-auto.yml")], ids=lambda p: p.name)
def test_demo_knobs_are_documented_knobs(demo_file: Path) -> None:
    demo = load(demo_file)
    assert set(demo) - set(knobs()) == set()
    problems = []
    for name, value in demo.items():
        if name in knob_spec():
            problems += check_value(name, value, knob_spec()[name])
    assert problems == []


def play_roles() -> dict[str, dict[str, Any]]:
    """Each role the playbook's plays run (as a role or an include_role), with the vars it gets."""
    found: dict[str, dict[str, Any]] = {}
    for play in load(PLAYBOOK):
        for entry in play.get("roles") or []:
            found.setdefault(entry["role"], {}).update(entry.get("vars") or {})
        for task in play.get("tasks") or []:
            if "ansible.builtin.include_role" in task:
                found.setdefault(task["ansible.builtin.include_role"]["name"], {}).update(task.get("vars") or {})
    return found


def jinja_names(node: Any) -> set[str]:
    """Every identifier used inside {{ }} anywhere in a YAML tree."""
    if isinstance(node, dict):
        return set().union(*(jinja_names(v) for v in node.values())) if node else set()
    if isinstance(node, list):
        return set().union(*(jinja_names(v) for v in node)) if node else set()
    if isinstance(node, str):
        names: set[str] = set()
        for expression in re.findall(r"\{\{(.*?)\}\}", node):
            names |= set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", expression))
        return names
    return set()


def test_jinja_names() -> None:
    assert jinja_names({"a": ["{{ x }}/{{ y | default('z') }}", 1], "b": "w"}) == {"x", "y", "default", "z"}


# Knobs a role reads under its own name (its inputs are prefixed with the role's name anyway).
ROLE_KNOBS = {"tpcc_mysql_src": "tpcc", "tpcc_mysql_ref": "tpcc", "mysql_server_source": "mysql_server"}


def test_every_knob_is_wired_in_the_playbook() -> None:
    used = jinja_names(load(PLAYBOOK))
    assert sorted(set(knobs()) - used - set(ROLE_KNOBS)) == []
    for name, role in ROLE_KNOBS.items():
        assert name in options(role), f"{name} is no input of role {role}"
        assert knobs()[name] == options(role)[name]["default"], name


def test_the_playbook_passes_each_knob_under_its_own_name() -> None:
    preflight = play_roles()["preflight"]
    assert preflight["preflight_knobs"] == {name: f"{{{{ {name} }}}}" for name in knob_spec()}
    assert list(preflight["preflight_knobs"]) == list(knob_spec())
    assert {name: preflight[name] for name in preflight if name != "preflight_knobs"} == {
        "preflight_device": "{{ device }}",
        "preflight_wipe_device": "{{ wipe_device }}",
        "preflight_run_dir": "{{ results_dir }}/{{ run_name }}",
        "preflight_io_scheduler": "{{ io_scheduler }}",
        "preflight_read_ahead_kb": "{{ read_ahead_kb }}",
    }


def test_the_playbook_passes_only_options_the_roles_declare() -> None:
    problems = []
    for role, role_vars in play_roles().items():
        problems += [f"{role}: {name}" for name in role_vars if name not in options(role)]
    assert problems == []
    assert play_roles()["mysql_server"] == {"mysql_server_flavor": "{{ mysql_flavor }}"}


# ---------------------------------------------------------------- the knobs' documentation


def variables_and_lines_above() -> list[tuple[str, str]]:
    lines = GROUP_VARS.read_text().splitlines()
    out = []
    for number, line in enumerate(lines):
        match = re.match(r"([A-Za-z_][A-Za-z0-9_]*)\s*:", line)
        if match:
            out.append((match.group(1), lines[number - 1] if number else ""))
    return out


def test_the_documentation_scan_sees_every_knob() -> None:
    assert [name for name, _ in variables_and_lines_above()] == list(knobs())


def test_every_knob_is_in_a_commented_block() -> None:
    """Each knob has a comment directly above it or follows, without a blank line, one that has."""
    lines = GROUP_VARS.read_text().splitlines()
    problems = []
    for number, line in enumerate(lines):
        if not re.match(r"[A-Za-z_]\w*\s*:", line):
            continue
        above = number - 1
        while above >= 0 and re.match(r"[A-Za-z_]\w*\s*:", lines[above]):
            above -= 1
        if above < 0 or not lines[above].startswith("#"):
            problems.append(line)
    assert problems == []


def test_every_knob_has_a_comment_directly_above() -> None:
    missing = [name for name, above in variables_and_lines_above() if not above.startswith("#")]
    assert missing == []
