"""Unit tests for filter_plugins/innomatrix.py: thin Ansible filters over the innomatrix package."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

pytest.importorskip("ansible")
from ansible.errors import AnsibleFilterError  # noqa: E402

from innomatrix import plan, results  # noqa: E402
from innomatrix_host import mycnf  # noqa: E402
from innomatrix.plan import KNOBS as PLAN_KNOBS  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
CNF_DIR = str(ROOT / "my.cnf.d")
HELP_FIXTURE = ROOT / "tests" / "fixtures" / "mycnf" / "mariadbd-10.11.19-verbose-help.txt"
MARIADB_VERSION = "10.11.19-MariaDB-0+deb12u1"
G = 1 << 30


def _load() -> ModuleType:
    # Not under the name "innomatrix": that would shadow the package the plugin imports.
    spec = importlib.util.spec_from_file_location("innomatrix_filter_plugin", ROOT / "filter_plugins" / "innomatrix.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


filters = _load()

FACTS = {
    "host": "db1",
    "memory_bytes": str(16 * G),  # set_fact templating hands it over as text
    "device_id": "nvme:SERIAL123",
    "server_flavor": "mariadb",
    "server_version": "10.11.19-MariaDB",
    "driver_version": "sysbench 1.0.20",
}
KNOBS: dict[str, Any] = {
    "filesystems": ["ext4", "xfs"],
    "mkfs_options": {"ext4": "", "xfs": ""},
    "mount_options": {"ext4": "", "xfs": ""},
    "variants": ["A", "C"],
    "bp_sizes": ["64M", "256M"],
    "workloads": ["oltp"],
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
    "mycnf_overrides": {"innodb_log_file_size": "256M"},
    "force": False,
}


def real_context(**changes: Any) -> plan.Context:
    return plan.context({**FACTS, **changes}, CNF_DIR)


def test_the_filters_ansible_sees() -> None:
    assert filters.FilterModule().filters() == {
        "innomatrix_knobs": filters.innomatrix_knobs,
        "innomatrix_devices": filters.innomatrix_devices,
        "innomatrix_plan": filters.innomatrix_plan,
        "innomatrix_check_knobs": filters.innomatrix_check_knobs,
        "innomatrix_plan_lines": filters.innomatrix_plan_lines,
        "innomatrix_plan_record": filters.innomatrix_plan_record,
        "innomatrix_detach": filters.innomatrix_detach,
        "innomatrix_known_options": filters.innomatrix_known_options,
        "innomatrix_outcomes": filters.innomatrix_outcomes,
        "innomatrix_unfinished": filters.innomatrix_unfinished,
        "innomatrix_commit": filters.innomatrix_commit,
        "innomatrix_progress": filters.innomatrix_progress,
        "innomatrix_search_step": filters.innomatrix_search_step,
    }


def test_a_hosts_devices_from_the_inventory_or_the_command_line() -> None:
    # `-e devices=a,b` is a string: sliced for the first N members, it gave characters.
    assert filters.innomatrix_devices("/dev/vdb, /dev/vdc") == ["/dev/vdb", "/dev/vdc"]
    assert filters.innomatrix_devices(["/dev/vdb", "/dev/vdc"]) == ["/dev/vdb", "/dev/vdc"]
    assert filters.innomatrix_devices([]) == []
    with pytest.raises(AnsibleFilterError, match="devices='/dev/vdb,/dev/vdb' names a value twice"):
        filters.innomatrix_devices("/dev/vdb,/dev/vdb")


def test_context_from_facts() -> None:
    ctx = plan.context({**FACTS, "memory_bytes": str(16 * G)}, CNF_DIR)  # Ansible facts arrive as text
    assert ctx == real_context()
    assert ctx.memory_bytes == 16 * G
    assert sorted(ctx.variant_digests) == ["A", "B", "C", "D"]
    assert all(re.fullmatch(r"[0-9a-f]{64}", d) for d in ctx.variant_digests.values())


# ---------------------------------------------------------------- plan


def test_innomatrix_plan_is_the_package_plan(tmp_path: Path) -> None:
    the_plan = filters.innomatrix_plan(KNOBS, FACTS, CNF_DIR, str(tmp_path / "main"))
    assert the_plan == plan.expand(KNOBS, real_context(), {})
    assert [c["path"] for c in the_plan["cells"]] == [
        "db1/ext4/oltp/A/bp-64M/t4/r1",
        "db1/ext4/oltp/A/bp-256M/t4/r1",
        "db1/ext4/oltp/C/bp-64M/t4/r1",
        "db1/ext4/oltp/C/bp-256M/t4/r1",
        "db1/xfs/oltp/A/bp-64M/t4/r1",
        "db1/xfs/oltp/A/bp-256M/t4/r1",
        "db1/xfs/oltp/C/bp-64M/t4/r1",
        "db1/xfs/oltp/C/bp-256M/t4/r1",
    ]
    assert the_plan["counts"] == {"cells": 8, "todo": 8, "done": 0}


def test_innomatrix_plan_reads_the_run_directory(tmp_path: Path) -> None:
    run = tmp_path / "main"
    cells = filters.innomatrix_plan(KNOBS, FACTS, CNF_DIR, str(run))["cells"]
    for cell, status in ((cells[0], "ok"), (cells[5], "failed")):
        (run / cell["path"]).mkdir(parents=True)
        (run / cell["path"] / "trial.json").write_text(json.dumps({"key": cell["key"], "status": status}))
    assert results.finished(run)[cells[0]["path"]] == {"key": cells[0]["key"], "status": "ok"}
    the_plan = filters.innomatrix_plan(KNOBS, FACTS, CNF_DIR, str(run))
    assert [c["state"] for c in the_plan["cells"]] == ["done"] + ["todo"] * 7
    assert the_plan["counts"] == {"cells": 8, "todo": 7, "done": 1}


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"variants": ["A", "E"]}, "variants: unknown E; accepted: A, B, C, D"),
        ({"duration": 0}, "duration=0 must be a whole number above zero"),
        ({"bp_sizes": ["16G"]},
         "bp_sizes: 16G is not smaller than the memory of db1 (16.0G); choose a smaller buffer pool"),
    ],
)
def test_innomatrix_plan_turns_a_bad_knob_into_a_filter_error(tmp_path: Path, changes: dict, message: str) -> None:
    with pytest.raises(AnsibleFilterError) as exc:
        filters.innomatrix_plan({**KNOBS, **changes}, FACTS, CNF_DIR, str(tmp_path))
    assert exc.value.message == message
    assert exc.value.__suppress_context__ is True  # raised "from None": one line, no traceback chain


def test_innomatrix_plan_turns_a_conflict_into_a_filter_error(tmp_path: Path) -> None:
    cell = filters.innomatrix_plan(KNOBS, FACTS, CNF_DIR, str(tmp_path))["cells"][0]
    (tmp_path / cell["path"]).mkdir(parents=True)
    (tmp_path / cell["path"] / "trial.json").write_text(json.dumps({"key": "0" * 16, "status": "ok"}))
    with pytest.raises(AnsibleFilterError) as exc:
        filters.innomatrix_plan(KNOBS, FACTS, CNF_DIR, str(tmp_path))
    assert exc.value.message.startswith(f"1 finished cell(s) were measured with other inputs (first: {cell['path']} ")
    assert filters.innomatrix_plan({**KNOBS, "force": "true"}, FACTS, CNF_DIR, str(tmp_path))["counts"]["todo"] == 8


def test_innomatrix_plan_turns_a_damaged_run_into_a_filter_error(tmp_path: Path) -> None:
    """The resume check reads the run as the report does: a symlink in it is one line, not a traceback."""
    run = tmp_path / "main"
    cell = filters.innomatrix_plan(KNOBS, FACTS, CNF_DIR, str(run))["cells"][0]
    (run / cell["path"]).mkdir(parents=True)
    (run / cell["path"] / "trial.json").symlink_to("/etc/hostname")
    with pytest.raises(AnsibleFilterError) as exc:
        filters.innomatrix_plan(KNOBS, FACTS, CNF_DIR, str(run))
    assert "symlink" in exc.value.message and cell["path"] in exc.value.message
    assert "\n" not in exc.value.message and exc.value.__suppress_context__ is True


def test_innomatrix_plan_turns_a_bad_cnf_dir_into_a_filter_error(tmp_path: Path) -> None:
    with pytest.raises(AnsibleFilterError) as exc:
        filters.innomatrix_plan(KNOBS, FACTS, str(tmp_path), str(tmp_path / "main"))
    assert exc.value.message == f"{tmp_path / 'base.cnf'} is missing: configuration A must live there"


def test_innomatrix_plan_lines() -> None:
    the_plan = plan.expand(KNOBS, real_context(), {})
    lines = filters.innomatrix_plan_lines(the_plan)
    assert lines == plan.describe(the_plan)
    assert lines[-1] == "8 cells: 8 to run, 0 already finished"
    assert lines[0] == f"db1/ext4/oltp/A/bp-64M/t4/r1  key={the_plan['cells'][0]['key']}  todo"


# ---------------------------------------------------------------- check_knobs


def test_innomatrix_check_knobs_gives_the_spec() -> None:
    checked = filters.innomatrix_check_knobs(KNOBS, str(16 * G), CNF_DIR)
    spec = plan.normalise(KNOBS, real_context())
    assert checked == {"error": None, "spec": spec, "device_bytes_needed": plan.space_needed(spec)}
    assert checked["spec"]["bp_sizes"] == [64 << 20, 256 << 20]


@pytest.mark.parametrize(
    ("changes", "memory", "error"),
    [
        ({"variants": "A,Q"}, 16 * G, "variants: unknown Q; accepted: A, B, C, D"),
        ({"bp_sizes": "2G"}, G,
         "bp_sizes: 2G is not smaller than the memory of this host (1.0G); choose a smaller buffer pool"),
        ({"threads": "x"}, 16 * G, "threads='x' is not a number; give a whole number above zero"),
        ({"mount_options": {"btrfs": ""}}, 16 * G, "mount_options: unknown filesystem btrfs; accepted: ext4, xfs"),
    ],
)
def test_innomatrix_check_knobs_names_a_bad_knob(changes: dict, memory: int, error: str) -> None:
    assert filters.innomatrix_check_knobs({**KNOBS, **changes}, memory, CNF_DIR) == {
        "error": error, "spec": None, "device_bytes_needed": None}


def test_innomatrix_check_knobs_names_a_bad_cnf_dir(tmp_path: Path) -> None:
    (tmp_path / "base.cnf").write_text("[mysqld]\n")
    (tmp_path / "A.cnf").write_text("[mysqld]\n")
    checked = filters.innomatrix_check_knobs(KNOBS, 16 * G, str(tmp_path))
    assert checked == {
        "error": f"{tmp_path / 'A.cnf'} clashes with variant A, which is base.cnf alone: rename it",
        "spec": None,
        "device_bytes_needed": None,
    }


def test_innomatrix_check_knobs_accepts_the_documented_defaults() -> None:
    yaml = pytest.importorskip("yaml")
    knobs = yaml.safe_load((ROOT / "inventory" / "group_vars" / "all.yml").read_text())
    checked = filters.innomatrix_check_knobs(knobs, 64 * G, CNF_DIR)
    assert checked["error"] is None
    assert checked["spec"]["variants"] == ["A", "B", "C", "D"]
    assert checked["spec"]["bp_sizes"] == [4 * G]
    demo = {**knobs, **yaml.safe_load((ROOT / "inventory" / "demo.yml").read_text())}
    assert filters.innomatrix_check_knobs(demo, 2 * G, CNF_DIR)["error"] is None
    demo_auto = {**demo, **yaml.safe_load((ROOT / "inventory" / "demo-auto.yml").read_text())}
    checked = filters.innomatrix_check_knobs(demo_auto, 2 * G, CNF_DIR)
    assert checked["error"] is None
    assert checked["spec"]["auto"] == {"warmup": True, "duration": True, "duration_min": 20, "precision": 0.05}


# ---------------------------------------------------------------- my.cnf


@pytest.fixture(scope="module")
def server() -> dict[str, Any]:
    known = sorted(mycnf.known_options(HELP_FIXTURE.read_text()))
    return {"flavor": "mariadb", "version": MARIADB_VERSION, "known_options": known}


def installed(server: dict[str, Any]) -> dict[str, Any]:
    """The facts once the server is installed: the plan then renders every cell's my.cnf."""
    return {**FACTS, "server_version": server["version"], "server_known_options": server["known_options"]}


