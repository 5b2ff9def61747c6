"""The matrix knobs as a user types them, checked and normalised.

Knobs arrive from extra-vars, inventory group_vars or the CLI, as comma strings or YAML lists,
sizes as "128M" or bytes. Everything here is pure so that a bad knob is refused before anything
is installed or formatted, with one line that names the value and what is accepted.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from innomatrix_host import numbers

FILESYSTEMS = ("ext4", "xfs")
WORKLOADS = ("oltp", "tpcc", "fileio")
FLAVORS = ("mariadb", "mysql", "percona")
RAND_TYPES = ("uniform", "gaussian", "special", "pareto")
# The order of a filesystem pass's cells (plan._ordered).
ORDERS = ("interleaved", "grouped", "random")



class KnobError(ValueError):
    """A knob the matrix cannot run with; the message is one line for the user."""


@dataclass(frozen=True)
class Knob:
    """A knob's type as Ansible's argument specs name it (preflight's typed spec), and its default.
    A `required` knob (what to run, at what scale, for how long) is never assumed by the plan: left
    out, it is refused; the others take their default."""

    type: str
    default: Any
    elements: str | None = None
    choices: tuple[str, ...] | None = None
    required: bool = False


# The matrix knobs the plan reads: the one list. inventory/group_vars/all.yml documents each with
# this default, README's knob table lists it and preflight's argument spec types it
# (tests/unit/test_role_specs.py and test_readme.py hold all three to this table), and the
# playbook hands the preflight role exactly these (the innomatrix_knobs filter).
KNOBS: dict[str, Knob] = {
    "filesystems": Knob("list", ["ext4", "xfs"], elements="str", required=True),
    "mkfs_options": Knob("dict", {"ext4": "", "xfs": ""}),
    "mount_options": Knob("dict", {"ext4": "", "xfs": ""}),
    "variants": Knob("list", ["A", "B", "C", "D"], elements="str", required=True),
    "bp_sizes": Knob("list", ["4G"], elements="str", required=True),
    "workloads": Knob("list", ["oltp"], elements="str", required=True),
    "threads": Knob("list", [32], elements="int", required=True),
    "repeats": Knob("int", 1),
    "cell_order": Knob("str", "interleaved", choices=ORDERS),
    "cell_order_seed": Knob("int", 0),
    "warmup": Knob("raw", 3600, required=True),
    "warmup_max": Knob("int", 3600, required=True),
    "duration": Knob("raw", 3600, required=True),
    "duration_min": Knob("int", 600),
    "duration_max": Knob("int", 3600, required=True),
    "precision": Knob("float", 0.01),
    "reconnect_grace": Knob("int", 3600),
    "report_interval": Knob("int", 1),
    "oltp_tables": Knob("int", 32, required=True),
    "oltp_table_size": Knob("int", 10_000_000, required=True),
    "oltp_rand_type": Knob("str", "pareto", choices=RAND_TYPES),
    "oltp_percentile": Knob("int", 95),
    "tpcc_warehouses": Knob("int", 2500, required=True),
    "tpcc_load_jobs": Knob("int", 8, required=True),
    "fileio_tests": Knob("list", ["async-rndwr", "async-rndrd", "sync-rndrd", "table-rndrd", "table-rndwr", "seqrd",
                                  "seqwr"], elements="str", required=True),
    "fileio_total_size": Knob("str", "64G", required=True),
    "fileio_block_size": Knob("str", "16K", required=True),
    "fileio_threads_max": Knob("int", 256, required=True),
    "fileio_block_sizes": Knob("list", ["512B", "1K", "2K", "4K", "8K", "16K", "32K", "64K", "128K", "256K", "512K",
                                        "1M", "2M", "4M"], elements="str", required=True),
    "fileio_table_threads": Knob("list", [1, 10, 40], elements="int", required=True),
    "fileio_step_duration": Knob("int", 60, required=True),
    "mysql_flavor": Knob("str", "mariadb", choices=FLAVORS),
    "mycnf_overrides": Knob("dict", {}),
    "force": Knob("bool", False),
}


def value(knobs: Mapping[str, Any], name: str) -> Any:
    """A knob as given; left out, its default, or None for a required knob (refused by its check)."""
    if name in knobs:
        return knobs[name]
    return None if KNOBS[name].required else copy.deepcopy(KNOBS[name].default)


def picked(variables: Mapping[str, Any]) -> dict[str, Any]:
    """The knobs out of all of a host's variables (inventory, group_vars, -e), by KNOBS's names."""
    missing = [name for name in KNOBS if name not in variables]
    if missing:
        raise KnobError(f"knob(s) {', '.join(missing)} not set: inventory/group_vars/all.yml sets every knob; "
                        "is it in the inventory this play uses?")
    return {name: variables[name] for name in KNOBS}


def as_list(name: str, value: Any) -> list[str]:
    """A comma string, a scalar or a YAML list → a list of non-empty strings."""
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        items = [str(v).strip() for v in value]
    else:
        items = [part.strip() for part in str(value).split(",")]
    items = [item for item in items if item]
    if len(set(items)) != len(items):
        raise KnobError(f"{name}={value!r} names a value twice; list each once")
    return items


def parse_size(name: str, text: Any) -> int:
    """'128M', '1.5G', '4GiB' or a byte count → bytes (innomatrix_host.numbers reads it: the host
    compares the sizes a server ran with by the same rule)."""
    try:
        return numbers.parse_size(name, text)
    except numbers.SizeError as exc:
        raise KnobError(str(exc)) from None


def size_label(size: int) -> str:
    """Bytes → the shortest exact label (128M, 25G), used in result paths."""
    for unit in ("T", "G", "M", "K"):
        if size % numbers.SIZE_FACTORS[unit] == 0:
            return f"{size // numbers.SIZE_FACTORS[unit]}{unit}"
    return str(size)


def positive_int(name: str, value: Any) -> int:
    """Seconds, counts: whole numbers above zero."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise KnobError(f"{name}={value!r} is not a number; give a whole number above zero") from None
    if not math.isfinite(number) or number <= 0 or number != int(number):
        raise KnobError(f"{name}={value!r} must be a whole number above zero")
    return int(number)


def non_negative_int(name: str, value: Any) -> int:
    """A warmup may be zero; nothing may be negative."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise KnobError(f"{name}={value!r} is not a number; give a whole number of zero or more") from None
    if not math.isfinite(number) or number < 0 or number != int(number):
        raise KnobError(f"{name}={value!r} must be a whole number of zero or more")
    return int(number)


def fraction(name: str, value: Any) -> float:
    """A share such as a precision: above zero and below one (0.01 is 1 %)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise KnobError(f"{name}={value!r} is not a number; give a fraction such as 0.01 for 1 %") from None
    if not math.isfinite(number) or not 0 < number < 1:
        raise KnobError(f"{name}={value!r} must lie between 0 and 1 (0.01 is 1 %)")
    return number


def distinct(name: str, texts: list[str], values: list[Any]) -> list[Any]:
    """Two spellings of one value (1G and 1024M, 4 and 04) would make two cells with one path."""
    seen: dict[Any, str] = {}
    for text, value in zip(texts, values):
        if value in seen:
            raise KnobError(f"{name}: {seen[value]} and {text} are the same value; list each once")
        seen[value] = text
    return values


def choose(name: str, values: list[str], accepted: tuple[str, ...] | list[str]) -> list[str]:
    """Every value must be one of the accepted ones; at least one must be given."""
    if not values:
        raise KnobError(f"{name} is empty; accepted: {', '.join(accepted)}")
    unknown = [v for v in values if v not in accepted]
    if unknown:
        raise KnobError(f"{name}: unknown {', '.join(unknown)}; accepted: {', '.join(accepted)}")
    return values


def truthy(value: Any) -> bool:
    """force=true on the command line arrives as a string."""
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in ("1", "true", "yes", "on")
