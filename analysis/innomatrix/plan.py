"""The matrix knobs, checked into the spec, and the spec expanded into ordered cells, each with a
key, the finished ones marked.

Knobs arrive from extra-vars, inventory group_vars or the CLI, as comma strings or YAML lists,
sizes as "128M" or bytes. Everything here is pure so that a bad knob is refused before anything
is installed or formatted, with one line that names the value and what is accepted.

The order groups cells so that mkfs happens once per filesystem and a dataset is loaded once per
(filesystem, dataset). A cell's key hashes every input that can change its result, so a rerun
with the same inputs finds the finished trial and skips it, and a changed input (an edited
variant, another server version, another device) is never mistaken for a finished result.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from innomatrix import fileio
from innomatrix import layout
from innomatrix_host import layouts as storage_layouts
from innomatrix_host import mycnf

FILESYSTEMS = ("ext4", "xfs")
WORKLOADS = ("oltp", "tpcc", "fileio")
RAND_TYPES = ("uniform", "gaussian", "special", "pareto")
# The order of a filesystem pass's cells (plan._ordered).
ORDERS = ("interleaved", "grouped", "random")
# plain: the host's one `device`; the others are built over the first N of its `devices`.
LAYOUTS = (layout.PLAIN, *storage_layouts.LAYOUTS)


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
    "layouts": Knob("list", [layout.PLAIN], elements="str"),
    "members": Knob("list", [], elements="int"),
    "filesystems": Knob("list", ["ext4", "xfs"], elements="str", required=True),
    "mkfs_options": Knob("dict", {"ext4": "", "xfs": ""}),
    "mount_options": Knob("dict", {"ext4": "", "xfs": ""}),
    "variants": Knob("list", ["A", "B", "C", "D"], elements="str", required=True),
    "bp_sizes": Knob("list", ["4G"], elements="str", required=True),
    "workloads": Knob("list", ["oltp"], elements="str", required=True),
    "threads": Knob("list", [32], elements="int", required=True),
    "rates": Knob("raw", []),
    "sla_percentile": Knob("float", 99.0),
    "sla_ms": Knob("float", 10.0),
    "search_steps": Knob("int", 6),
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
    "mysql_flavor": Knob("str", "mariadb", choices=mycnf.FLAVORS),
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
    """'128M', '1.5G', '4GiB' or a byte count → bytes (innomatrix_host.mycnf reads it: the host
    compares the sizes a server ran with by the same rule)."""
    try:
        return mycnf.parse_size(name, text)
    except mycnf.SizeError as exc:
        raise KnobError(str(exc)) from None


def size_label(size: int) -> str:
    """Bytes → the shortest exact label (128M, 25G), used in result paths."""
    for unit in ("T", "G", "M", "K"):
        if size % mycnf.SIZE_FACTORS[unit] == 0:
            return f"{size // mycnf.SIZE_FACTORS[unit]}{unit}"
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


def _fileio_sizes(name: str, value: Any) -> list[int]:
    texts = as_list(name, value)
    if not texts:
        raise KnobError(f"{name} is empty; give at least one size, e.g. {name}=4K,16K")
    return distinct(name, texts, [parse_size(name, text) for text in texts])


def _fileio_counts(name: str, value: Any) -> list[int]:
    texts = as_list(name, value)
    if not texts:
        raise KnobError(f"{name} is empty; give at least one thread count, e.g. {name}=1,10,40")
    return distinct(name, texts, [positive_int(name, text) for text in texts])


def _fileio_spec(knobs: dict[str, Any]) -> dict[str, Any]:
    """The fileio knobs in canonical form; raises KnobError naming the bad one."""
    tests = choose("fileio_tests", as_list("fileio_tests", value(knobs, "fileio_tests")), list(fileio.SUBTESTS))
    block_size = parse_size("fileio_block_size", value(knobs, "fileio_block_size"))
    block_sizes = sorted(_fileio_sizes("fileio_block_sizes", value(knobs, "fileio_block_sizes")))
    for size in (block_size, *block_sizes):
        if size % 512:
            raise KnobError(f"fileio block size {size} is not a multiple of 512 bytes; O_DIRECT needs whole sectors")
    total = parse_size("fileio_total_size", value(knobs, "fileio_total_size"))
    largest = max(block_size, *block_sizes, fileio.SEQUENTIAL_BLOCK_BYTES)
    if total < fileio.FILE_NUM * largest:
        raise KnobError(
            f"fileio_total_size={value(knobs, 'fileio_total_size')} is too small for {fileio.FILE_NUM} files of at least "
            f"one {size_label(largest)} block each; give at least {size_label(fileio.FILE_NUM * largest)}"
        )
    return {
        "tests": tests,
        "total_size": total,
        "file_num": fileio.FILE_NUM,
        "block_size": block_size,
        "block_sizes": block_sizes,
        "threads_max": positive_int("fileio_threads_max", value(knobs, "fileio_threads_max")),
        "table_threads": sorted(_fileio_counts("fileio_table_threads", value(knobs, "fileio_table_threads"))),
        "step_duration": positive_int("fileio_step_duration", value(knobs, "fileio_step_duration")),
    }


SCHEMA = 1
# sysbench OLTP: a row of id, k, c(120), pad(60) plus the index on k, in InnoDB pages
# (≈ 78 GiB for the posts' 32 × 10M rows).
OLTP_BYTES_PER_ROW = 250
# tpcc-mysql: one warehouse is about 100 MB of InnoDB data and indexes once keys are added.
TPCC_BYTES_PER_WAREHOUSE = 100 << 20
SYSTEM_TABLESPACE_BYTES = 128 << 20
BASE_REDO_BYTES = 2 << 30  # base.cnf: 2 × 1G
# A remote trial runs detached (Ansible async) and is polled: about this many polls a trial, never
# more often than every MIN_POLL seconds (each poll is an SSH login and a Python start on the host
# under test) nor less often than every MAX_POLL (the cell's result waits for the next poll).
POLLS_PER_TRIAL = 20
MIN_POLL, MAX_POLL = 2, 60
# Restoring the dataset, starting and stopping the server take time beyond warmup + duration.
MIN_RECONNECT_GRACE = 60


class PlanError(ValueError):
    """The matrix cannot be planned as asked; the message is one line for the user."""


@dataclass(frozen=True)
class Context:
    """What the plan needs to know about the host, found by probing it."""

    host: str
    memory_bytes: int
    device_id: str
    server_flavor: str
    server_version: str
    driver_version: str
    variant_digests: dict[str, str]
    tpcc_version: str = ""
    # Who the host's `devices` are (serial, WWN, loop backing file), in the order given: the
    # members a layout is built over, first N first.
    member_ids: tuple[str, ...] = ()
    # Known once the server is installed: the plan then renders each cell's my.cnf for it.
    cnf_dir: str = ""
    server_known_options: frozenset[str] | None = None


def context(facts: dict[str, Any], cnf_dir: str) -> Context:
    """A Context from probed facts (as Ansible gathers them) and the variants in `cnf_dir`."""
    return Context(
        host=str(facts["host"]),
        memory_bytes=int(facts["memory_bytes"]),
        device_id=str(facts["device_id"]),
        server_flavor=str(facts["server_flavor"]),
        server_version=str(facts["server_version"]),
        driver_version=str(facts["driver_version"]),
        variant_digests={v: mycnf.variant_digest(cnf_dir, v) for v in mycnf.variant_ids(cnf_dir)},
        tpcc_version=str(facts.get("tpcc_version") or ""),
        member_ids=tuple(map(str, facts.get("member_ids") or ())),
        cnf_dir=cnf_dir,
        server_known_options=(frozenset(map(str, facts["server_known_options"]))
                              if facts.get("server_known_options") else None),
    )


def digest(payload: Any, length: int = 16) -> str:
    """A stable short hash of JSON-able data."""
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def _per_fs(name: str, value: Any, filesystems: list[str]) -> dict[str, str]:
    """mkfs/mount options are given per filesystem; a missing one means none."""
    value = value or {}
    if not isinstance(value, dict):
        raise PlanError(f"{name} must map a filesystem to its options, e.g. {{xfs: '-m reflink=1'}}")
    unknown = sorted(set(value) - set(FILESYSTEMS))
    if unknown:
        raise PlanError(f"{name}: unknown filesystem {', '.join(unknown)}; accepted: {', '.join(FILESYSTEMS)}")
    return {fs: str(value.get(fs) or "").strip() for fs in filesystems}


def _storages(knobs: dict[str, Any], ctx: Context) -> list[dict[str, Any]]:
    """What each pass's filesystem is made on: the plain device, or a layout over the first N of
    the host's devices for each N in `members` (all of them when `members` is empty)."""
    names = choose("layouts", as_list("layouts", value(knobs, "layouts")), LAYOUTS)
    member_list = as_list("members", value(knobs, "members"))
    counts = distinct("members", member_list, [positive_int("members", m) for m in member_list])
    storages = []
    for name in names:
        if name == layout.PLAIN:
            storages.append({"layout": name, "members": 1})
            continue
        if not ctx.member_ids:
            raise PlanError(f"layouts: {name} is built over the host's devices, and {ctx.host} lists none; "
                            "give the host devices: [/dev/disk/by-id/…, …]")
        params = storage_layouts.LAYOUTS[name]
        # A cache layout is over its two members (backing, cache) whatever `members` sweeps.
        fixed = params.get("fixed_members")
        for count in [fixed] if fixed else counts or [len(ctx.member_ids)]:
            if count > len(ctx.member_ids):
                roles = f" (the {' and the '.join(storage_layouts.CACHE_ROLES)} device, in that order)" if fixed else ""
                raise PlanError(f"members: {name} over {count} members needs {count} devices{roles}; "
                                f"{ctx.host} lists {len(ctx.member_ids)}")
            if count < params["min_members"]:
                raise PlanError(f"members: {name} needs at least {params['min_members']} members; "
                                f"members asks {count}")
            storages.append({"layout": name, "members": count, "params": params,
                             "member_ids": list(ctx.member_ids[:count]),
                             "alignment": storage_layouts.alignment(params, count)})
    return storages


