"""innomatrix_host.flags: what makes a trial's figures doubtful, one definition for the host
(trial.json's flags, the end-of-play line) and the report (its flags column)."""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path

import pytest

from innomatrix import frame, stats
from innomatrix.parse import ParseError
from innomatrix_host import collected, flags
from innomatrix_host.sysbench import episodes, measured_stalls, parse_output, summarize

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "report"
DEMO = FIXTURES / "real-demo"
# The reasons the host can know as well as the report, by how their texts begin.
HOST_KINDS = ("stalls:", "buffer pool holds the dataset", "CPU-bound", "native AIO off", "server ran without")


def test_stalls_count_intervals_episodes_and_the_longest() -> None:
    found = flags.stalls([False, True, True, False, True], 2.0)
    assert found == {"flag": "stalls", "label": "stalls", "text": "stalls: 3 intervals in 2 episodes (longest 4 s)",
                     "evidence": {"intervals": 3, "episodes": 2, "longest_s": 4.0}}
    assert flags.stalls([False, False], 1.0) is None
    assert episodes([True, False, True, True]) == [(0, 1), (2, 2)]


def test_resources_flag_a_buffer_pool_that_holds_the_dataset_and_a_cpu_bound_trial() -> None:
    found = flags.resources("oltp", 0.4, 3.0, 1.0)
    assert [flag["flag"] for flag in found] == ["buffer_pool_holds_dataset", "cpu_bound"]
    assert found[0]["text"] == "buffer pool holds the dataset: device reads 0.4/s"
    assert found[1]["evidence"] == {"idle_pct": 3.0, "iowait_pct": 1.0, "below": flags.CPU_FLOOR_PCT}
    assert flags.labels(found) == "flagged: buffer pool holds the dataset, CPU-bound"
    # The device is the bottleneck (reads, iowait), or a figure is unknown: no flag.
    assert flags.resources("oltp", 250.0, 3.0, 30.0) == []
    assert flags.resources("oltp", None, math.nan, 1.0) == []
    # A raw-device cell has no buffer pool; a busy CPU is still measuring the device.
    assert flags.resources("fileio", 0.0, 0.0, 0.0) == []
    assert flags.labels([]) == ""


def test_server_flags_name_what_the_server_ran_otherwise() -> None:
    asked = {"innodb_flush_method": "O_DIRECT", "innodb_buffer_pool_size": "64M"}
    running = {"innodb_flush_method": "fsync", "innodb_buffer_pool_size": str(64 << 20), "innodb_use_native_aio": "OFF"}
    found = flags.server(asked, running)
    assert [flag["label"] for flag in found] == ["native AIO off", "settings not applied"]
    assert found[1]["evidence"] == {"differences": ["innodb_flush_method: asked O_DIRECT, ran fsync"]}
    assert flags.server(asked, {**running, "innodb_flush_method": "O_DIRECT", "innodb_use_native_aio": "ON"}) == []


def _oltp_trials(run: Path) -> list[Path]:
    return sorted(path.parent for path in run.rglob("trial.json") if "/oltp/" in path.as_posix())


def _host_flags(directory: Path) -> list[dict]:
    """The flags as the trial module computes them at the end of the trial, from its directory."""
    trial = json.loads((directory / "trial.json").read_text())
    intervals = parse_output((directory / "driver.log").read_text())["intervals"]
    durations = trial["durations"]
    stalled = measured_stalls(intervals, durations["warmup_s"], durations["report_interval_s"])
    return flags.of_trial(directory, trial, stalled, max(interval["t"] for interval in intervals))


def _window(directory: Path) -> collected.Window:
    trial = json.loads((directory / "trial.json").read_text())
    intervals = parse_output((directory / "driver.log").read_text())["intervals"]
    started = collected.dt.datetime.fromisoformat(trial["times"]["started"].replace("Z", "+00:00"))
    return collected.Window(started, trial["durations"]["warmup_s"], trial["durations"]["report_interval_s"],
                            max(interval["t"] for interval in intervals))


@pytest.mark.parametrize("run", [DEMO, FIXTURES / "real-tiny"], ids=["real-demo", "real-tiny"])
def test_the_host_reads_the_collectors_means_the_report_reads(run: Path) -> None:
    cells = stats.cells(frame.load(run)).set_index("trial")
    trials = _oltp_trials(run)
    assert trials
    for directory in trials:
        row = cells.loc[directory.relative_to(run).as_posix()]
        window = _window(directory)
        vmstat = window.means(collected.vmstat_samples((directory / "vmstat.log").read_text()))
        iostat = window.means(collected.iostat_samples((directory / "iostat.json").read_text(), "loop0"))
        assert vmstat["id"] == pytest.approx(row["cpu_id"], rel=1e-9)
        assert vmstat["wa"] == pytest.approx(row["cpu_wa"], rel=1e-9)
        assert iostat["r/s"] == pytest.approx(row["dev_r_s"], rel=1e-9)


