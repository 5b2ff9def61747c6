"""Unit tests for innomatrix.plan: knobs → ordered cells with keys, passes, and skip logic."""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import re
from typing import Any

import pytest

from innomatrix import layout, plan
from innomatrix.plan import KnobError
from innomatrix.plan import PlanError

G = 1 << 30
M = 1 << 20

CTX = plan.Context(
    host="db1",
    memory_bytes=16 * G,
    device_id="nvme:SERIAL123",
    server_flavor="mariadb",
    server_version="10.11.19-MariaDB",
    driver_version="sysbench 1.0.20",
    variant_digests={"A": "a" * 64, "B": "b" * 64, "C": "c" * 64},
)

BASE: dict[str, Any] = {
    "filesystems": ["ext4", "xfs"],
    "mkfs_options": {"ext4": "", "xfs": ""},
    "mount_options": {"ext4": "", "xfs": ""},
    "workloads": ["oltp"],
    "variants": ["A", "B"],
    "bp_sizes": ["64M"],
    "threads": [4],
    "repeats": 1,
    "warmup": 10,
    "duration": 30,
    "report_interval": 1,
    "oltp_tables": 4,
    "oltp_table_size": 50000,
    "oltp_rand_type": "pareto",
    "oltp_percentile": 95,
    "mysql_flavor": "mariadb",
    "mycnf_overrides": {},
    "force": False,
}


def knobs(**changes: Any) -> dict[str, Any]:
    out = json.loads(json.dumps(BASE))
    out.update(changes)
    return out


def ctx(**changes: Any) -> plan.Context:
    return dataclasses.replace(CTX, **changes)


def by_path(the_plan: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["path"]: c for c in the_plan["cells"]}


def ok(cell: dict[str, Any]) -> dict[str, Any]:
    return {"key": cell["key"], "status": "ok"}


def one_line(exc: pytest.ExceptionInfo[BaseException]) -> str:
    message = str(exc.value)
    assert "\n" not in message
    return message


# ---------------------------------------------------------------- digest


def test_digest_is_a_short_sha256_of_sorted_compact_json() -> None:
    expected = hashlib.sha256(b'{"a":[1,"x"],"b":2}').hexdigest()
    assert plan.digest({"b": 2, "a": [1, "x"]}) == expected[:16]
    assert plan.digest({"a": [1, "x"], "b": 2}, length=8) == expected[:8]


def test_plan_error_is_a_value_error() -> None:
    assert issubclass(PlanError, ValueError)


# ---------------------------------------------------------------- normalise


def test_normalise_gives_the_canonical_form() -> None:
    spec = plan.normalise(
        {
            "filesystems": "xfs, ext4",
            "mkfs_options": {"xfs": " -m reflink=1 "},
            "mount_options": None,
            "workloads": "oltp",
            "variants": "C,A",
            "bp_sizes": "1G, 64M,1.5G",
            "threads": "16,4",
            "repeats": "2",
            "warmup": "0",
            "duration": "60",
            "oltp_tables": "8",
            "oltp_table_size": 1000,
            "mycnf_overrides": {"innodb_io_capacity": 2000},
            "force": "yes",
        },
        CTX,
    )
    assert spec == {
        "storages": [{"layout": "plain", "members": 1}],
        "filesystems": ["xfs", "ext4"],
        "mkfs_options": {"xfs": "-m reflink=1", "ext4": ""},
        "mount_options": {"xfs": "", "ext4": ""},
        "workloads": ["oltp"],
        "variants": ["C", "A"],
        "bp_sizes": [G, 64 * M, 1536 * M],
        "threads": [16, 4],
        "rates": [],
        "search": None,
        "repeats": 2,
        "cell_order": "interleaved",
        "cell_order_seed": 0,
        "warmup": 0,
        "duration": 60,
        "auto": None,
        "report_interval": 1,
        "reconnect_grace": 3600,
        "oltp": {"tables": 8, "table_size": 1000, "rand_type": "pareto", "percentile": 95},
        "tpcc": None,
        "fileio": None,
        "mycnf_overrides": {"innodb_io_capacity": "2000"},
        "force": True,
    }


def test_normalise_of_the_base_knobs() -> None:
    spec = plan.normalise(BASE, CTX)
    assert spec["filesystems"] == ["ext4", "xfs"]
    assert spec["bp_sizes"] == [64 * M]
    assert spec["threads"] == [4]
    assert spec["force"] is False
    assert spec["oltp"] == {"tables": 4, "table_size": 50000, "rand_type": "pareto", "percentile": 95}


@pytest.mark.parametrize(
    ("comma", "listed"),
    [
        ({"filesystems": "ext4,xfs"}, {"filesystems": ["ext4", "xfs"]}),
        ({"variants": "A, C"}, {"variants": ["A", "C"]}),
        ({"bp_sizes": "64M,1G"}, {"bp_sizes": ["64M", "1G"]}),
        ({"threads": "4,16"}, {"threads": [4, 16]}),
        ({"threads": 8}, {"threads": [8]}),
        ({"workloads": "oltp"}, {"workloads": ["oltp"]}),
    ],
)
def test_comma_strings_and_yaml_lists_mean_the_same(comma: dict, listed: dict) -> None:
    from_comma = plan.expand(knobs(**comma), CTX, {})
    from_list = plan.expand(knobs(**listed), CTX, {})
    assert from_comma["spec"] == from_list["spec"]
    assert [(c["path"], c["key"]) for c in from_comma["cells"]] == [(c["path"], c["key"]) for c in from_list["cells"]]


def test_mkfs_and_mount_options_missing_for_a_filesystem_mean_none() -> None:
    spec = plan.normalise(knobs(mkfs_options={"xfs": "-m crc=1"}, mount_options={}), CTX)
    assert spec["mkfs_options"] == {"ext4": "", "xfs": "-m crc=1"}
    assert spec["mount_options"] == {"ext4": "", "xfs": ""}