def test_the_plan_hands_each_cell_its_my_cnf(server: dict[str, Any], tmp_path: Path) -> None:
    knobs = {**KNOBS, "mycnf_overrides": {"innodb_io_capacity": 2000}}
    the_plan = filters.innomatrix_plan(knobs, installed(server), CNF_DIR, str(tmp_path))
    cell = next(c for c in the_plan["cells"] if c["variant"] == "C" and c["bp_size"] == "64M")
    text, notes = mycnf.render_variant(CNF_DIR, "C", "mariadb", MARIADB_VERSION, set(server["known_options"]),
                                       {"innodb_io_capacity": "2000", "innodb_buffer_pool_size": "64M"})
    assert cell["mycnf"] == {"text": text, "notes": notes}
    lines = text.splitlines()
    assert lines[0] == "# innomatrix variant C for mariadb 10.11.19 (10.11.19-MariaDB-0+deb12u1)"
    assert "[mysqld]" in lines
    assert "innodb_buffer_pool_size = 64M" in lines
    assert "innodb_io_capacity = 2000" in lines
    assert "serverid=101 → server_id=101 (the post's typo: the variable is server_id)" in notes
    # The load: variant A with the sweep's largest buffer pool, for every pass.
    load, _ = mycnf.render_variant(CNF_DIR, "A", "mariadb", MARIADB_VERSION, set(server["known_options"]),
                                   {"innodb_io_capacity": "2000", "innodb_buffer_pool_size": "256M"})
    assert {p["datasets"][0]["mycnf"] for p in the_plan["passes"]} == {load}