def _rewrite_vmstat(path: Path, idle: str, iowait: str) -> None:
    lines = path.read_text().splitlines()
    columns = lines[1].split()
    at_id, at_wa = columns.index("id"), columns.index("wa")
    for number in range(2, len(lines)):
        fields = lines[number].split()
        fields[at_id], fields[at_wa] = idle, iowait
        lines[number] = " ".join(fields)
    path.write_text("\n".join(lines) + "\n")


def _rewrite_iostat_reads(path: Path) -> None:
    document = json.loads(path.read_text())
    for entry in document["sysstat"]["hosts"][0]["statistics"]:
        for disk in entry["disk"]:
            disk["r/s"] = 0.0
    path.write_text(json.dumps(document))


def _rewrite_variables(path: Path, changes: dict[str, str]) -> None:
    lines = []
    for line in path.read_text().splitlines():
        name, _, _ = line.partition("\t")
        lines.append(f"{name}\t{changes[name]}" if name in changes else line)
    path.write_text("\n".join(lines) + "\n")


def test_the_host_raises_the_flags_the_report_raises(tmp_path: Path) -> None:
    """Every flag the host can know, raised on real trials (doctored where the demo ran clean): the
    host's flags and the report's are the same texts, trial by trial."""
    run = tmp_path / "run"
    shutil.copytree(DEMO, run)
    first, second = _oltp_trials(run)
    _rewrite_variables(first / "variables.txt", {"innodb_use_native_aio": "OFF", "innodb_flush_method": "fsync"})
    _rewrite_vmstat(first / "vmstat.log", idle="1", iowait="2")
    _rewrite_iostat_reads(second / "iostat.json")
    cells = stats.cells(frame.load(run)).set_index("trial")
    raised = set()
    for directory in [first, second]:
        host = [flag["text"] for flag in _host_flags(directory)]
        report = [reason for reason in cells.loc[directory.relative_to(run).as_posix(), "flags"].split("; ")
                  if reason.startswith(HOST_KINDS)]
        # The settings flag's own text holds "; " between its settings: join both sides the same way.
        assert "; ".join(host) == "; ".join(report), directory
        raised.update(flag["flag"] for flag in _host_flags(directory))
    assert raised >= {"native_aio_off", "settings_not_applied", "cpu_bound", "buffer_pool_holds_dataset"}
    assert re.search(r"CPU-bound: idle 1 %, iowait 2 %", cells.loc[first.relative_to(run).as_posix(), "flags"])


def test_the_stalls_the_trial_flags_are_the_ones_its_summary_counts() -> None:
    text = (DEMO / "localhost/xfs/oltp/A/bp-16M/t4/r1/driver.log").read_text()
    lines = text.splitlines()
    # Two intervals of nothing in the measured part (after 5 s of warmup).
    for number, line in enumerate(lines):
        if line.startswith(("[ 8s ]", "[ 9s ]")):
            lines[number] = re.sub(r"tps: [\d.]+", "tps: 0.00", line)
    intervals = parse_output("\n".join(lines) + "\n")["intervals"]
    stalled = measured_stalls(intervals, 5, 1)
    summary = summarize(intervals, 5, 1)
    assert len(stalled) == summary["intervals_measured"] and sum(stalled) == summary["stall_intervals"] == 2
    assert flags.stalls(stalled, 1)["evidence"] == {"intervals": 2, "episodes": 1, "longest_s": 2}


def test_a_hostile_trial_neither_breaks_the_host_nor_the_report(tmp_path: Path) -> None:
    """400 digits for a size in variables.txt and my.cnf, an iostat disk that is not an object:
    no flag from what cannot be read and no traceback on the host; the report flags what it can
    read, and refuses the damaged iostat.json in one line naming it."""
    run = tmp_path / "run"
    shutil.copytree(DEMO, run)
    first, _ = _oltp_trials(run)
    _rewrite_variables(first / "variables.txt", {"innodb_log_file_size": "9" * 400})
    cnf = first / "my.cnf"
    cnf.write_text(re.sub(r"innodb_buffer_pool_size\s*=.*", "innodb_buffer_pool_size = " + "9" * 400, cnf.read_text()))
    document = json.loads((first / "iostat.json").read_text())
    document["sysstat"]["hosts"][0]["statistics"][3]["disk"].insert(0, "loop0")
    (first / "iostat.json").write_text(json.dumps(document))
    assert collected.iostat_samples((first / "iostat.json").read_text(), "loop0")
    host = _host_flags(first)
    assert [flag["flag"] for flag in host] == ["settings_not_applied"]
    assert "innodb_buffer_pool_size: asked " + "9" * 400 in host[0]["text"]
    with pytest.raises(ParseError, match=rf"^{first}/iostat.json:\d+: the disk list of the entry of "
                                         r".* holds other than disks"):
        frame.load(run)
    (first / "iostat.json").write_text((DEMO / first.relative_to(run) / "iostat.json").read_text())
    cells = stats.cells(frame.load(run)).set_index("trial")
    assert host[0]["text"] in cells.loc[first.relative_to(run).as_posix(), "flags"]