def test_options_for_a_known_filesystem_not_in_the_sweep_are_dropped() -> None:
    spec = plan.normalise(knobs(filesystems="ext4", mkfs_options={"xfs": "-m crc=1"}), CTX)
    assert spec["mkfs_options"] == {"ext4": ""}


def test_report_interval_equal_to_duration_is_accepted() -> None:
    spec = plan.normalise(knobs(duration=5, report_interval=5), CTX)
    assert (spec["duration"], spec["report_interval"]) == (5, 5)


def test_warmup_zero_is_accepted() -> None:
    assert plan.normalise(knobs(warmup=0), CTX)["warmup"] == 0


def test_bp_size_just_below_memory_is_accepted() -> None:
    assert plan.normalise(knobs(bp_sizes=[16 * G - 1]), CTX)["bp_sizes"] == [16 * G - 1]


BAD_KNOBS = [
    ({"filesystems": "ext4,btrfs"}, KnobError, "filesystems: unknown btrfs; accepted: ext4, xfs"),
    ({"filesystems": []}, KnobError, "filesystems is empty; accepted: ext4, xfs"),
    ({"filesystems": "ext4,ext4"}, KnobError, "filesystems='ext4,ext4' names a value twice; list each once"),
    ({"workloads": "tpcc-c"}, KnobError, "workloads: unknown tpcc-c; accepted: oltp, tpcc, fileio"),
    ({"workloads": None}, KnobError, "workloads is empty; accepted: oltp, tpcc, fileio"),
    ({"variants": "A,Z"}, KnobError, "variants: unknown Z; accepted: A, B, C"),
    ({"variants": ""}, KnobError, "variants is empty; accepted: A, B, C"),
    ({"variants": ["B", "B"]}, KnobError, "variants=['B', 'B'] names a value twice; list each once"),
    (
        {"bp_sizes": "64M,lots"},
        KnobError,
        "bp_sizes: cannot read size 'lots'; use bytes or a number with K, M, G or T (e.g. 128M, 25G)",
    ),
    ({"bp_sizes": "0M"}, KnobError, "bp_sizes: size '0M' must be larger than zero"),
    ({"bp_sizes": []}, PlanError, "bp_sizes is empty; give at least one buffer-pool size, e.g. bp_sizes=128M,256M"),
    ({"bp_sizes": "64M,64M"}, KnobError, "bp_sizes='64M,64M' names a value twice; list each once"),
    (
        {"bp_sizes": "64M,16G"},
        PlanError,
        "bp_sizes: 16G is not smaller than the memory of db1 (16.0G); choose a smaller buffer pool",
    ),
    (
        {"bp_sizes": ["20G"]},
        PlanError,
        "bp_sizes: 20G is not smaller than the memory of db1 (16.0G); choose a smaller buffer pool",
    ),
    ({"threads": "four"}, KnobError, "threads='four' is not a number; give a whole number above zero"),
    ({"threads": "4,0"}, KnobError, "threads='0' must be a whole number above zero"),
    ({"threads": ""}, PlanError, "threads is empty; give at least one thread count, e.g. threads=4,16"),
    ({"threads": "4,4"}, KnobError, "threads='4,4' names a value twice; list each once"),
    ({"warmup": -1}, KnobError, "warmup=-1 must be a whole number of zero or more"),
    ({"warmup": "later"}, KnobError, "warmup='later' is not a number; give a whole number of zero or more"),
    ({"duration": 0}, KnobError, "duration=0 must be a whole number above zero"),
    ({"duration": None}, KnobError, "duration=None is not a number; give a whole number above zero"),
    (
        {"duration": 60, "report_interval": 61},
        PlanError,
        "report_interval=61 is longer than duration=60; nothing would be measured",
    ),
    ({"report_interval": 0}, KnobError, "report_interval=0 must be a whole number above zero"),
    (
        {"reconnect_grace": 59},
        PlanError,
        "reconnect_grace=59 leaves a remote trial no time to restore its dataset and start its server; "
        "give at least 60 seconds",
    ),
    ({"reconnect_grace": "1h"}, KnobError, "reconnect_grace='1h' is not a number; give a whole number of zero or more"),
    ({"repeats": 0}, KnobError, "repeats=0 must be a whole number above zero"),
    ({"oltp_tables": "x"}, KnobError, "oltp_tables='x' is not a number; give a whole number above zero"),
    ({"oltp_table_size": -10}, KnobError, "oltp_table_size=-10 must be a whole number above zero"),
    ({"oltp_percentile": 0}, KnobError, "oltp_percentile=0 must be a whole number above zero"),
    ({"mysql_flavor": "postgres"}, KnobError, "mysql_flavor: unknown postgres; accepted: mariadb, mysql, percona"),
    (
        {"mycnf_overrides": {"innodb_buffer_pool_size": "1G"}},
        PlanError,
        "mycnf_overrides sets innodb_buffer_pool_size; use bp_sizes, which sweeps it",
    ),
    ({"mycnf_overrides": "innodb_io_capacity=200"}, PlanError, "mycnf_overrides must map option names to values"),
    (
        {"mkfs_options": {"btrfs": "-x", "xfs": ""}},
        PlanError,
        "mkfs_options: unknown filesystem btrfs; accepted: ext4, xfs",
    ),
    (
        {"mount_options": {"zfs": "", "ntfs": ""}},
        PlanError,
        "mount_options: unknown filesystem ntfs, zfs; accepted: ext4, xfs",
    ),
    (
        {"mkfs_options": "-m reflink=1"},
        PlanError,
        "mkfs_options must map a filesystem to its options, e.g. {xfs: '-m reflink=1'}",
    ),
]


@pytest.mark.parametrize(("changes", "error", "message"), BAD_KNOBS, ids=[m for _, _, m in BAD_KNOBS])
def test_a_bad_knob_is_refused_with_one_line(changes: dict, error: type, message: str) -> None:
    with pytest.raises(ValueError) as exc:
        plan.normalise(knobs(**changes), CTX)
    assert type(exc.value) is error
    assert one_line(exc) == message
    # expand refuses the same way, before any cell exists.
    with pytest.raises(error) as again:
        plan.expand(knobs(**changes), CTX, {})
    assert str(again.value) == message