def test_a_plan_before_the_server_is_installed_renders_nothing(tmp_path: Path) -> None:
    the_plan = filters.innomatrix_plan(KNOBS, FACTS, CNF_DIR, str(tmp_path))
    assert not any("mycnf" in cell or "mycnf" in cell["dataset"] for cell in the_plan["cells"])


def test_a_variant_the_server_cannot_run_stops_the_plan(server: dict[str, Any], tmp_path: Path) -> None:
    with pytest.raises(AnsibleFilterError) as exc:
        filters.innomatrix_plan({**KNOBS, "mycnf_overrides": {"no_such_option": "1"}}, installed(server), CNF_DIR,
                                str(tmp_path))
    assert exc.value.message == (
        "variant A asks for options mariadb 10.11.19 does not know: no_such_option "
        "(fix my.cnf.d/base.cnf or add a translation rule)"
    )


def test_innomatrix_known_options_is_sorted() -> None:
    text = HELP_FIXTURE.read_text()
    known = filters.innomatrix_known_options(text)
    assert known == sorted(mycnf.known_options(text))
    assert "innodb_buffer_pool_size" in known
    assert len(known) == len(set(known))


# ---------------------------------------------------------------- outcomes, commit, progress


def test_innomatrix_outcomes_is_the_package_outcomes(tmp_path: Path) -> None:
    the_plan = plan.expand({**KNOBS, "filesystems": "ext4", "variants": "A", "bp_sizes": "64M"}, real_context(), {})
    assert filters.innomatrix_outcomes(the_plan, str(tmp_path)) == {
        "lines": [f"{'ext4/oltp/A/bp-64M/t4/r1':<40} {'-':>14} {'-':>14}  missing (no trial.json was recorded)"],
        "failed": ["ext4/oltp/A/bp-64M/t4/r1: no trial.json was recorded"],
    }