def normalise(knobs: dict[str, Any], ctx: Context) -> dict[str, Any]:
    """Check every knob and return them in canonical form; raises KnobError/PlanError."""
    storages = _storages(knobs, ctx)
    filesystems = choose("filesystems", as_list("filesystems", value(knobs, "filesystems")), FILESYSTEMS)
    workloads = choose("workloads", as_list("workloads", value(knobs, "workloads")), WORKLOADS)
    variants = choose("variants", as_list("variants", value(knobs, "variants")), sorted(ctx.variant_digests))
    bp_list = as_list("bp_sizes", value(knobs, "bp_sizes"))
    if not bp_list:
        raise PlanError("bp_sizes is empty; give at least one buffer-pool size, e.g. bp_sizes=128M,256M")
    bp_sizes = distinct("bp_sizes", bp_list, [parse_size("bp_sizes", bp) for bp in bp_list])
    # A buffer pool must fit in memory only where a server runs: fileio cells have none.
    server_workloads = [w for w in workloads if w != "fileio"]
    for text, size in zip(bp_list, bp_sizes):
        if server_workloads and size >= ctx.memory_bytes:
            raise PlanError(
                f"bp_sizes: {text} is not smaller than the memory of {ctx.host} "
                f"({ctx.memory_bytes / (1 << 30):.1f}G); choose a smaller buffer pool"
            )
    thread_list = as_list("threads", value(knobs, "threads"))
    threads = distinct("threads", thread_list, [positive_int("threads", t) for t in thread_list])
    if not threads:
        raise PlanError("threads is empty; give at least one thread count, e.g. threads=4,16")
    rates = _rates(knobs, workloads)
    search = _search(knobs, workloads)
    flavor = str(value(knobs, "mysql_flavor"))
    choose("mysql_flavor", [flavor], mycnf.FLAVORS)
    auto = _auto(knobs, workloads)
    if (rates or search) and auto:
        raise PlanError("rates: fixed-rate trials need a fixed warmup and duration (their latency histogram starts "
                        "at the end of the warmup); give warmup and duration in seconds")
    warmup = non_negative_int("warmup_max" if auto and auto["warmup"] else "warmup",
                                value(knobs, "warmup_max") if auto and auto["warmup"] else value(knobs, "warmup"))
    duration = positive_int("duration_max" if auto and auto["duration"] else "duration",
                              value(knobs, "duration_max") if auto and auto["duration"] else value(knobs, "duration"))
    if auto and auto["duration"] and auto["duration_min"] > duration:
        raise PlanError(f"duration_min={auto['duration_min']} is longer than duration_max={duration}; "
                        "give a duration_min at most duration_max")
    interval = positive_int("report_interval", value(knobs, "report_interval"))
    if interval > duration:
        raise PlanError(f"report_interval={interval} is longer than duration={duration}; nothing would be measured")
    grace = non_negative_int("reconnect_grace", value(knobs, "reconnect_grace"))
    if grace < MIN_RECONNECT_GRACE:
        raise PlanError(f"reconnect_grace={grace} leaves a remote trial no time to restore its dataset and start its "
                        f"server; give at least {MIN_RECONNECT_GRACE} seconds")
    overrides = value(knobs, "mycnf_overrides") or {}
    if not isinstance(overrides, dict):
        raise PlanError("mycnf_overrides must map option names to values")
    if any(mycnf.normalize_name(str(name)) == "innodb_buffer_pool_size" for name in overrides):
        raise PlanError("mycnf_overrides sets innodb_buffer_pool_size; use bp_sizes, which sweeps it")
    # sysbench may not print the last interval of a run: a short step needs two to measure one.
    if "fileio" in workloads and positive_int("fileio_step_duration", value(knobs, "fileio_step_duration")) < 2 * interval:
        raise PlanError(f"fileio_step_duration={value(knobs, 'fileio_step_duration')} holds fewer than two report "
                        f"intervals of {interval} s (sysbench may not print the last one); make it at least {2 * interval}")
    if "tpcc" in workloads and (warmup % interval or duration % interval):
        raise PlanError(f"tpcc: warmup={warmup} and duration={duration} must be whole multiples of "
                        f"report_interval={interval}; tpcc_start measures whole intervals only")
    rand_type = str(value(knobs, "oltp_rand_type"))
    choose("oltp_rand_type", [rand_type], RAND_TYPES)
    return {
        "storages": storages,
        "filesystems": filesystems,
        "mkfs_options": _per_fs("mkfs_options", value(knobs, "mkfs_options"), filesystems),
        "mount_options": _per_fs("mount_options", value(knobs, "mount_options"), filesystems),
        "workloads": workloads,
        "variants": variants,
        "bp_sizes": bp_sizes,
        "threads": threads,
        "rates": rates,
        "search": search,
        "repeats": positive_int("repeats", value(knobs, "repeats")),
        "cell_order": choose("cell_order", [str(value(knobs, "cell_order"))], ORDERS)[0],
        "cell_order_seed": non_negative_int("cell_order_seed", value(knobs, "cell_order_seed")),
        "warmup": warmup,
        "duration": duration,
        "auto": auto,
        "report_interval": interval,
        "reconnect_grace": grace,
        "oltp": {
            "tables": positive_int("oltp_tables", value(knobs, "oltp_tables")),
            "table_size": positive_int("oltp_table_size", value(knobs, "oltp_table_size")),
            "rand_type": rand_type,
            "percentile": positive_int("oltp_percentile", value(knobs, "oltp_percentile")),
        },
        "tpcc": _tpcc(knobs) if "tpcc" in workloads else None,
        "fileio": _fileio_spec(knobs) if "fileio" in workloads else None,
        "mycnf_overrides": {str(name): str(setting) for name, setting in overrides.items()},
        "force": truthy(value(knobs, "force")),
    }