def test_missing_knob_without_default_is_refused() -> None:
    incomplete = knobs()
    del incomplete["oltp_tables"]
    with pytest.raises(KnobError) as exc:
        plan.normalise(incomplete, CTX)
    assert one_line(exc) == "oltp_tables=None is not a number; give a whole number above zero"


def test_knobs_with_defaults_may_be_left_out() -> None:
    partial = knobs()
    for name in ("report_interval", "repeats", "oltp_rand_type", "oltp_percentile", "mysql_flavor", "force",
                 "mycnf_overrides", "mkfs_options", "mount_options"):
        del partial[name]
    spec = plan.normalise(partial, CTX)
    assert spec["report_interval"] == 1
    assert spec["repeats"] == 1
    assert spec["oltp"]["rand_type"] == "pareto"
    assert spec["oltp"]["percentile"] == 95
    assert spec["force"] is False
    assert spec["mycnf_overrides"] == {}
    assert spec["mkfs_options"] == {"ext4": "", "xfs": ""}


@pytest.mark.parametrize("changes", [{"bp_sizes": "1G,1024M"}, {"threads": "4,04"}, {"threads": [4, 4.0]}])
def test_duplicate_values_in_other_spellings_are_refused(changes: dict) -> None:
    with pytest.raises((KnobError, PlanError)):
        plan.expand(knobs(**changes), CTX, {})


@pytest.mark.parametrize(
    "name", ["innodb-buffer-pool-size", "INNODB_BUFFER_POOL_SIZE", "loose_innodb_buffer_pool_size"]
)
def test_mycnf_overrides_of_the_buffer_pool_in_any_spelling_are_refused(name: str) -> None:
    with pytest.raises(PlanError):
        plan.normalise(knobs(mycnf_overrides={name: "1G"}), CTX)


# ---------------------------------------------------------------- cells, order, paths


def test_grouped_cells_are_ordered_filesystem_workload_variant_bp_threads_repeat() -> None:
    the_plan = plan.expand(
        knobs(filesystems="xfs,ext4", variants="C,A", bp_sizes="128M,64M", threads="16,4", repeats=2, cell_order="grouped"),
        CTX, {}
    )
    expected = [
        f"db1/{fs}/oltp/{variant}/bp-{bp}/t{threads}/r{repeat}"
        for fs, variant, bp, threads, repeat in itertools.product(
            ["xfs", "ext4"], ["C", "A"], ["128M", "64M"], [16, 4], [1, 2]
        )
    ]
    assert [c["path"] for c in the_plan["cells"]] == expected
    assert len(expected) == 32


def test_repeats_are_interleaved_by_default_within_each_filesystem_pass() -> None:
    the_plan = plan.expand(knobs(filesystems="xfs,ext4", variants="C,A", threads="4", repeats=3), CTX, {})
    assert [c["id"] for c in the_plan["cells"]] == [
        f"{fs}/oltp/{variant}/bp-64M/t4/r{repeat}"
        for fs in ("xfs", "ext4") for repeat in (1, 2, 3) for variant in ("C", "A")
    ]
    grouped = plan.expand(knobs(filesystems="xfs,ext4", variants="C,A", threads="4", repeats=3, cell_order="grouped"), CTX, {})
    # The order is not an input of a result: the cells and their keys are the same.
    assert {c["path"]: c["key"] for c in grouped["cells"]} == {c["path"]: c["key"] for c in the_plan["cells"]}
    assert [len(p["cells"]) for p in the_plan["passes"]] == [6, 6]


def test_a_random_order_is_a_permutation_fixed_by_its_seed() -> None:
    def order(seed):
        shuffled = plan.expand(knobs(variants="C,A", bp_sizes="64M,128M", threads="4,8", repeats=2, cell_order="random",
                                     cell_order_seed=seed), CTX, {})
        return [c["path"] for c in shuffled["cells"]]
    grouped = plan.expand(knobs(variants="C,A", bp_sizes="64M,128M", threads="4,8", repeats=2, cell_order="grouped"), CTX, {})
    assert order(7) == order(7) != order(8)
    assert sorted(order(7)) == sorted(c["path"] for c in grouped["cells"]) and order(7) != [c["path"] for c in grouped["cells"]]
    # Each filesystem's cells stay in its own pass.
    assert [path.split("/")[1] for path in order(7)] == ["ext4"] * 16 + ["xfs"] * 16


def test_an_unknown_order_is_refused() -> None:
    with pytest.raises(KnobError, match="^cell_order: unknown sideways; accepted: interleaved, grouped, random$"):
        plan.expand(knobs(cell_order="sideways"), CTX, {})


def test_cell_order_spelled_out() -> None:
    the_plan = plan.expand(knobs(variants="B,A", threads="4,8"), CTX, {})
    assert [c["id"] for c in the_plan["cells"]] == [
        "ext4/oltp/B/bp-64M/t4/r1",
        "ext4/oltp/B/bp-64M/t8/r1",
        "ext4/oltp/A/bp-64M/t4/r1",
        "ext4/oltp/A/bp-64M/t8/r1",
        "xfs/oltp/B/bp-64M/t4/r1",
        "xfs/oltp/B/bp-64M/t8/r1",
        "xfs/oltp/A/bp-64M/t4/r1",
        "xfs/oltp/A/bp-64M/t8/r1",
    ]


def test_bp_labels_in_paths() -> None:
    the_plan = plan.expand(knobs(filesystems="ext4", variants="A", bp_sizes="64M,1G,1.5G,1048576"), CTX, {})
    assert [c["path"] for c in the_plan["cells"]] == [
        "db1/ext4/oltp/A/bp-64M/t4/r1",
        "db1/ext4/oltp/A/bp-1G/t4/r1",
        "db1/ext4/oltp/A/bp-1536M/t4/r1",
        "db1/ext4/oltp/A/bp-1M/t4/r1",
    ]
    assert [c["bp_size"] for c in the_plan["cells"]] == ["64M", "1G", "1536M", "1M"]
    assert [c["bp_bytes"] for c in the_plan["cells"]] == [64 * M, G, 1536 * M, M]