def test_innomatrix_unfinished_names_each_gone_host_and_its_cells(tmp_path: Path) -> None:
    the_plan = plan.expand({**KNOBS, "filesystems": "ext4", "variants": "A", "bp_sizes": "64M,128M"}, real_context(), {})
    done = the_plan["cells"][0]
    (tmp_path / done["path"]).mkdir(parents=True)
    (tmp_path / done["path"] / "trial.json").write_text(json.dumps({"key": done["key"], "status": "ok"}))
    facts = {"plan": the_plan, "setup": {"run_dir": str(tmp_path)}}
    assert filters.innomatrix_unfinished([["db1", facts], ["db2", None]]) == [
        "db1 did not finish: 1 cell(s) without a finished trial: ext4/oltp/A/bp-128M/t4/r1: no trial.json was recorded",
        "db2 did not finish: it stopped before it had a plan",
    ]
    assert filters.innomatrix_unfinished([]) == []
    # A host searching for capacities: its searches not run to their end are named too.
    searching = plan.expand({**KNOBS, "filesystems": "ext4", "variants": "A", "bp_sizes": "64M", "rates": "auto"},
                            real_context(), {})
    [line] = filters.innomatrix_unfinished([["db1", {"plan": searching, "setup": {"run_dir": str(tmp_path / "s")}}]])
    assert line == ("db1 did not finish: 1 cell(s) without a finished trial: ext4/oltp/A/bp-64M/t4/r1: no trial.json "
                    "was recorded; 1 capacity search(es) with steps left: db1/ext4/oltp/A/bp-64M/t4: "
                    "no capacity search yet: its closed-loop trials are not all ok"), line


