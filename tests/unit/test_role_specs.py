"""Keep every role's defaults, argument specs, the documented knobs and the playbook in step."""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from innomatrix.plan import KNOBS

ROOT = Path(__file__).resolve().parents[2]
ROLES_DIR = ROOT / "roles"
GROUP_VARS = ROOT / "inventory" / "group_vars" / "all.yml"
DEMO = ROOT / "inventory" / "demo.yml"
PLAYBOOK = ROOT / "playbooks" / "matrix.yml"

ROLES = sorted(p.name for p in ROLES_DIR.iterdir() if p.is_dir())
# Knobs that reach the preflight role as its own options rather than inside preflight_knobs.
PASSED_SEPARATELY = {"device", "wipe_device", "devices", "run_name", "results_dir", "io_scheduler", "read_ahead_kb", "report",
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


def every_option(role: str) -> dict[str, Any]:
    """The options of every entry point of a role (main's where they share a name)."""
    found: dict[str, Any] = {}
    for entry in sorted(specs(role), key=lambda name: name != "main"):
        for name, option in options(role, entry).items():
            found.setdefault(name, option)
    return found


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
    assert ROLES == ["collectors", "dataset", "device", "layout", "matrix", "mysql_server", "preflight", "results_home",
                     "sysbench", "tpcc", "trial"]


def test_fits() -> None:
    assert fits("x", "str") and fits("/x", "path") and fits(3, "int") and fits(0, "float") and fits(0.5, "float")
    assert fits(True, "bool") and fits([], "list") and fits({}, "dict")
    assert not fits(True, "int") and not fits(False, "float") and not fits("1", "int") and not fits(1, "str")
    assert not fits("true", "bool") and not fits({}, "list") and not fits([], "dict") and not fits(1.5, "int")


# A role the playbook enters only through its steps, each an entry point of its own.
STEPS_ONLY = {"matrix": ["outcome", "passes", "prepare"]}


@pytest.mark.parametrize("role", ROLES)
def test_every_role_has_a_main_entry_point_or_only_steps(role: str) -> None:
    entries = STEPS_ONLY.get(role, ["main"])
    assert all(specs(role)[entry].get("short_description") for entry in entries)
    assert (ROLES_DIR / role / "tasks" / "main.yml").is_file() == (role not in STEPS_ONLY)


def entered() -> set[tuple[str, str]]:
    """(role, entry point) for every role the project's playbooks, roles and Molecule scenarios
    enter: a role in a play, or an include_role with or without tasks_from."""
    found = set()
    files = [*ROOT.glob("playbooks/*.yml"), *ROOT.glob("roles/*/tasks/*.yml"), *ROOT.glob("tests/molecule/**/*.yml")]

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            include = node.get("ansible.builtin.include_role") or node.get("ansible.builtin.import_role")
            if isinstance(include, dict):
                found.add((include["name"], include.get("tasks_from", "main")))
            if isinstance(node.get("roles"), list):
                found.update((entry["role"] if isinstance(entry, dict) else entry, "main") for entry in node["roles"])
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    for path in files:
        visit(load(path))
    return found


def test_every_entry_point_entered_is_specified() -> None:
    """Ansible checks a role's inputs for the entry point it is entered by (tasks_from): one
    without an argument spec would start unchecked."""
    assert ("matrix", "passes") in entered() and ("preflight", "plan") in entered()
    # tasks_from: passes.yml would run the same file but match no entry point: Ansible then checks nothing.
    named_by_file = sorted(f"{role}:{entry}" for role, entry in entered() if "." in entry)
    assert named_by_file == []
    missing = sorted(f"{role}:{entry}" for role, entry in entered() if role in ROLES and entry not in specs(role))
    assert missing == []
    unused = sorted(f"{role}:{entry}" for role in ROLES for entry in specs(role) if (role, entry) not in entered())
    assert unused == []


@pytest.mark.parametrize("role", ROLES)
def test_options_and_defaults_name_the_same_variables(role: str) -> None:
    # What a role takes from another role (`<other>_facts`, tests/unit/test_role_inputs.py) has no
    # default: a role started without it is refused by Ansible's argument check. A required input
    # has none either: Ansible checks the task's variables, role defaults included, so a default,
    # even an empty one, would always pass that check.
    options = {name: option for name, option in every_option(role).items() if not name.endswith("_facts")}
    names = set(options)
    found = defaults(role)
    if found is None:
        assert {name for name in names if not options[name].get("required")} == set(), \
            f"{role} has options {sorted(names)} but no defaults/main.yml"
        return
    undefaulted = {name for name in names - set(found) if not options[name].get("required")}
    required_with_default = {name for name in set(found) & names if options[name].get("required")}
    assert set(found) <= names and undefaulted == set() and required_with_default == set(), (
        f"{role}: only in the spec: {sorted(undefaulted)}; only in defaults: {sorted(set(found) - names)}; "
        f"required yet defaulted: {sorted(required_with_default)}"
    )


@pytest.mark.parametrize("role", ROLES)
def test_defaults_match_the_spec(role: str) -> None:
    found = defaults(role) or {}
    problems = []
    for name, option in every_option(role).items():
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
    first = every_option(role)
    for entry in specs(role):
        for name, option in options(role, entry).items():
            if name.endswith("_facts") or option.get("required"):
                continue  # a returned fact or a required input: no default, by design
            assert name in found, f"{role}.{entry}.{name} has no default in defaults/main.yml"
            assert option.get("type") == first[name].get("type"), f"{role}.{entry}.{name}"
            if "default" in option:
                assert option["default"] == found[name], f"{role}.{entry}.{name}"


def test_the_entry_points() -> None:
    assert {role: sorted(specs(role)) for role in ROLES} == {
        "collectors": ["main"],
        "dataset": ["main"],
        "device": ["main", "unmount"],
        "layout": ["main", "remove"],
        "matrix": ["outcome", "passes", "prepare"],
        "mysql_server": ["facts", "main"],
        "preflight": ["main", "plan"],
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
        "device", "wipe_device", "devices", "layouts", "members", "filesystems", "mkfs_options", "mount_options", "variants", "bp_sizes", "workloads", "threads", "rates",
        "sla_percentile", "sla_ms", "search_steps", "repeats", "cell_order", "cell_order_seed", "warmup", "warmup_max", "duration",
        "duration_min", "duration_max", "precision", "reconnect_grace", "report_interval", "oltp_tables", "oltp_table_size", "oltp_rand_type",
        "oltp_percentile", "tpcc_warehouses", "tpcc_load_jobs", "tpcc_mysql_src", "tpcc_mysql_ref", "fileio_tests", "fileio_total_size", "fileio_block_size", "fileio_threads_max",
        "fileio_block_sizes", "fileio_table_threads", "fileio_step_duration", "mysql_flavor", "mysql_server_source", "mycnf_overrides", "run_name", "results_dir", "force", "io_scheduler",
        "read_ahead_kb", "report",
    ]


def test_preflight_knobs_options_are_the_documented_knobs() -> None:
    assert PASSED_SEPARATELY <= set(knobs())
    assert set(knob_spec()) == set(knobs()) - PASSED_SEPARATELY


def test_the_plans_knob_list_is_the_one_group_vars_documents_and_preflight_types() -> None:
    """innomatrix.plan.KNOBS is the one list: group_vars gives each its default, preflight's
    argument spec its type, elements and choices, in the same order."""
    assert list(KNOBS) == list(knob_spec()) == [name for name in knobs() if name not in PASSED_SEPARATELY]
    problems = []
    for name, knob in KNOBS.items():
        option = knob_spec()[name]
        if knobs()[name] != knob.default:
            problems.append(f"{name}: group_vars says {knobs()[name]!r}, KNOBS {knob.default!r}")
        for key, ours in (("type", knob.type), ("elements", knob.elements),
                          ("choices", list(knob.choices) if knob.choices else None)):
            if option.get(key) != ours:
                problems.append(f"{name}.{key}: preflight's spec says {option.get(key)!r}, KNOBS {ours!r}")
    assert problems == []


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
    """The plan's knobs reach preflight by KNOBS's names (the innomatrix_knobs filter); every other
    documented knob is named in the playbook or read by its role under its own name."""
    used = jinja_names(load(PLAYBOOK))
    assert "innomatrix_knobs" in used
    assert sorted(set(knobs()) - used - set(ROLE_KNOBS) - set(KNOBS)) == []
    for name, role in ROLE_KNOBS.items():
        assert name in options(role), f"{name} is no input of role {role}"
        assert knobs()[name] == options(role)[name]["default"], name


def test_the_playbook_passes_each_knob_under_its_own_name() -> None:
    # A variable of the first play: the preflight role checks the knobs, and the plan made later in
    # the same play (the matrix role's prepare step) reads the same ones.
    assert load(PLAYBOOK)[0]["vars"] == {"preflight_knobs": "{{ hostvars[inventory_hostname] | innomatrix_knobs }}"}
    preflight = play_roles()["preflight"]
    assert {name: preflight[name] for name in preflight} == {
        "preflight_device": "{{ device }}",
        "preflight_wipe_device": "{{ wipe_device }}",
        "preflight_devices": "{{ devices | innomatrix_devices }}",
        "preflight_run_dir": "{{ results_dir }}/{{ run_name }}",
        "preflight_io_scheduler": "{{ io_scheduler }}",
        "preflight_read_ahead_kb": "{{ read_ahead_kb }}",
    }


def test_the_playbook_passes_only_options_the_roles_declare() -> None:
    problems = []
    for role, role_vars in play_roles().items():
        problems += [f"{role}: {name}" for name in role_vars if name not in every_option(role)]
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


def test_the_molecule_scenarios_hand_preflight_every_knob_it_takes() -> None:
    """The role scenarios pass their own preflight_knobs (tests/molecule/shared/vars/knobs.yml): a
    knob the spec requires and they leave out fails every scenario at its first task."""
    taken = options("preflight")["preflight_knobs"]["options"]
    given = load(ROOT / "tests" / "molecule" / "shared" / "vars" / "knobs.yml")["molecule_knobs"]
    assert sorted(name for name, spec in taken.items() if spec.get("required") and name not in given) == []
    assert sorted(name for name in given if name not in taken) == []