def test_a_cell_in_full() -> None:
    the_plan = plan.expand(knobs(filesystems="xfs", variants="C", threads=[8], repeats=2, warmup=5), CTX, {})
    cell = the_plan["cells"][1]
    dataset_key = cell["dataset"]["key"]
    assert cell == {
        "id": "xfs/oltp/C/bp-64M/t8/r2",
        "path": "db1/xfs/oltp/C/bp-64M/t8/r2",
        "key": cell["key"],
        "host": "db1",
        "layout": "plain",
        "members": 1,
        "filesystem": "xfs",
        "workload": "oltp",
        "dataset": {"workload": "oltp", "scale": {"tables": 4, "table_size": 50000}, "key": dataset_key,
                    "path": f"db1/xfs/oltp/dataset-{dataset_key}"},
        "variant": "C",
        "bp_size": "64M",
        "bp_bytes": 64 * M,
        "threads": 8,
        "rate": 0,
        "repeat": 2,
        "warmup": 5,
        "duration": 30,
        "auto": None,
        "report_interval": 1,
        "oltp": {"tables": 4, "table_size": 50000, "rand_type": "pareto", "percentile": 95},
        "state": "todo",
        "index": 2,
        "total": 2,
    }
    assert len(cell["key"]) == 16 and int(cell["key"], 16) >= 0
    assert len(dataset_key) == 16 and int(dataset_key, 16) >= 0


def test_keys_are_golden() -> None:
    """Keys are matched against trial.json of earlier runs: changing how they are made orphans every result."""
    the_plan = plan.expand(BASE, CTX, {})
    assert [(c["path"], c["key"], c["dataset"]["key"]) for c in the_plan["cells"]] == [
        ("db1/ext4/oltp/A/bp-64M/t4/r1", "c3e6b1f30e9488be", "42c20a220389a959"),
        ("db1/ext4/oltp/B/bp-64M/t4/r1", "61a1008f2b694ca9", "42c20a220389a959"),
        ("db1/xfs/oltp/A/bp-64M/t4/r1", "3fea6fcf4c8056a7", "a0e289c7be768971"),
        ("db1/xfs/oltp/B/bp-64M/t4/r1", "7bc4aa64d713152e", "a0e289c7be768971"),
    ]


# ---------------------------------------------------------------- detached trials


@pytest.mark.parametrize(("warmup", "duration", "grace", "seconds", "poll"), [
    (3600, 7200, 3600, 14400, 60),  # the seeds' trials: a look a minute
    (30, 60, 600, 690, 4),          # about 20 looks a trial
    (2, 4, 60, 66, 2),              # never more often than every 2 s
])
def test_a_detached_trial_may_take_its_length_and_the_grace(warmup, duration, grace, seconds, poll) -> None:
    assert plan.detachment({"warmup": warmup, "duration": duration}, grace) == {"seconds": seconds, "poll": poll}


def test_the_key_of_a_cell_does_not_depend_on_the_grace() -> None:
    keys = [[cell["key"] for cell in plan.expand(knobs(reconnect_grace=grace), CTX, {})["cells"]]
            for grace in (60, 7200)]
    assert keys[0] == keys[1]


# ---------------------------------------------------------------- keys


def test_keys_are_stable_for_identical_inputs() -> None:
    first = plan.expand(knobs(), CTX, {})
    second = plan.expand(knobs(), ctx(), {})
    assert [c["key"] for c in first["cells"]] == [c["key"] for c in second["cells"]]
    assert len({c["key"] for c in first["cells"]}) == len(first["cells"])


def test_keys_do_not_depend_on_how_a_knob_is_spelled() -> None:
    first = plan.expand(knobs(bp_sizes="64M", threads=4, warmup=10), CTX, {})
    second = plan.expand(knobs(bp_sizes=["65536K"], threads="4", warmup="10"), CTX, {})
    assert [(c["path"], c["key"]) for c in first["cells"]] == [(c["path"], c["key"]) for c in second["cells"]]


def key_of(path: str, the_knobs: dict[str, Any], the_ctx: plan.Context) -> str:
    return by_path(plan.expand(the_knobs, the_ctx, {}))[path]["key"]


CELL = "db1/ext4/oltp/A/bp-64M/t4/r1"

SAME_PATH_CHANGES = [
    ("device id", {}, {"device_id": "nvme:OTHER"}),
    ("server version", {}, {"server_version": "10.11.20-MariaDB"}),
    ("server flavor", {}, {"server_flavor": "percona"}),
    ("driver version", {}, {"driver_version": "sysbench 1.1.0"}),
    ("variant digest", {}, {"variant_digests": {**CTX.variant_digests, "A": "d" * 64}}),
    ("warmup", {"warmup": 11}, {}),
    ("duration", {"duration": 31}, {}),
    ("report interval", {"report_interval": 2}, {}),
    ("mount options", {"mount_options": {"ext4": "barrier=0"}}, {}),
    ("mkfs options", {"mkfs_options": {"ext4": "-E lazy_itable_init=0"}}, {}),
    ("mycnf overrides", {"mycnf_overrides": {"innodb_io_capacity": "2000"}}, {}),
    ("mycnf override value", {"mycnf_overrides": {"innodb_io_capacity": "2001"}}, {}),
    ("oltp tables", {"oltp_tables": 5}, {}),
    ("oltp table size", {"oltp_table_size": 50001}, {}),
    ("rand type", {"oltp_rand_type": "uniform"}, {}),
    ("percentile", {"oltp_percentile": 99}, {}),
]


@pytest.mark.parametrize(("what", "knob_changes", "ctx_changes"), SAME_PATH_CHANGES, ids=[w for w, _, _ in SAME_PATH_CHANGES])
def test_key_changes_with_every_input(what: str, knob_changes: dict, ctx_changes: dict) -> None:
    before = key_of(CELL, knobs(), CTX)
    assert before == "c3e6b1f30e9488be"
    assert key_of(CELL, knobs(**knob_changes), ctx(**ctx_changes)) != before