def test_a_gone_host_whose_trials_cannot_be_read_is_its_own_line(tmp_path: Path) -> None:
    """One host's damaged tree (a link in it, where its capacity searches are read) says so on its
    line; the other gone hosts' lines are still printed."""
    searching = plan.expand({**KNOBS, "filesystems": "ext4", "variants": "A", "bp_sizes": "64M", "rates": "auto"},
                            real_context(), {})
    damaged = tmp_path / "damaged" / Path(searching["cells"][0]["path"]).parent
    damaged.mkdir(parents=True)
    (damaged / "r9").symlink_to("/etc")
    lines = filters.innomatrix_unfinished([["db1", {"plan": searching, "setup": {"run_dir": str(tmp_path / "damaged")}}],
                                           ["db2", None]])
    assert len(lines) == 2, lines
    assert lines[0].startswith("db1 did not finish, and what it finished cannot be read: ") and "(to /etc)" in lines[0]
    assert lines[1] == "db2 did not finish: it stopped before it had a plan"


def test_innomatrix_commit_outside_a_checkout(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("no git")
    assert filters.innomatrix_commit(str(tmp_path)) == "unknown"


def test_innomatrix_commit_of_the_suite() -> None:
    if shutil.which("git") is None:
        pytest.skip("no git")
    inside = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, check=False)
    if inside.returncode != 0:
        pytest.skip("not a git checkout")
    commit = filters.innomatrix_commit(str(ROOT))
    assert re.fullmatch(r"[0-9a-f]{7,40}(-dirty)?", commit), commit
    assert commit.startswith(inside.stdout.strip()[:7])


CELL = {"host": "db1", "index": 2, "total": 5, "id": "ext4/oltp/A/bp-64M/t4/r1", "warmup": 10, "duration": 30}


@pytest.mark.parametrize(
    ("elapsed", "finished_cells", "expected"),
    [
        # Measured so far: 90 s for one cell; this one and three more remain.
        (90, 1, "db1 cell 2/5 ext4/oltp/A/bp-64M/t4/r1 | elapsed 1m30s | ETA 6m00s"),
        # Nothing measured yet: warmup + duration + 5 s per cell.
        (7, 0, "db1 cell 2/5 ext4/oltp/A/bp-64M/t4/r1 | elapsed 0m07s | ETA 3m00s"),
        (3725, 2, "db1 cell 2/5 ext4/oltp/A/bp-64M/t4/r1 | elapsed 1h02m05s | ETA 2h04m10s"),
    ],
)
def test_innomatrix_progress(monkeypatch: pytest.MonkeyPatch, elapsed: int, finished_cells: int,
                             expected: str) -> None:
    monkeypatch.setattr(filters.time, "time", lambda: 1_000_000.0)
    assert filters.innomatrix_progress(CELL, 1_000_000.0 - elapsed, finished_cells) == expected
    # started_epoch arrives as text from a Jinja template
    assert filters.innomatrix_progress(CELL, str(1_000_000.0 - elapsed), finished_cells) == expected