AUTO = "auto"
# A cell's `rate` when its driver runs closed-loop (as fast as its threads go): sysbench's --rate=0.
CLOSED_LOOP = 0
# The most a cell may offer (its directory name has room for 7 digits): 10× the fastest servers.
MAX_RATE = 9_999_999


# The capacity search (rates=auto, innomatrix.search): its most steps a configuration, whatever search_steps says.
MOST_SEARCH_STEPS = 20


def _searched(knobs: dict[str, Any]) -> bool:
    """rates=auto: the rates are found by the capacity search, not listed."""
    texts = as_list("rates", value(knobs, "rates"))
    if any(text.strip().lower() == AUTO for text in texts):
        if len(texts) > 1:
            raise PlanError(f"rates: auto searches for the rates itself; give it alone, not with {', '.join(texts)}")
        return True
    return False


def _rates(knobs: dict[str, Any], workloads: list[str]) -> list[int]:
    """rates: the fixed arrival rates (transactions a second, sysbench --rate) each OLTP
    configuration also runs at, beside its closed-loop cell; none by default (or with rates=auto)."""
    if _searched(knobs):
        return []
    texts = as_list("rates", value(knobs, "rates"))
    rates = distinct("rates", texts, [positive_int("rates", text) for text in texts])
    if any(rate > MAX_RATE for rate in rates):
        raise PlanError(f"rates: {max(rates)} transactions a second is beyond any server; give at most {MAX_RATE}")
    if rates and "oltp" not in workloads:
        raise PlanError("rates: fixed-rate trials run sysbench OLTP; add oltp to workloads or leave rates empty")
    return rates