def test_keys_differ_between_bp_threads_and_repeat() -> None:
    cells = by_path(plan.expand(knobs(filesystems="ext4", variants="A", bp_sizes="64M,128M", threads="4,8", repeats=2),
                                CTX, {}))
    assert len(cells) == 8
    assert len({c["key"] for c in cells.values()}) == 8
    base = cells["db1/ext4/oltp/A/bp-64M/t4/r1"]["key"]
    assert cells["db1/ext4/oltp/A/bp-128M/t4/r1"]["key"] != base
    assert cells["db1/ext4/oltp/A/bp-64M/t8/r1"]["key"] != base
    assert cells["db1/ext4/oltp/A/bp-64M/t4/r2"]["key"] != base


def test_keys_differ_between_variants_even_with_equal_digests() -> None:
    same = ctx(variant_digests={"A": "x", "B": "x", "C": "x"})
    cells = by_path(plan.expand(knobs(filesystems="ext4", variants="A,B"), same, {}))
    assert cells["db1/ext4/oltp/A/bp-64M/t4/r1"]["key"] != cells["db1/ext4/oltp/B/bp-64M/t4/r1"]["key"]


def test_force_does_not_change_keys_or_paths() -> None:
    plain = plan.expand(knobs(force=False), CTX, {})
    forced = plan.expand(knobs(force="true"), CTX, {})
    assert [(c["path"], c["key"]) for c in plain["cells"]] == [(c["path"], c["key"]) for c in forced["cells"]]
    assert plain["spec"]["force"] is False and forced["spec"]["force"] is True


def test_the_digest_of_a_variant_not_in_the_sweep_does_not_matter() -> None:
    other = ctx(variant_digests={**CTX.variant_digests, "C": "changed"})
    assert key_of(CELL, knobs(), other) == key_of(CELL, knobs(), CTX)


def test_mkfs_options_change_the_dataset_key_mount_options_do_not() -> None:
    base = by_path(plan.expand(knobs(), CTX, {}))[CELL]
    mkfs = by_path(plan.expand(knobs(mkfs_options={"ext4": "-E lazy_itable_init=0"}), CTX, {}))[CELL]
    mount = by_path(plan.expand(knobs(mount_options={"ext4": "barrier=0"}), CTX, {}))[CELL]
    assert mkfs["dataset"]["key"] != base["dataset"]["key"]
    assert mount["dataset"]["key"] == base["dataset"]["key"]
    assert mount["key"] != base["key"]


def test_options_of_one_filesystem_leave_the_other_filesystems_keys_alone() -> None:
    base = by_path(plan.expand(knobs(), CTX, {}))
    changed = by_path(plan.expand(knobs(mkfs_options={"xfs": "-m crc=1"}, mount_options={"xfs": "logbsize=256k"}),
                                  CTX, {}))
    for path, cell in base.items():
        if "/ext4/" in path:
            assert changed[path]["key"] == cell["key"]
        else:
            assert changed[path]["key"] != cell["key"]


def test_the_dataset_key_ignores_what_only_the_cells_use() -> None:
    base = by_path(plan.expand(knobs(), CTX, {}))[CELL]["dataset"]["key"]
    for changes in ({"warmup": 99}, {"duration": 99}, {"threads": [64]}, {"bp_sizes": ["128M"]},
                    {"mycnf_overrides": {"innodb_io_capacity": "1"}}, {"oltp_rand_type": "uniform"}):
        the_plan = plan.expand(knobs(**changes), CTX, {})
        assert the_plan["cells"][0]["dataset"]["key"] == base, changes
    for changes in ({"device_id": "x"}, {"server_version": "11.4"}, {"host": "db2"}):
        assert plan.expand(knobs(), ctx(**changes), {})["cells"][0]["dataset"]["key"] != base, changes


def test_the_dataset_key_is_shared_by_every_cell_of_a_filesystem() -> None:
    the_plan = plan.expand(knobs(variants="A,B,C", bp_sizes="64M,128M", threads="4,8"), CTX, {})
    keys = {fs: {c["dataset"]["key"] for c in the_plan["cells"] if c["filesystem"] == fs} for fs in ("ext4", "xfs")}
    assert len(keys["ext4"]) == 1 and len(keys["xfs"]) == 1
    assert keys["ext4"] != keys["xfs"]


# ---------------------------------------------------------------- finished cells


def test_finished_ok_cells_with_the_same_key_are_done() -> None:
    fresh = plan.expand(knobs(), CTX, {})
    cells = fresh["cells"]
    finished = {cells[0]["path"]: ok(cells[0]), cells[2]["path"]: ok(cells[2])}
    the_plan = plan.expand(knobs(), CTX, finished)
    assert [c["state"] for c in the_plan["cells"]] == ["done", "todo", "done", "todo"]
    assert the_plan["counts"] == {"cells": 4, "todo": 2, "done": 2}


@pytest.mark.parametrize("status", ["failed", "unreadable", "missing", None])
def test_finished_cells_that_did_not_succeed_are_todo(status: str | None) -> None:
    cell = plan.expand(knobs(), CTX, {})["cells"][0]
    for key in (cell["key"], "0123456789abcdef", None):
        the_plan = plan.expand(knobs(), CTX, {cell["path"]: {"key": key, "status": status}})
        assert the_plan["cells"][0]["state"] == "todo"
        assert the_plan["counts"] == {"cells": 4, "todo": 4, "done": 0}


def test_finished_paths_outside_the_plan_are_ignored() -> None:
    the_plan = plan.expand(knobs(), CTX, {"db1/ext4/oltp/D/bp-64M/t4/r1": {"key": "x", "status": "ok"}})
    assert the_plan["counts"] == {"cells": 4, "todo": 4, "done": 0}