def test_innomatrix_progress_of_the_last_cell(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(filters.time, "time", lambda: 500.0)
    last = {**CELL, "index": 5}
    assert filters.innomatrix_progress(last, 440.0, 4) == "db1 cell 5/5 ext4/oltp/A/bp-64M/t4/r1 | elapsed 1m00s | ETA 0m15s"


@pytest.mark.parametrize(("seconds", "text"), [(0, "0m00s"), (59.9, "0m59s"), (60, "1m00s"), (3599, "59m59s"),
                                                (3600, "1h00m00s"), (90061, "25h01m01s")])
def test_clock(seconds: float, text: str) -> None:
    assert filters._clock(seconds) == text


def test_a_rerun_with_every_cell_finished_still_names_each_load(server: dict[str, Any], tmp_path: Path) -> None:
    """The plan keeps finished cells; their datasets still say how they were loaded (the
    Molecule rerun loads the first cell's dataset from the plan)."""
    first = filters.innomatrix_plan(KNOBS, installed(server), CNF_DIR, str(tmp_path))
    for cell in first["cells"]:
        (tmp_path / cell["path"]).mkdir(parents=True)
        (tmp_path / cell["path"] / "trial.json").write_text(json.dumps({"key": cell["key"], "status": "ok"}))
    again = filters.innomatrix_plan(KNOBS, installed(server), CNF_DIR, str(tmp_path))
    assert again["counts"]["todo"] == 0
    assert all(cell["dataset"]["mycnf"] == first["cells"][0]["dataset"]["mycnf"] for cell in again["cells"])


def test_the_knobs_are_picked_from_a_hosts_variables_by_the_plans_list() -> None:
    host_vars = {**{name: knob.default for name, knob in PLAN_KNOBS.items()}, "bp_sizes": "32M,64M", "device": "/dev/x",
                 "ansible_connection": "local"}
    assert filters.innomatrix_knobs(host_vars) == {name: host_vars[name] for name in PLAN_KNOBS}
    del host_vars["warmup"], host_vars["oltp_tables"]
    with pytest.raises(AnsibleFilterError, match=r"^knob\(s\) warmup, oltp_tables not set: inventory/group_vars/all.yml"):
        filters.innomatrix_knobs(host_vars)


def test_a_capacity_search_reopens_a_pass_and_steps_from_the_closed_loop_trial_in_the_tree(tmp_path: Path) -> None:
    from synth import Trial, steady, write_trial

    knobs = {**KNOBS, "filesystems": "xfs", "variants": "A", "bp_sizes": "64M", "threads": [2], "rates": "auto"}
    facts = {**FACTS, "host": "localhost"}
    run = tmp_path / "main"
    [cell] = filters.innomatrix_plan(knobs, facts, CNF_DIR, str(run))["cells"]
    directory = write_trial(run, Trial(tps=steady(20, 400.0), threads=2))
    assert directory == run / cell["path"]
    record = json.loads((directory / "trial.json").read_text())
    (directory / "trial.json").write_text(json.dumps({**record, "key": cell["key"], "summary": {"throughput_median": 400.0}}))
    # Its closed-loop cell done, the search still has every step to run: a pass for it alone.
    the_plan = filters.innomatrix_plan(knobs, facts, CNF_DIR, str(run))
    [the_pass] = the_plan["passes"]
    assert the_pass["cells"] == [] and [found["configuration"] for found in the_pass["searches"]] == [
        "localhost/xfs/oltp/A/bp-64M/t2"]
    step = filters.innomatrix_search_step(the_pass["searches"], the_plan, str(run), [])
    assert [(c["id"], c["index"], c["total"]) for c in step["cells"]] == [("xfs/oltp/A/bp-64M/t2-rate200/r1", 1, 1)]
    assert step["lines"] == ["localhost/xfs/oltp/A/bp-64M/t2: closed-loop 400.0 tps; next 200/s"]
    assert filters.innomatrix_outcomes(the_plan, str(run))["lines"][-1] == (
        "capacity search localhost/xfs/oltp/A/bp-64M/t2: closed-loop 400.0 tps; stopped: "
        "200/s failed (localhost/xfs/oltp/A/bp-64M/t2-rate200/r1: not recorded)")
    # Its vmstat.log cut: the closed-loop trial is done to the plan and unusable to the search, which
    # stops and says why (no pass planned for nothing, every rerun).
    vmstat = directory / "vmstat.log"
    vmstat.write_text(vmstat.read_text().rstrip("\n"))
    the_plan = filters.innomatrix_plan(knobs, facts, CNF_DIR, str(run))
    assert the_plan["passes"] == []
    [failed] = filters.innomatrix_outcomes(the_plan, str(run))["failed"]
    assert failed.startswith(f"localhost/xfs/oltp/A/bp-64M/t2: {vmstat}:") and "cut" in failed