def _search(knobs: dict[str, Any], workloads: list[str]) -> dict[str, Any] | None:
    """rates=auto: the SLA each OLTP configuration's capacity search aims at (sla_percentile,
    sla_ms) and its most steps (search_steps), each step a fixed-rate trial of every repeat; None
    when the rates are listed."""
    if not _searched(knobs):
        return None
    if "oltp" not in workloads:
        raise PlanError("rates=auto searches sysbench OLTP's capacity; add oltp to workloads or leave rates empty")
    percentile = _number("sla_percentile", value(knobs, "sla_percentile"))
    if not 0 < percentile < 100:
        raise PlanError(f"sla_percentile={percentile:g}: give a percentile above 0 and below 100 (e.g. 99); "
                        "no trial can surely meet a maximum")
    limit = _number("sla_ms", value(knobs, "sla_ms"))
    if not 0 < limit <= 1e9:
        raise PlanError(f"sla_ms={limit:g}: give the SLA's limit as a positive number of milliseconds (e.g. 10)")
    steps = positive_int("search_steps", value(knobs, "search_steps"))
    if steps > MOST_SEARCH_STEPS:
        raise PlanError(f"search_steps={steps}: a search halves its bracket each step; give at most {MOST_SEARCH_STEPS}")
    return {"sla_percentile": percentile, "sla_ms": limit, "steps": steps}


def _number(name: str, given: Any) -> float:
    try:
        number = float(str(given).strip())
    except ValueError:
        raise KnobError(f"{name} must be a number, not {given!r}") from None
    if not math.isfinite(number):
        raise KnobError(f"{name} must be a finite number, not {given!r}")
    return number


# Adaptive warmup and duration watch the OLTP and tpcc drivers' intervals; fileio's timed sub-tests keep fixed times.
AUTO_WORKLOADS = ("oltp", "tpcc")