@pytest.mark.parametrize("force", [True, "true", "yes", "1", "on"])
def test_force_runs_done_cells_again(force: object) -> None:
    cells = plan.expand(knobs(), CTX, {})["cells"]
    finished = {c["path"]: ok(c) for c in cells}
    assert plan.expand(knobs(), CTX, finished)["counts"] == {"cells": 4, "todo": 0, "done": 4}
    the_plan = plan.expand(knobs(force=force), CTX, finished)
    assert [c["state"] for c in the_plan["cells"]] == ["todo"] * 4
    assert the_plan["counts"] == {"cells": 4, "todo": 4, "done": 0}


@pytest.mark.parametrize("force", [False, "false", "no", "0", ""])
def test_force_off_in_any_spelling_keeps_done_cells(force: object) -> None:
    cells = plan.expand(knobs(), CTX, {})["cells"]
    the_plan = plan.expand(knobs(force=force), CTX, {c["path"]: ok(c) for c in cells})
    assert the_plan["counts"] == {"cells": 4, "todo": 0, "done": 4}


def test_a_finished_ok_cell_with_another_key_is_refused() -> None:
    cells = plan.expand(knobs(), CTX, {})["cells"]
    finished = {cells[1]["path"]: {"key": "0123456789abcdef", "status": "ok"}}
    with pytest.raises(PlanError) as exc:
        plan.expand(knobs(), CTX, finished)
    assert one_line(exc) == (
        "1 finished cell(s) were measured with other inputs (first: db1/ext4/oltp/B/bp-64M/t4/r1 has key "
        f"0123456789abcdef, the plan gives {cells[1]['key']}); use a new run_name, or force=true to measure them "
        "again (the old results are kept beside them)"
    )
    assert "force" in str(exc.value) and "run_name" in str(exc.value)


def test_conflicts_are_counted_and_the_first_in_plan_order_is_named() -> None:
    finished_with = {c["path"]: ok(c) for c in plan.expand(knobs(), CTX, {})["cells"]}
    # Another server version changes every key: all four finished cells conflict.
    with pytest.raises(PlanError) as exc:
        plan.expand(knobs(), ctx(server_version="11.4.2-MariaDB"), finished_with)
    message = one_line(exc)
    assert message.startswith(
        "4 finished cell(s) were measured with other inputs (first: db1/ext4/oltp/A/bp-64M/t4/r1 has key "
        "c3e6b1f30e9488be, the plan gives "
    )


def test_force_also_overrides_a_conflict() -> None:
    finished = {c["path"]: ok(c) for c in plan.expand(knobs(), CTX, {})["cells"]}
    the_plan = plan.expand(knobs(force=True), ctx(device_id="nvme:OTHER"), finished)
    assert the_plan["counts"] == {"cells": 4, "todo": 4, "done": 0}


def test_a_changed_input_conflicts_only_with_the_cells_it_touches() -> None:
    finished = {c["path"]: ok(c) for c in plan.expand(knobs(), CTX, {})["cells"]}
    # xfs mount options are not part of the ext4 cells' keys.
    with pytest.raises(PlanError) as exc:
        plan.expand(knobs(mount_options={"xfs": "logbsize=256k"}), CTX, finished)
    assert str(exc.value).startswith("2 finished cell(s) were measured with other inputs (first: db1/xfs/oltp/A/")


# ---------------------------------------------------------------- numbering and passes


def test_index_and_total_number_the_todo_cells_only() -> None:
    cells = plan.expand(knobs(variants="A,B,C"), CTX, {})["cells"]
    finished = {cells[0]["path"]: ok(cells[0]), cells[4]["path"]: ok(cells[4])}
    the_plan = plan.expand(knobs(variants="A,B,C"), CTX, finished)
    numbered = [(c["id"], c["state"], c.get("index"), c.get("total")) for c in the_plan["cells"]]
    assert numbered == [
        ("ext4/oltp/A/bp-64M/t4/r1", "done", None, None),
        ("ext4/oltp/B/bp-64M/t4/r1", "todo", 1, 4),
        ("ext4/oltp/C/bp-64M/t4/r1", "todo", 2, 4),
        ("xfs/oltp/A/bp-64M/t4/r1", "todo", 3, 4),
        ("xfs/oltp/B/bp-64M/t4/r1", "done", None, None),
        ("xfs/oltp/C/bp-64M/t4/r1", "todo", 4, 4),
    ]


def test_passes_one_per_filesystem_with_todo_cells_and_one_dataset_each() -> None:
    the_plan = plan.expand(
        knobs(variants="A,B,C", bp_sizes="64M,128M", threads="4,8",
              mkfs_options={"xfs": "-m reflink=1"}, mount_options={"ext4": "data=ordered"}),
        CTX, {},
    )
    passes = the_plan["passes"]
    assert [p["filesystem"] for p in passes] == ["ext4", "xfs"]
    assert [(p["mkfs_options"], p["mount_options"]) for p in passes] == [("", "data=ordered"), ("-m reflink=1", "")]
    for one_pass in passes:
        assert len(one_pass["cells"]) == 12
        assert {c["filesystem"] for c in one_pass["cells"]} == {one_pass["filesystem"]}
        assert one_pass["datasets"] == [one_pass["cells"][0]["dataset"]]
        assert one_pass["datasets"][0]["scale"] == {"tables": 4, "table_size": 50000}
    assert [c["path"] for p in passes for c in p["cells"]] == [c["path"] for c in the_plan["cells"]]


def test_passes_keep_the_users_filesystem_order() -> None:
    the_plan = plan.expand(knobs(filesystems="xfs,ext4"), CTX, {})
    assert [p["filesystem"] for p in the_plan["passes"]] == ["xfs", "ext4"]


def test_a_filesystem_with_nothing_to_do_has_no_pass() -> None:
    cells = plan.expand(knobs(), CTX, {})["cells"]
    finished = {c["path"]: ok(c) for c in cells if c["filesystem"] == "ext4"}
    the_plan = plan.expand(knobs(), CTX, finished)
    assert [p["filesystem"] for p in the_plan["passes"]] == ["xfs"]
    assert [c["id"] for c in the_plan["passes"][0]["cells"]] == ["xfs/oltp/A/bp-64M/t4/r1", "xfs/oltp/B/bp-64M/t4/r1"]
    assert [c["state"] for c in the_plan["passes"][0]["cells"]] == ["todo", "todo"]


