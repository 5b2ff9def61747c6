"""README cannot drift from the code: its knobs table is the knobs the suite reads."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from innomatrix.plan import KNOBS as PLAN_KNOBS

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
KNOBS = yaml.safe_load((ROOT / "inventory/group_vars/all.yml").read_text())


def _table() -> dict[str, str]:
    rows = re.findall(r"^\| `(\w+)` \| `([^`]*)` \|", README, flags=re.M)
    return dict(rows)


def test_the_first_commands_are_make_demo_and_make_test():
    first_block = README.split("```")[1]
    commands = [line.split("#")[0].strip() for line in first_block.strip().splitlines()]
    assert commands == ["make demo", "make test"]


def test_knobs_table_lists_every_knob_with_its_default():
    table = _table()
    assert sorted(table) == sorted(KNOBS)
    for name, shown in table.items():
        assert yaml.safe_load(shown) == KNOBS[name], name


def test_knobs_table_shows_the_plans_defaults():
    table = _table()
    assert {name: yaml.safe_load(table[name]) for name in PLAN_KNOBS} == {
        name: knob.default for name, knob in PLAN_KNOBS.items()}