def _auto(knobs: dict[str, Any], workloads: list[str]) -> dict[str, Any] | None:
    """warmup=auto and duration=auto: which of them the trials decide, and the duration's rules
    (warmup_max and duration_max take the place of warmup and duration); None when both are fixed."""
    warmup_auto = str(value(knobs, "warmup")).strip().lower() == AUTO
    duration_auto = str(value(knobs, "duration")).strip().lower() == AUTO
    if not (warmup_auto or duration_auto):
        return None
    others = [w for w in workloads if w not in AUTO_WORKLOADS]
    if others:
        raise PlanError(f"warmup=auto and duration=auto watch sysbench OLTP and tpcc-mysql, not {', '.join(others)}; "
                        "run it with a fixed warmup and duration")
    auto: dict[str, Any] = {"warmup": warmup_auto, "duration": duration_auto}
    if duration_auto:
        precision = fraction("precision", value(knobs, "precision"))
        auto.update(duration_min=non_negative_int("duration_min", value(knobs, "duration_min")), precision=precision)
    return auto


def detachment(cell: dict[str, Any], grace: int) -> dict[str, int]:
    """How a trial on a host reached over SSH runs detached from its connection (Ansible async):
    `seconds` it may take in all, after which it is stopped and counted lost, and `poll`, the
    seconds between the controller's looks at it. A look that cannot reach the host is retried at
    the next poll, so a dropped connection costs the trial nothing while it is back in time."""
    planned = int(cell["warmup"]) + int(cell["duration"])
    return {"seconds": planned + int(grace), "poll": min(MAX_POLL, max(MIN_POLL, planned // POLLS_PER_TRIAL))}


def _tpcc(knobs: dict[str, Any]) -> dict[str, int]:
    warehouses = positive_int("tpcc_warehouses", value(knobs, "tpcc_warehouses"))
    jobs = positive_int("tpcc_load_jobs", value(knobs, "tpcc_load_jobs"))
    return {"warehouses": warehouses, "load_jobs": min(jobs, warehouses)}


def _redo_bytes(spec: dict[str, Any]) -> int:
    """The redo allowance: an override of the redo file size (MariaDB, MySQL before 8.0.30) or of
    the one redo capacity (MySQL 8.0.30 and later, where the file size cannot be overridden), else
    base.cnf's."""
    overrides = {mycnf.normalize_name(name): value for name, value in spec["mycnf_overrides"].items()}
    if "innodb_redo_log_capacity" in overrides:
        return parse_size("innodb_redo_log_capacity", overrides["innodb_redo_log_capacity"])
    if "innodb_log_file_size" in overrides:
        return parse_size("innodb_log_file_size", overrides["innodb_log_file_size"])
    return BASE_REDO_BYTES


def space_needed(spec: dict[str, Any]) -> int:
    """Bytes the device must hold (estimated: the device is checked before anything is loaded):
    for OLTP the pristine dataset and the trial's copy, each with its redo log, plus a tenth for
    headroom; for fileio its test files, which share the filesystem with the datasets."""
    needed = 0
    server_copy = SYSTEM_TABLESPACE_BYTES + _redo_bytes(spec)
    if "oltp" in spec["workloads"]:
        rows = spec["oltp"]["tables"] * spec["oltp"]["table_size"]
        needed += int(2 * (rows * OLTP_BYTES_PER_ROW + server_copy) * 1.1)
    if spec["tpcc"]:
        needed += int(2 * (spec["tpcc"]["warehouses"] * TPCC_BYTES_PER_WAREHOUSE + server_copy) * 1.1)
    if spec["fileio"]:
        needed += fileio.space_needed(spec["fileio"])
    return needed


def mkfs_options(spec: dict[str, Any], storage: dict[str, Any], fs: str) -> str:
    """The options mkfs gets: a layout's stripe alignment first, then the user's own.

    mke2fs keeps only the last -E it is given, so the user's extended options join the
    alignment's one -E (after it: a stride the user sets is theirs); mkfs.xfs takes -d twice."""
    aligned = storage["alignment"]["mkfs_options"][fs] if "alignment" in storage else ""
    own = spec["mkfs_options"][fs]
    if fs == "ext4" and aligned.startswith("-E ") and "-E" in own:
        words, extended, rest = own.split(), [aligned[len("-E "):]], []
        while words:
            word = words.pop(0)
            if word == "-E" and words:
                extended.append(words.pop(0))
            elif word.startswith("-E") and word != "-E":
                extended.append(word[len("-E"):])
            else:
                rest.append(word)
        return " ".join(["-E", ",".join(extended), *rest])
    return " ".join(option for option in (aligned, own) if option)


def _device_identity(storage: dict[str, Any], ctx: Context) -> Any:
    """Who the filesystem is made on: the device, or the layout with its parameters and members."""
    if storage["layout"] == layout.PLAIN:
        return ctx.device_id
    return {"layout": storage["layout"], "params": storage["params"], "members": storage["member_ids"]}


def _dataset(spec: dict[str, Any], ctx: Context, storage: dict[str, Any], fs: str, workload: str) -> dict[str, Any]:
    if workload == "fileio":
        # sysbench's test files: no server is involved, so its version is not part of the identity.
        scale = {"total_size": spec["fileio"]["total_size"], "file_num": spec["fileio"]["file_num"]}
        server = None
    elif workload == "tpcc":
        # The loader's version is part of what was loaded.
        scale = {"warehouses": spec["tpcc"]["warehouses"]}
        server = [ctx.server_flavor, ctx.server_version, ctx.tpcc_version]
    else:
        scale = {"tables": spec["oltp"]["tables"], "table_size": spec["oltp"]["table_size"]}
        server = [ctx.server_flavor, ctx.server_version]
    identity = {
        "host": ctx.host,
        "device": _device_identity(storage, ctx),
        "filesystem": fs,
        "mkfs_options": mkfs_options(spec, storage, fs),
        "workload": workload,
        "scale": scale,
        "server": server,
    }
    key = digest(identity)
    return {"workload": workload, "scale": scale, "key": key,
            "path": layout.dataset_path(ctx.host, fs, workload, key, storage["layout"], storage["members"])}


def _driver_identity(spec: dict[str, Any], ctx: Context, workload: str) -> list[Any]:
    if workload == "tpcc":
        return ["tpcc-mysql", ctx.tpcc_version]
    return [ctx.driver_version, spec["oltp"]["rand_type"], spec["oltp"]["percentile"]]


def _cell(spec, ctx, storage_fields, fs, dataset, variant, bp, threads, rate, repeat) -> dict[str, Any]:
    label = size_label(bp)
    inputs = {
        "schema": SCHEMA,
        "dataset": dataset["key"],
        "mount_options": spec["mount_options"][fs],
        "variant": [variant, ctx.variant_digests[variant]],
        "mycnf_overrides": spec["mycnf_overrides"],
        "bp_bytes": bp,
        "threads": threads,
        "warmup": spec["warmup"],
        "duration": spec["duration"],
        "report_interval": spec["report_interval"],
        "driver": _driver_identity(spec, ctx, dataset["workload"]),
        "repeat": repeat,
    }
    if spec["auto"]:  # a fixed-time cell keeps the key it always had
        inputs["auto"] = spec["auto"]
    if rate != CLOSED_LOOP:  # and so does a closed-loop one
        inputs["rate"] = rate
    # A searched configuration's closed-loop cell keeps its inputs: each step's cell is made from them (at_rate).
    searched = {"search_inputs": inputs} if spec["search"] and rate == CLOSED_LOOP and dataset["workload"] == "oltp" else {}
    return _placed({
        "key": digest(inputs),
        "host": ctx.host,
        **storage_fields,
        "filesystem": fs,
        "workload": dataset["workload"],
        "dataset": dataset,
        "variant": variant,
        "bp_size": label,
        "bp_bytes": bp,
        "threads": threads,
        "rate": rate,
        "repeat": repeat,
        "warmup": spec["warmup"],
        "duration": spec["duration"],
        "auto": spec["auto"],
        "report_interval": spec["report_interval"],
        dataset["workload"]: spec[dataset["workload"]],  # the driver's settings: oltp or tpcc
        **searched,
    })


def at_rate(cell: dict[str, Any], rate: int, repeat: int) -> dict[str, Any]:
    """A searched configuration's cell at a fixed rate: its closed-loop cell (`search_inputs`) with
    the rate and the repeat, so a step's key is the one the same rate listed in `rates` would have."""
    if not 0 < rate <= MAX_RATE:
        raise PlanError(f"the capacity search asked for {rate} transactions a second; at most {MAX_RATE}")
    inputs = {**cell["search_inputs"], "rate": rate, "repeat": repeat}
    fields = {name: field for name, field in cell.items()
              if name not in ("id", "path", "key", "search_inputs", *SESSION_FIELDS)}
    return _placed({**fields, "key": digest(inputs), "rate": rate, "repeat": repeat})


def _fileio_cell(spec, ctx, storage_fields, fs, dataset, test, block_bytes, threads, repeat) -> dict[str, Any]:
    """A raw-device cell: a sub-test and a block size, and no server (no variant, no buffer pool)."""
    label = size_label(block_bytes)
    timing = fileio.timing(test, spec["fileio"], spec["warmup"], spec["duration"], spec["report_interval"])
    options = fileio.driver_options(test, block_bytes, spec["fileio"])
    inputs = {
        "schema": SCHEMA,
        "dataset": dataset["key"],
        "mount_options": spec["mount_options"][fs],
        "fileio": options,
        "threads": threads,
        **timing,
        "driver": ctx.driver_version,
        "repeat": repeat,
    }
    return _placed({
        "key": digest(inputs),
        "host": ctx.host,
        **storage_fields,
        "filesystem": fs,
        "workload": "fileio",
        "dataset": dataset,
        "subtest": test,
        "variant": None,
        "bp_size": None,
        "bp_bytes": None,
        "block_size": label,
        "threads": threads,
        "rate": CLOSED_LOOP,
        "repeat": repeat,
        **timing,
        "fileio": options,
    })


def _placed(cell: dict[str, Any]) -> dict[str, Any]:
    """The cell with its place in the results tree: path (under the run) and id (under the host)."""
    path = layout.cell_path(cell)
    return {"id": path.split("/", 1)[1], "path": path, **cell}


def _workload_cells(spec, ctx, storage, fs, dataset) -> list[dict[str, Any]]:
    repeats = range(1, spec["repeats"] + 1)
    # The layout reaches the key through the dataset's (its identity names the layout and members).
    storage_fields = {"layout": storage["layout"], "members": storage["members"]}
    if dataset["workload"] == "fileio":
        return [
            _fileio_cell(spec, ctx, storage_fields, fs, dataset, test, block, threads, repeat)
            for test in spec["fileio"]["tests"]
            for block, threads in fileio.points(test, spec["fileio"], spec["threads"])
            for repeat in repeats
        ]
    return [
        _cell(spec, ctx, storage_fields, fs, dataset, variant, bp, threads, rate, repeat)
        for variant in spec["variants"]
        for bp in spec["bp_sizes"]
        for threads in spec["threads"]
        # A closed-loop cell and its fixed-rate cells side by side (OLTP only).
        for rate in [CLOSED_LOOP, *(spec["rates"] if dataset["workload"] == "oltp" else [])]
        for repeat in repeats
    ]


def expand(knobs: dict[str, Any], ctx: Context, finished: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The ordered cells of the matrix, split into the ones to run and the ones already done.

    `finished` maps a cell path (as in results) to the `key` and `status` of its trial.json.
    """
    spec = normalise(knobs, ctx)
    cells, conflicts = [], []
    for storage in spec["storages"]:
        for fs in spec["filesystems"]:
            in_pass = [cell for workload in spec["workloads"]
                       for cell in _workload_cells(spec, ctx, storage, fs, _dataset(spec, ctx, storage, fs, workload))]
            for cell in _ordered(in_pass, spec, fs):
                cell["state"] = _state(cell, finished.get(cell["path"]), spec["force"], conflicts)
                cells.append(cell)
    if conflicts:
        raise PlanError(
            f"{len(conflicts)} finished cell(s) were measured with other inputs (first: {conflicts[0]}); "
            "use a new run_name, or force=true to measure them again (the old results are kept beside them)"
        )
    todo = [c for c in cells if c["state"] == "todo"]
    for index, cell in enumerate(todo, start=1):
        cell["index"], cell["total"] = index, len(todo)
    if ctx.server_known_options is not None:
        _render_mycnf(spec, ctx, cells)  # finished cells too: a rerun still names each dataset's load
    return {
        "spec": spec,
        "cells": cells,
        "passes": _passes(spec, todo, []),
        "counts": {"cells": len(cells), "todo": len(todo), "done": len(cells) - len(todo)},
        "device_bytes_needed": space_needed(spec),
    }


def _render_mycnf(spec: dict[str, Any], ctx: Context, cells: list[dict[str, Any]]) -> None:
    """Give each cell the my.cnf it runs with and each dataset the one it is loaded with, for the
    server as installed: the one place options are assembled (variant, overrides, buffer pool).
    A variant that does not render for this server stops the plan, before anything is formatted.
    The load runs with variant A and the sweep's largest buffer pool."""
    rendered: dict[tuple[str, str], dict[str, Any]] = {}

    def render(variant: str, bp_size: str) -> dict[str, Any]:
        if (variant, bp_size) not in rendered:
            overrides = {**spec["mycnf_overrides"], "innodb_buffer_pool_size": bp_size}
            text, notes = mycnf.render_variant(ctx.cnf_dir, variant, ctx.server_flavor, ctx.server_version,
                                               set(ctx.server_known_options or ()), overrides)
            rendered[variant, bp_size] = {"text": text, "notes": notes}
        return rendered[variant, bp_size]

    for cell in cells:
        if cell["workload"] == "fileio":  # the device alone: no server, no my.cnf
            cell["mycnf"], cell["dataset"]["mycnf"] = {"text": "", "notes": []}, ""
            continue
        cell["mycnf"] = render(cell["variant"], cell["bp_size"])
        cell["dataset"]["mycnf"] = render("A", size_label(max(spec["bp_sizes"])))["text"]


def _ordered(cells: list[dict[str, Any]], spec: dict[str, Any], fs: str) -> list[dict[str, Any]]:
    """The order a filesystem pass runs its cells in (every dataset is loaded before the first).

    grouped: each configuration's repeats back to back. interleaved (the default): round r1 of
    every configuration, then r2, ..., so that drift during the pass (device garbage collection,
    heat, a neighbour) falls on every configuration alike instead of on whichever ran last.
    random: shuffled with `cell_order_seed` (recorded in the plan), the same seed giving the same
    order. Filesystems stay one pass each: interleaving them would mean a mkfs and a reload
    per round.
    """
    if spec["cell_order"] == "interleaved":
        return sorted(cells, key=lambda cell: cell["repeat"])  # stable: configurations keep their order
    if spec["cell_order"] == "random":
        shuffled = list(cells)
        random.Random(f"{spec['cell_order_seed']}:{fs}").shuffle(shuffled)
        return shuffled
    return cells


def _state(cell: dict[str, Any], previous: dict[str, Any] | None, force: bool, conflicts: list[str]) -> str:
    if previous is None or previous.get("status") != "ok":
        return "todo"
    if force:
        return "todo"
    if previous.get("key") != cell["key"]:
        conflicts.append(f"{cell['path']} has key {previous.get('key')}, the plan gives {cell['key']}")
        return "conflict"
    return "done"


def searches(cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The configurations a capacity search runs for (rates=auto): each by its closed-loop cells,
    one a repeat, and named by their place in the tree less the repeat."""
    found: dict[str, list[dict[str, Any]]] = {}
    for cell in cells:
        if "search_inputs" in cell:
            found.setdefault(cell["path"].rsplit("/", 1)[0], []).append(cell)
    return [{"configuration": name, "cells": sorted(group, key=lambda cell: cell["repeat"])}
            for name, group in found.items()]


def with_searches(plan: dict[str, Any], open_configurations: set[str]) -> dict[str, Any]:
    """The plan with a pass wherever a configuration's capacity search has steps left to run,
    though its closed-loop cells be done (a rerun, a search given more steps)."""
    todo = [cell for cell in plan["cells"] if cell["state"] == "todo"]
    searching = [found for found in searches(plan["cells"]) if found["configuration"] in open_configurations]
    return {**plan, "passes": _passes(plan["spec"], todo, searching), "searching": len(searching)}


def _passes(spec: dict[str, Any], todo: list[dict[str, Any]], searching: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One pass per storage and filesystem that has work (cells to run, or a capacity search with
    steps left): the layout built (unless plain), mkfs once, each dataset loaded once; the layout is
    removed when its pass ends."""
    passes = []
    for storage in spec["storages"]:
        for fs in spec["filesystems"]:
            where = (storage["layout"], storage["members"], fs)
            cells = [c for c in todo if (c["layout"], c["members"], c["filesystem"]) == where]
            searched = [found for found in searching
                        if (found["cells"][0]["layout"], found["cells"][0]["members"], found["cells"][0]["filesystem"]) == where]
            if not cells and not searched:
                continue
            datasets = list({c["dataset"]["key"]: c["dataset"]
                             for c in [*cells, *(found["cells"][0] for found in searched)]}.values())
            passes.append(
                {
                    # What the play calls the pass: the filesystem, on a layout after its name.
                    "name": " ".join([*layout.storage_dir(storage["layout"], storage["members"]), fs]),
                    "storage": storage,
                    "filesystem": fs,
                    "mkfs_options": mkfs_options(spec, storage, fs),
                    "mount_options": spec["mount_options"][fs],
                    "datasets": datasets,
                    "cells": cells,
                    "searches": searched,
                }
            )
    return passes


# What this session makes of a cell (to run or done, its place in the queue) is not part of the
# cell: plan.json holds the cells alone, so the same inputs write the same file.
SESSION_FIELDS = ("state", "index", "total")


def recorded(plan: dict[str, Any]) -> dict[str, Any]:
    """The plan as <run>/<host>/plan.json keeps it: the spec and every cell with everything it
    needs (key, my.cnf text, paths, times); the trial module runs its cell from there."""
    return {
        "schema": SCHEMA,
        "spec": plan["spec"],
        "cells": [{name: value for name, value in cell.items() if name not in SESSION_FIELDS}
                  for cell in plan["cells"]],
    }


def describe(plan: dict[str, Any]) -> list[str]:
    """Human lines for --check and `innomatrix plan`: one per cell, then the counts."""
    lines = [f"{c['path']}  key={c['key']}  {c['state']}" for c in plan["cells"]]
    for storage in plan["spec"]["storages"]:
        if storage["layout"] != layout.PLAIN:
            aligned = "; ".join(f"mkfs.{fs} {opts}" for fs, opts in storage["alignment"]["mkfs_options"].items() if opts)
            lines.append(f"would build {storage['layout']} over {storage['members']} member(s) "
                         f"({', '.join(storage_layouts.member_roles(storage['params'], storage['member_ids']))})"
                         f"{': ' + aligned if aligned else ''}; "
                         "a layout the suite left on them is removed first, never reassembled; "
                         "removed when its passes end")
    counts = plan["counts"]
    lines.append(f"{counts['cells']} cells: {counts['todo']} to run, {counts['done']} already finished")
    if search := plan["spec"]["search"]:
        configurations = len(searches(plan["cells"]))
        lines.append(f"capacity search (rates=auto) at p{search['sla_percentile']:g} ≤ {search['sla_ms']:g} ms: "
                     f"{plan.get('searching', configurations)} of {configurations} configuration(s) with steps to "
                     f"run, at most {search['steps']} a configuration (a fixed-rate trial a repeat each)")
    return lines