def test_a_finished_matrix_has_no_passes() -> None:
    cells = plan.expand(knobs(), CTX, {})["cells"]
    the_plan = plan.expand(knobs(), CTX, {c["path"]: ok(c) for c in cells})
    assert the_plan["passes"] == []
    assert the_plan["counts"] == {"cells": 4, "todo": 0, "done": 4}


# ---------------------------------------------------------------- describe


def test_describe_one_line_per_cell_then_the_counts() -> None:
    cells = plan.expand(knobs(), CTX, {})["cells"]
    the_plan = plan.expand(knobs(), CTX, {cells[3]["path"]: ok(cells[3])})
    assert plan.describe(the_plan) == [
        "db1/ext4/oltp/A/bp-64M/t4/r1  key=c3e6b1f30e9488be  todo",
        "db1/ext4/oltp/B/bp-64M/t4/r1  key=61a1008f2b694ca9  todo",
        "db1/xfs/oltp/A/bp-64M/t4/r1  key=3fea6fcf4c8056a7  todo",
        "db1/xfs/oltp/B/bp-64M/t4/r1  key=7bc4aa64d713152e  done",
        "4 cells: 3 to run, 1 already finished",
    ]


def test_space_needed_holds_two_copies_with_their_redo_logs_and_headroom() -> None:
    spec = plan.normalise(BASE, CTX)  # 4 × 50000 rows, base.cnf's 2 × 1G redo log
    copy = 4 * 50000 * plan.OLTP_BYTES_PER_ROW + plan.SYSTEM_TABLESPACE_BYTES + (2 << 30)
    assert plan.space_needed(spec) == int(2 * copy * 1.1)
    smaller_redo = plan.normalise({**BASE, "mycnf_overrides": {"innodb-log-file-size": "256M"}}, CTX)
    assert plan.space_needed(smaller_redo) == int(2 * (copy - (2 << 30) + (256 << 20)) * 1.1)
    # MySQL 8.0.30+: the redo is one capacity, and that is the override that sizes it.
    one_capacity = plan.normalise({**BASE, "mycnf_overrides": {"innodb_redo_log_capacity": "96M"}}, CTX)
    assert plan.space_needed(one_capacity) == int(2 * (copy - (2 << 30) + (96 << 20)) * 1.1)


def test_space_needed_at_the_posts_scale_is_about_twice_78_gib() -> None:
    spec = plan.normalise({**BASE, "oltp_tables": 32, "oltp_table_size": 10_000_000}, CTX)
    assert 160 << 30 < plan.space_needed(spec) < 200 << 30


# ---------------------------------------------------------------- tpcc


def tpcc_knobs(**changes: Any) -> dict[str, Any]:
    return knobs(**{"workloads": ["tpcc"], "tpcc_warehouses": 10, "tpcc_load_jobs": 4, **changes})


def test_tpcc_cells_sweep_variants_and_buffer_pools_like_oltp() -> None:
    the_plan = plan.expand(tpcc_knobs(filesystems="xfs", bp_sizes="64M,128M", variants="A"), ctx(tpcc_version="1ec1c5e"), {})
    assert [c["id"] for c in the_plan["cells"]] == ["xfs/tpcc/A/bp-64M/t4/r1", "xfs/tpcc/A/bp-128M/t4/r1"]
    cell = the_plan["cells"][0]
    assert cell["tpcc"] == {"warehouses": 10, "load_jobs": 4} and "oltp" not in cell
    assert cell["dataset"]["scale"] == {"warehouses": 10}
    assert the_plan["device_bytes_needed"] == int(2 * (10 * plan.TPCC_BYTES_PER_WAREHOUSE + plan.SYSTEM_TABLESPACE_BYTES
                                                       + plan.BASE_REDO_BYTES) * 1.1)


def test_tpcc_keys_follow_the_tool_and_the_scale() -> None:
    def first(knob_changes: dict[str, Any], **ctx_changes: Any) -> dict[str, Any]:
        return plan.expand(tpcc_knobs(**knob_changes), ctx(**{"tpcc_version": "1ec1c5e", **ctx_changes}), {})["cells"][0]

    base = first({})
    assert first({})["key"] == base["key"]
    assert first({}, tpcc_version="0000000")["key"] != base["key"]
    assert first({}, tpcc_version="0000000")["dataset"]["key"] != base["dataset"]["key"]
    assert first({"tpcc_warehouses": 20})["dataset"]["key"] != base["dataset"]["key"]
    # How many loaders filled the tables does not change what a trial measures.
    assert first({"tpcc_load_jobs": 1})["dataset"]["key"] == base["dataset"]["key"]
    # sysbench's version is not tpcc-mysql's.
    assert first({}, driver_version="sysbench 1.1")["key"] == base["key"]


def test_tpcc_load_jobs_never_exceed_the_warehouses() -> None:
    spec = plan.normalise(tpcc_knobs(tpcc_warehouses=2, tpcc_load_jobs=8), CTX)
    assert spec["tpcc"] == {"warehouses": 2, "load_jobs": 2}


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"tpcc_warehouses": 0}, "tpcc_warehouses=0 must be a whole number above zero"),
        ({"tpcc_load_jobs": "many"}, "tpcc_load_jobs='many' is not a number; give a whole number above zero"),
    ],
)
def test_a_bad_tpcc_knob_is_refused(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(KnobError, match=f"^{re.escape(message)}$"):
        plan.expand(tpcc_knobs(**changes), CTX, {})


def test_tpcc_times_must_be_whole_intervals() -> None:
    with pytest.raises(PlanError, match="tpcc: warmup=15 and duration=30 must be whole multiples of report_interval=10"):
        plan.expand(tpcc_knobs(warmup=15, duration=30, report_interval=10), CTX, {})
    assert plan.expand(tpcc_knobs(warmup=20, duration=30, report_interval=10), CTX, {})["counts"]["cells"] == 4


def test_fixed_rate_cells_sit_beside_their_closed_loop_cell() -> None:
    without = plan.expand(knobs(filesystems="xfs", variants="A"), CTX, {})
    the_plan = plan.expand(knobs(filesystems="xfs", variants="A", rates=[400, 200], repeats=2), CTX, {})
    assert [c["id"] for c in the_plan["cells"]] == [
        "xfs/oltp/A/bp-64M/t4/r1", "xfs/oltp/A/bp-64M/t4-rate400/r1", "xfs/oltp/A/bp-64M/t4-rate200/r1",
        "xfs/oltp/A/bp-64M/t4/r2", "xfs/oltp/A/bp-64M/t4-rate400/r2", "xfs/oltp/A/bp-64M/t4-rate200/r2",
    ]
    assert [c["rate"] for c in the_plan["cells"][:3]] == [0, 400, 200]
    assert len({c["key"] for c in the_plan["cells"]}) == 6
    # A closed-loop cell keeps the key it had before rates existed: finished results stay finished.
    assert the_plan["cells"][0]["key"] == without["cells"][0]["key"]
    assert layout.parse(the_plan["cells"][1]["path"])["rate"] == 400
    assert layout.parse(the_plan["cells"][0]["path"])["rate"] == 0


def test_rates_apply_to_oltp_cells_only() -> None:
    the_plan = plan.expand(tpcc_knobs(workloads=["oltp", "tpcc"], rates=[300]), CTX, {})
    assert sorted({(c["workload"], c["rate"]) for c in the_plan["cells"]}) == [("oltp", 0), ("oltp", 300), ("tpcc", 0)]


@pytest.mark.parametrize(("changes", "message"), [
    ({"rates": "auto,200"}, "rates: auto searches for the rates itself; give it alone, not with auto, 200"),
    ({"rates": "auto", "warmup": "auto"}, "rates: fixed-rate trials need a fixed warmup and duration"),
    ({"rates": "auto", "workloads": ["fileio"]}, "rates=auto searches sysbench OLTP's capacity; add oltp"),
    ({"rates": "auto", "sla_percentile": 100}, "sla_percentile=100: give a percentile above 0 and below 100"),
    ({"rates": "auto", "sla_percentile": "ninety"}, "sla_percentile must be a number, not 'ninety'"),
    ({"rates": "auto", "sla_ms": "nan"}, "sla_ms must be a finite number, not 'nan'"),
    ({"rates": "auto", "sla_ms": 0}, "sla_ms=0: give the SLA's limit as a positive number of milliseconds"),
    ({"rates": "auto", "sla_ms": "1" + "0" * 400}, "sla_ms must be a finite number"),
    ({"rates": "auto", "search_steps": 0}, "search_steps"),
    ({"rates": "auto", "search_steps": 21}, "search_steps=21: a search halves its bracket each step; give at most 20"),
    ({"rates": [200], "warmup": "auto"}, "rates: fixed-rate trials need a fixed warmup and duration"),
    ({"rates": [200], "workloads": ["fileio"]}, "rates: fixed-rate trials run sysbench OLTP; add oltp to workloads"),
    ({"rates": [10_000_000]}, "rates: 10000000 transactions a second is beyond any server; give at most 9999999"),
    ({"rates": [200, 200]}, "rates"),
    ({"rates": [0]}, "rates"),
])
def test_bad_rates_are_refused_in_one_line(changes: dict[str, Any], message: str) -> None:
    with pytest.raises((PlanError, KnobError), match=f"^{re.escape(message)}"):
        plan.expand(knobs(**changes), CTX, {})


def test_a_searched_configuration_runs_its_closed_loop_cells_and_steps_at_the_keys_a_listed_rate_has() -> None:
    searched = plan.expand(knobs(filesystems="xfs", variants="A", rates="auto", repeats=2), CTX, {})
    listed = plan.expand(knobs(filesystems="xfs", variants="A", rates=[150], repeats=2), CTX, {})
    assert searched["spec"]["search"] == {"sla_percentile": 99.0, "sla_ms": 10.0, "steps": 6}
    assert [c["id"] for c in searched["cells"]] == ["xfs/oltp/A/bp-64M/t4/r1", "xfs/oltp/A/bp-64M/t4/r2"]
    # The closed-loop cells keep their keys; a step at 150/s is the cell rates=150 plans, key and all.
    assert [c["key"] for c in searched["cells"]] == [listed["cells"][0]["key"], listed["cells"][2]["key"]]
    configurations = plan.searches(searched["cells"])
    assert [(found["configuration"], [c["repeat"] for c in found["cells"]]) for found in configurations] == [
        ("db1/xfs/oltp/A/bp-64M/t4", [1, 2])]
    step = [plan.at_rate(cell, 150, cell["repeat"]) for cell in configurations[0]["cells"]]
    expected = [c for c in listed["cells"] if c["rate"] == 150]
    assert [(c["path"], c["key"]) for c in step] == [(c["path"], c["key"]) for c in expected]
    assert "search_inputs" not in step[0] and step[0]["dataset"] == expected[0]["dataset"]
    # A step is a pass's work though every closed-loop cell is done; without open searches none is.
    done = {c["path"]: {"key": c["key"], "status": "ok"} for c in searched["cells"]}
    rerun = plan.expand(knobs(filesystems="xfs", variants="A", rates="auto", repeats=2), CTX, done)
    assert rerun["passes"] == []
    reopened = plan.with_searches(rerun, {"db1/xfs/oltp/A/bp-64M/t4"})
    assert [(p["name"], p["cells"], len(p["searches"])) for p in reopened["passes"]] == [("xfs", [], 1)]
    assert reopened["passes"][0]["datasets"] == [searched["cells"][0]["dataset"]]
    assert plan.describe(reopened)[-1] == ("capacity search (rates=auto) at p99 ≤ 10 ms: 1 of 1 configuration(s) "
                                           "with steps to run, at most 6 a configuration (a fixed-rate trial a repeat each)")
