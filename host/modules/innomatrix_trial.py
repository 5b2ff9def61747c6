#!/usr/bin/python
"""Run one matrix cell on the benchmark host, start to finish, in one module call."""

from __future__ import annotations

DOCUMENTATION = r"""
module: innomatrix_trial
short_description: Run one innomatrix cell (restore, my.cnf, server, collectors, sysbench, stop)
description:
  - Restores the pristine dataset, writes the cell's my.cnf, starts the server, starts vmstat,
    iostat and mysqladmin beside sysbench, stops everything in a finally block and publishes the
    cell directory atomically with its trial.json.
  - A cell with warmup=auto or duration=auto (cell.auto) watches the driver's intervals as they are
    printed, starts measuring at the first steady window and stops the driver once the median is
    known to the precision asked (innomatrix_host.steady), and records what it decided and why.
  - A fileio cell runs sysbench fileio on the prepared test files with vmstat and iostat beside
    it and no server, and records the device's SMART or NVMe health before and after.
  - Every cell reads each disk's own write and read counters (NVMe SMART data units; each member
    of a layout, else the device) just before its driver starts and just after it ends, into
    trial.json's C(flash); a disk without them is recorded with the reason, never as 0.
  - One module call instead of a task per step keeps Ansible's fixed cost per cell near 1 s.
  - A cell that fails is recorded with status failed and its reasons; the module itself only
    fails when it cannot write the results.
  - What makes a finished trial's figures doubtful (stalls, settings not applied, native AIO off,
    a buffer pool that holds the dataset, CPU-bound) is written to trial.json as C(flags), each
    with its evidence, by the rules the report applies (innomatrix_host.flags), and returned as
    C(flagged) for the end-of-play line.
options:
  plan: {description: "The host's plan.json (written by the preflight role once the server is installed): every cell with its my.cnf, times and paths", type: path, required: true}
  cell: {description: The id of the cell in I(plan) to run, type: str, required: true}
  run_dir: {description: The run's results directory on this host, type: path, required: true}
  server: {description: Server commands, flavor and version (mysql_server role facts), type: dict, required: true}
  instance: {description: Socket, port and bind address of the benchmarked instance, type: dict, required: true}
  mountpoint: {description: Where the device under test is mounted, type: path, required: true}
  device: {description: "The device under test as mounted: path as named, the kernel name (for iostat), identity, filesystem, mount and queue settings", type: dict, required: true}
  dataset: {description: What the dataset role returned (key, pristine, load_s), type: dict, required: true}
  driver_version: {description: sysbench --version, type: str, required: true}
  tpcc_tool: {description: "tpcc-mysql as the tpcc role built it (bin_dir, commit); tpcc cells only", type: dict, default: {}}
author: innomatrix
"""

import datetime as dt
import json
import shlex
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import NamedTuple

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.innomatrix_host import tpcc_tool as tpcc
from ansible.module_utils.innomatrix_host import flags
from ansible.module_utils.innomatrix_host.collected import (
    Window, cache_samples, cache_source, cache_summary, smart_devices, watched_devices)
from ansible.module_utils.innomatrix_host.collected import text as text_of
from ansible.module_utils.innomatrix_host.cache_status import CacheStatusError, parse_status
from ansible.module_utils.innomatrix_host.layouts import (BCACHE, LAYOUTS, VG, LayoutError, bcache_csets_on,
                                                          bcache_recache_commands, cache_start, recache_commands,
                                                          volume_types)
from ansible.module_utils.innomatrix_host.measured import first_measured_t
from ansible.module_utils.innomatrix_host import tpcc as tpcc_parse
from ansible.module_utils.innomatrix_host.mounts import mark_started_processes
from ansible.module_utils.innomatrix_host.runtime import (
    CacheReadError, Collectors, Server, TrialError, batch_text, bench_credentials, cache_status_line, drop_caches, end,
    fileio_argv, iso, publish, restore, run, server_tmpdir, spawn, staging, sysbench_argv, tail, utcnow, write_cnf,
    write_driver_config, write_json,
)
from ansible.module_utils.innomatrix_host.smart import (data_units_span, kernel_span, kernel_written_bytes,
                                                      snapshot, snapshot_delta)
from ansible.module_utils.innomatrix_host.steady import Rules, Watcher
from ansible.module_utils.innomatrix_host.sysbench import (
    INCOMPLETE_LOG, QUEUE_FULL, measured_stalls, parse_interval, parse_output, rate_figures, summarize,
    summarize_fileio,
)

# What trial.json says about the cell: a server cell has a variant and a buffer pool, a fileio
# cell a sub-test and a block size (see innomatrix.layout), and null for a variant and buffer pool.
CELL_FIELDS = ("host", "layout", "members", "filesystem", "workload", "variant", "bp_size", "subtest", "block_size", "threads", "rate", "repeat")
# A driver still running this long after its --time has hung; it is stopped and the cell fails.
DRIVER_GRACE_S = 120
# What stops a trial from outside: Ctrl-C (the whole process group), Ansible's SIGTERM, a hang-up.
INTERRUPTS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


# The options as Ansible checks them; DOCUMENTATION describes the same (tests/unit/test_module_docs.py).
ARGUMENT_SPEC = {
    "plan": {"type": "path", "required": True},
    "cell": {"type": "str", "required": True},
    "run_dir": {"type": "path", "required": True},
    "server": {"type": "dict", "required": True},
    "instance": {"type": "dict", "required": True},
    "mountpoint": {"type": "path", "required": True},
    "device": {"type": "dict", "required": True},
    "dataset": {"type": "dict", "required": True},
    "driver_version": {"type": "str", "required": True},
    "tpcc_tool": {"type": "dict", "default": {}},
}


def timed(cell: dict) -> list[str]:
    return [f"--time={cell['warmup'] + cell['duration']}", f"--report-interval={cell['report_interval']}", "--events=0"]


def driver_extra(cell: dict) -> list[str]:
    oltp = cell["oltp"]
    return [f"--rand-type={oltp['rand_type']}", f"--percentile={oltp['percentile']}", *at_a_rate(cell), *timed(cell),
            "run"]


def at_a_rate(cell: dict) -> list[str]:
    """A fixed-rate cell's arrivals (sysbench --rate), and its latency histogram, which a checkpoint
    at the end of the warmup resets so that it holds the measured events only (sysbench.parse_output
    reads the final one)."""
    rate = cell.get("rate") or 0
    if not rate:
        return []
    checkpoint = [f"--report-checkpoints={cell['warmup']}"] if cell["warmup"] else []
    return [f"--rate={rate}", "--histogram=on", *checkpoint]


def queue_filled(log: Path) -> bool:
    """sysbench stopped a fixed-rate run because its event queue was full: a saturated trial, not a
    failed one (it exits 1 after that FATAL line)."""
    try:
        return any(QUEUE_FULL in line for line in log.read_text(errors="replace").splitlines() if "FATAL" in line)
    except OSError:
        return False


# The sync sweep wants p95 and p99: sysbench prints one percentile per interval, so the run asks
# for p95 (the summary's latency, as for OLTP) and p99 comes from the histogram it prints at the end.
FILEIO_EXTRA = ["--percentile=95", "--histogram=on"]


def wait_for_driver(driver: subprocess.Popen, cell: dict, tmp: Path, trial: dict) -> None:
    """Wait for sysbench to end on its own; a driver that hangs, is killed or fails fails the cell."""
    name = Path(driver.args[0]).name
    try:
        code = driver.wait(timeout=cell["warmup"] + cell["duration"] + DRIVER_GRACE_S)
    except subprocess.TimeoutExpired:
        end(driver, first=signal.SIGINT)
        raise TrialError(f"{name} did not finish in time and was stopped")
    trial["times"]["ended"] = iso(utcnow())
    if code < 0:
        raise TrialError(f"{name} was killed by signal {-code}: {tail(tmp / 'driver.log', 2)}")
    if code != 0 and not (cell.get("rate") and queue_filled(tmp / "driver.log")):
        raise TrialError(f"{name} exited {code}: {tail(tmp / 'driver.log', 2)}")


# How often an adaptive trial looks for new interval lines in the driver's log.
FOLLOW_POLL_S = 0.2


def start_clock(cell: dict, trial: dict) -> None:
    started = utcnow()
    trial["times"]["started"] = iso(started)
    trial["times"]["measure_start"] = iso(started + dt.timedelta(seconds=cell["warmup"]))


def follow_driver(driver: subprocess.Popen, cell: dict, tmp: Path, trial: dict) -> None:
    """An adaptive trial (warmup=auto, duration=auto): read the intervals as the driver prints them,
    start measuring and stop the driver when the rules say so (steady.Watcher, the
    rules the report applies). The driver is stopped right after an interval line, so every line
    it printed is whole and kept; it prints no end-of-run summary (sysbench) or final tables
    (tpcc_start) then, which trial.json explains (durations.adaptive.stopped_driver). A driver that
    ends or dies on its own is judged as in a fixed trial."""
    watcher = Watcher(Rules.of_cell(cell))
    log, offset, pending = tmp / "driver.log", 0, b""
    deadline = time.monotonic() + cell["warmup"] + cell["duration"] + DRIVER_GRACE_S
    stopped = False
    while not stopped:
        running = driver.poll() is None
        with open(log, "rb") as out:
            out.seek(offset)
            chunk = out.read()
        offset += len(chunk)
        *lines, pending = (pending + chunk).split(b"\n")
        for line in lines:
            rate = throughput_of(line.decode(errors="replace"), cell)
            if rate is not None and watcher.feed(*rate):
                stopped = running
                break
        if stopped or not running:
            break
        if time.monotonic() > deadline:
            end(driver, first=signal.SIGINT)
            raise TrialError(f"{Path(driver.args[0]).name} did not finish in time and was stopped")
        time.sleep(FOLLOW_POLL_S)
    try:
        if stopped:
            end(driver, first=signal.SIGINT)
            trial["times"]["ended"] = iso(utcnow())
        else:
            wait_for_driver(driver, cell, tmp, trial)
    finally:
        record_decisions(watcher, stopped, trial)


def throughput_of(line: str, cell: dict) -> tuple[float, float] | None:
    """(t, throughput) of one interval line of the cell's driver, None for any other line. A line
    that cannot be read is passed over here: the whole log is read afterwards and says why."""
    try:
        if cell["workload"] == "tpcc":
            found = tpcc_parse.interval_rate(line)
            return (float(found[0]), found[1] * 60 / cell["report_interval"]) if found else None
        interval = parse_interval(line)
    except ValueError:
        return None
    return (float(interval["t"]), float(interval["tps"])) if interval and interval["kind"] == "oltp" else None


class DiskCounters:
    """Each disk's own counters of what the host sent it (NVMe data units), read just before the
    driver starts and just after it ends: trial.json's `flash`, the span's times and, per disk,
    smart.data_units_span (bytes written and read, or why the disk cannot say) and, read at the same
    moments, what the kernel sent it (smart.kernel_span: the check on the disk's count). The report
    divides them by the transactions of the driver's whole run, warmup included: SMART counts in
    512 000 byte units and is read in a fraction of a second, not at the warmup's end."""

    def __init__(self, device: dict):
        self.disks = [disk for disk in smart_devices(device) if disk]
        self.before: dict[str, tuple[dict, int | None]] = {}
        self.started = ""

    def read_before(self) -> None:
        self.started = iso(utcnow())
        self.before = {disk: (snapshot(disk), kernel_written_bytes(disk)) for disk in self.disks}

    def _span(self, disk: str) -> dict:
        smart_before, sent_before = self.before[disk]
        smart_after, sent_after = snapshot(disk), kernel_written_bytes(disk)
        return {**data_units_span(disk, smart_before, smart_after), **kernel_span(sent_before, sent_after)}

    def record(self, trial: dict) -> None:
        if not self.before:
            return  # the driver never started
        try:
            spans = [self._span(disk) for disk in self.disks]
        except Exception as exc:  # it runs in measure()'s finally: the server must still be stopped
            spans = [{"device": disk, "unsupported": f"SMART not read: {' '.join(str(exc).split())[:200]}"}
                     for disk in self.disks]
        trial["flash"] = {"from": self.started, "to": iso(utcnow()), "disks": spans}


# The longest LVM may take to detach a writeback cache: it writes every dirty block back first
# (gigabytes at an HDD's 10 MB/s), as long as a restore's copy may take.
RECACHE_TIMEOUT_S = 7200


class InterruptsHeld:
    """The signals that unwind a trial (INTERRUPTS), held while LVM changes the devices under the
    mounted filesystem: subprocess.run kills its command when interrupted, and an lvconvert killed
    while it holds a device suspended leaves the filesystem's I/O hanging. A signal that came
    meanwhile is raised again once the commands are done."""

    def __enter__(self) -> "InterruptsHeld":
        self.caught: list[int] = []
        self.before = {sig: signal.signal(sig, lambda signum, frame: self.caught.append(signum)) for sig in INTERRUPTS}
        return self

    def __exit__(self, *exc) -> None:
        for sig, handler in self.before.items():
            signal.signal(sig, handler)
        if self.caught:
            signal.raise_signal(self.caught[0])


def remaking_commands(name: str, members: list[str]) -> list[list[str]]:
    """What makes the cache of layout `name` anew from where it stands now: a bcache's cache set,
    or LVM's cache volume."""
    if LAYOUTS[name]["kind"] == BCACHE:
        return bcache_recache_commands(name, members, bcache_csets_on(members[1]))
    volumes = volume_types(run(["lvs", "--noheadings", "-o", "lv_name,segtype", VG], timeout=60).stdout)
    return recache_commands(name, members, volumes)


def start_cache(device: dict, trial: dict) -> None:
    """A flash cache as its layout says a trial begins on it (layouts.cache_start): warm, as the
    load, the trials before and this trial's restore left it, or cold, made anew and empty now,
    before anything of the trial runs. trial.json's `cache_start`: which, the seconds the remaking
    took, and the cache's counters as the trial found it (a cold cache holds no block), or why
    they were not read."""
    layout = device.get("layout") or {}
    state, source = cache_start(layout.get("name", "")), cache_source(device)
    if state is None:
        return
    if not source:
        raise TrialError(f"layout {layout.get('name')} has no cache in its read-back ({device.get('path')}): "
                         "remove the layout and run again")
    found: dict = {"state": state, "made_s": None}
    trial["cache_start"] = found
    if state == "cold":
        began = time.monotonic()
        try:
            with InterruptsHeld():
                for argv in remaking_commands(layout["name"], layout["members_given"]):
                    run(argv, timeout=RECACHE_TIMEOUT_S)
        except (TrialError, LayoutError) as exc:
            raise TrialError(f"the cold cache was not made anew: {exc}") from None
        found["made_s"] = round(time.monotonic() - began, 3)
    try:
        found["counters"] = parse_status(cache_status_line(source, timeout=30, runner=run))
    except (TrialError, CacheReadError, CacheStatusError) as exc:
        found["counters_unread"] = str(exc)


def record_decisions(watcher: Watcher, stopped: bool, trial: dict) -> None:
    """Where the trial started measuring and why, and where it stopped and why, in trial.json."""
    decided = watcher.conclude(stopped)
    started = dt.datetime.fromisoformat(trial["times"]["started"].replace("Z", "+00:00"))
    trial["times"]["measure_start"] = iso(started + dt.timedelta(seconds=decided["measure_start_s"]))
    trial["durations"].update(warmup_s=decided["measure_start_s"],
                              measured_s=decided["end_s"] - decided["measure_start_s"], adaptive=decided)


def measure_fileio(p: dict, tmp: Path, trial: dict) -> None:
    """sysbench fileio on the files the dataset step prepared; no server, no restore.

    seqwr truncates and rewrites its files, as far as its time allows: it writes new files in a
    scratch directory of its own, removed afterwards, so the prepared ones stay whole for every
    other cell.
    """
    cell, device = p["cell"], p["device"]["path"]
    scratch = Path(p["mountpoint"]) / "fileio-seqwr" if cell["fileio"]["mode"] == "seqwr" else None
    workdir = scratch or Path(p["dataset"]["pristine"])
    trial["fileio_dir"] = str(workdir)
    trial["hygiene"] = {"page_cache": drop_caches()}
    start_cache(p["device"], trial)
    trial["smart"] = {"before": snapshot(device)}
    disks = DiskCounters(p["device"])
    collectors = Collectors(tmp, cell["report_interval"], watched_devices(p["device"]), None, cache_source(p["device"]))
    driver = None
    try:
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)
            scratch.mkdir()
        collectors.start()
        argv = fileio_argv(cell["fileio"], cell["threads"], [*FILEIO_EXTRA, *timed(cell), "run"])
        trial["driver"]["command"] = shlex.join(argv)
        disks.read_before()  # before the clock: SMART takes a fraction of a second to answer
        start_clock(cell, trial)
        driver = spawn(argv, tmp / "driver.log", cwd=workdir)
        wait_for_driver(driver, cell, tmp, trial)
    finally:
        end(driver, first=signal.SIGINT)
        disks.record(trial)
        collectors.stop()
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)
        trial["times"].setdefault("ended", iso(utcnow()))
        trial["smart"]["after"] = snapshot(device)
        trial["smart"]["delta"] = snapshot_delta(trial["smart"]["before"], trial["smart"]["after"])


def driver_argv(p: dict, server: Server) -> list[str]:
    """The driver's command for a server cell: sysbench OLTP as the benchmark user, or tpcc_start.

    tpcc_start connects as root over the socket (socket authentication): it takes a password
    only on its command line and echoes it, so the account it uses has none. Its ramp-up (-r)
    prints nothing, so there is none: the warmup is run and recorded, then discarded by time.
    """
    cell, instance = p["cell"], p["instance"]
    if cell["workload"] == "tpcc":
        conn = tpcc.Connection(socket=instance["socket"], user="root")
        return tpcc.start_argv(Path(p["tpcc_tool"]["bin_dir"]), conn, cell["tpcc"]["warehouses"], cell["threads"],
                               0, cell["warmup"] + cell["duration"], cell["report_interval"])
    credentials = bench_credentials(instance)
    server.grant_bench_user(credentials)
    driver_config = Path(instance["socket"] + ".sysbench")
    write_driver_config(driver_config, instance["socket"], credentials)
    return sysbench_argv(cell["oltp"], driver_config, cell["threads"], driver_extra(cell))


def measure(p: dict, tmp: Path, trial: dict) -> None:
    """Everything between restore and stop; fills `trial` as it goes, raises TrialError on failure."""
    cell, instance = p["cell"], p["instance"]
    datadir = Path(p["mountpoint"]) / "data"
    error_log = Path(instance["socket"] + ".err")
    error_log.unlink(missing_ok=True)
    cnf = tmp / "my.cnf"
    write_cnf(cnf, cell["mycnf"]["text"], instance, datadir, error_log, server_tmpdir(p["mountpoint"], instance))

    restore_s, method = restore(Path(p["dataset"]["pristine"]), datadir)
    trial["dataset"].update(restore_s=round(restore_s, 3), restored_by=method)
    trial["hygiene"] = {"page_cache": drop_caches()}
    start_cache(p["device"], trial)

    server = Server(p["server"], cnf, instance["socket"], tmp / "mysqld.out")
    disks = DiskCounters(p["device"])
    collectors = Collectors(tmp, cell["report_interval"], watched_devices(p["device"]), server, cache_source(p["device"]))
    driver = None
    try:
        server.start()
        argv = driver_argv(p, server)
        (tmp / "variables.txt").write_text(batch_text(server.query("SHOW GLOBAL VARIABLES")))
        try:
            (tmp / "flush_points.txt").write_text(server.flush_points())
        except TrialError as exc:  # a server without these counters still runs its trial; the report says none
            trial["flush_points_unread"] = str(exc)
        try:
            server.count_flushes_by_type()
        except TrialError as exc:  # the sampler finds none on and reads none; the report says why
            trial["flush_types_unread"] = f"not switched on: {exc}"
        collectors.start()
        trial["driver"]["command"] = shlex.join(argv)
        disks.read_before()  # before the clock: SMART takes a fraction of a second to answer
        start_clock(cell, trial)
        driver = spawn(argv, tmp / "driver.log")
        try:
            (follow_driver if cell.get("auto") else wait_for_driver)(driver, cell, tmp, trial)
        except TrialError:
            # A driver that failed because the server died under it: the death is the reason.
            if server.alive():
                raise
        if not server.alive():
            raise TrialError(f"server died during the trial: {tail(error_log, 3)}")
    finally:
        end(driver, first=signal.SIGINT)
        disks.record(trial)
        collectors.stop()
        if collectors.status and collectors.status.metrics_unread:
            # Its lines stop where its reads did: the report draws none of them for this trial.
            trial.setdefault("flush_types_unread", f"not read after a failed read: {collectors.status.metrics_unread}")
        trial["times"].setdefault("ended", iso(utcnow()))
        server.stop()
        if cell["workload"] == "tpcc":
            redact_driver_log(tmp / "driver.log")
        if error_log.exists():
            shutil.copy(error_log, tmp / "mysqld.err")


def redact_driver_log(log: Path) -> None:
    """tpcc_start echoes its options, the password among them (empty here: it logs in over the
    socket): the stored log never shows what it echoed."""
    try:
        log.write_text(tpcc_parse.redact(log.read_text(errors="replace"), ""))
    except FileNotFoundError:
        pass
    except OSError:
        log.unlink(missing_ok=True)  # never kept as printed; raising here would hide the first error


class Measured(NamedTuple):
    """What the flags need of the driver's log: its measured intervals' stalls and their times, its
    last interval."""

    stalled: list[bool]
    last_t: float | None
    times: list[float]


def measured_times(intervals: list[dict], warmup_s: float, interval_s: float) -> list[float]:
    """The times of the intervals the summaries measure (those wholly after the warmup)."""
    first = first_measured_t(warmup_s, interval_s)
    return [interval["t"] for interval in intervals if interval["t"] >= first]


def summarise_tpcc(text: str, cell: dict, trial: dict) -> Measured | None:
    """tpmC and New-Order latency from tpcc_start's output; a failed transaction or a [NG]
    transaction mix makes the trial invalid, a [NG] response time is a recorded driver flag."""
    warmup_s = trial["durations"]["warmup_s"]
    try:
        parsed = tpcc_parse.parse_output(text, stopped=stopped_by_suite(trial))
        summary = tpcc_parse.summarize(parsed, warmup_s, cell["report_interval"])
    except ValueError as exc:
        trial["status"] = "failed"
        trial["reasons"].append(f"driver.log cannot be read: {exc}")
        return None
    trial["summary"] = {name: value for name, value in summary.items() if name not in ("status", "reasons", "flags")}
    trial["driver_flags"] = summary["flags"]
    if trial["status"] == "ok" and summary["status"] == "invalid":
        trial["status"] = "invalid"
    if summary["status"] == "invalid":
        trial["reasons"].extend(summary["reasons"])
    return Measured(tpcc_parse.measured_stalls(parsed, warmup_s, cell["report_interval"]),
                    max((interval["t"] for interval in parsed["intervals"]), default=None),
                    measured_times(parsed["intervals"], warmup_s, cell["report_interval"]))


def stopped_by_suite(trial: dict) -> bool:
    """The trial stopped its driver once it had measured enough (duration=auto): the log then
    ends at an interval line, without the driver's end-of-run summary."""
    return bool((trial["durations"].get("adaptive") or {}).get("stopped_driver"))


def summarise_driver(tmp: Path, cell: dict, trial: dict) -> Measured | None:
    log = tmp / "driver.log"
    if not log.exists():
        return None
    if cell["workload"] == "tpcc":
        return summarise_tpcc(log.read_text(errors="replace"), cell, trial)
    try:
        parsed = parse_output(log.read_text(errors="replace"))
        summary = summarize(parsed["intervals"], trial["durations"]["warmup_s"], cell["report_interval"])
        if cell["workload"] == "fileio":
            trial["fileio"] = summarize_fileio(parsed["intervals"], parsed["summary"], cell["warmup"],
                                               cell["report_interval"], cell["fileio"]["block_bytes"],
                                               parsed["histogram"])
    except ValueError as exc:
        trial["status"] = "failed"
        trial["reasons"].append(f"driver.log cannot be read: {exc}")
        return None
    trial["summary"] = summary
    trial["driver_summary"] = parsed["summary"]
    if cell.get("rate"):
        trial["rate"] = rate_figures(parsed["intervals"], parsed["queue"], parsed["fatal"], cell["rate"],
                                     trial["durations"]["warmup_s"], cell["report_interval"])
        # The measured events' latencies (the checkpoint at the warmup reset them): the report merges
        # the histograms of a configuration's repeats; percentiles are never averaged.
        trial["latency_histogram"] = parsed["histogram"]
    if parsed.get("fatal"):
        trial["reasons"].extend(parsed["fatal"][:3])
    if trial["status"] == "ok" and not summary.get("intervals_measured"):
        trial["status"] = "failed"
        trial["reasons"].append("no interval was measured after the warmup")
    # A fixed-rate run that sysbench stopped on its full queue ends without a summary, and says why.
    if trial["status"] == "ok" and not parsed["complete"] and not stopped_by_suite(trial) \
            and not (cell.get("rate") and any(QUEUE_FULL in line for line in parsed["fatal"])):
        trial["status"] = "invalid"
        trial["reasons"].append(INCOMPLETE_LOG)
    if trial["status"] == "ok" and parsed["breaks"]:
        trial["status"] = "invalid"
        trial["reasons"].append(f"driver.log intervals out of step: {'; '.join(parsed['breaks'][:3])}")
    return Measured(measured_stalls(parsed["intervals"], trial["durations"]["warmup_s"], cell["report_interval"]),
                    max((interval["t"] for interval in parsed["intervals"]), default=None),
                    measured_times(parsed["intervals"], trial["durations"]["warmup_s"], cell["report_interval"]))


def summarise_cache(tmp: Path, measured: Measured | None, trial: dict) -> None:
    """trial.json's `cache` on a flash cache: its counters when measuring began and at the end, the
    hit ratios and dirty data over the measured window (collected.cache_summary), or why none
    (`unread`)."""
    if not (tmp / "cache.log").exists():
        return
    started = trial["times"].get("started")
    if measured is None or not started:
        trial["cache"] = None
        return
    window = Window(dt.datetime.fromisoformat(started.replace("Z", "+00:00")), trial["durations"]["warmup_s"],
                    trial["durations"]["report_interval_s"], measured.last_t)
    samples, failed = cache_samples(text_of(tmp / "cache.log"))
    # A cache that failed or was made anew mid-trial has no figures of the trial; the report marks it.
    trial["cache"] = {"unread": failed} if failed else cache_summary(window, samples)


def _interrupt(signum, frame):
    # Only the first signal unwinds: Ansible follows a Ctrl-C with SIGTERM, and a second
    # KeyboardInterrupt raised inside measure()'s finally would cut its cleanup short and leave
    # the server running.
    for sig in INTERRUPTS:
        signal.signal(sig, signal.SIG_IGN)
    raise KeyboardInterrupt(f"signal {signum}")


def planned_cell(plan_path: str, cell_id: str) -> dict:
    """The cell as the plan recorded it: the module runs what plan.json says, nothing handed on."""
    try:
        cells = json.loads(Path(plan_path).read_text())["cells"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise TrialError(f"cannot read the plan {plan_path}: {exc}") from None
    found = [cell for cell in cells if cell.get("id") == cell_id]
    if len(found) != 1:
        raise TrialError(f"the plan {plan_path} holds no cell {cell_id!r}: plan again (rerun the playbook)")
    return found[0]


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    mark_started_processes("trial")
    if module.check_mode:  # --check writes no plan.json: nothing to read, nothing run
        module.exit_json(changed=True, msg=f"would run {module.params['cell']}")
    try:
        cell = planned_cell(module.params["plan"], module.params["cell"])
    except TrialError as exc:
        module.fail_json(msg=str(exc))
    p = {**module.params, "cell": cell}

    raw_device = cell["workload"] == "fileio"
    final = Path(p["run_dir"]) / cell["path"]
    tmp = staging(final)
    trial = {
        "schema": 1,
        "key": cell["key"],
        "status": "ok",
        "reasons": [],
        "cell": {name: cell[name] for name in CELL_FIELDS if name in cell},
        "cell_id": cell["id"],
        "times": {},
        "durations": {"warmup_s": cell["warmup"], "measured_s": cell["duration"], "report_interval_s": cell["report_interval"]},
        # A tree without git history is known by its content, as in the plan's keys.
        "driver": ({"name": "tpcc-mysql", "version": p["tpcc_tool"].get("commit") or p["tpcc_tool"].get("source_sha256"),
                    "command": None}
                   if cell["workload"] == "tpcc" else {"name": "sysbench", "version": p["driver_version"], "command": None}),
        "server": None if raw_device else {"flavor": p["server"]["flavor"], "version": p["server"]["version"]},
        "dataset": {"key": p["dataset"]["key"], "load_s": p["dataset"]["load_s"], "scale": cell["dataset"]["scale"]},
        "device": p["device"],
        "mycnf_notes": cell["mycnf"]["notes"],
        "summary": {"throughput_median": None,
                    "throughput_unit": {"fileio": "MiB/s", "tpcc": "tpmC"}.get(cell["workload"], "tps"),
                    "latency_p95_ms_median": None, "intervals_measured": 0},
    }
    # Ctrl-C reaches this process with the rest of ansible-playbook's process group, and Ansible
    # may follow with SIGTERM: both unwind through measure()'s finally, which stops the driver,
    # the collectors and the server before anything else happens.
    for sig in INTERRUPTS:
        signal.signal(sig, _interrupt)
    wall = time.monotonic()
    try:
        (measure_fileio if raw_device else measure)(p, tmp, trial)
    except TrialError as exc:
        trial["status"] = "failed"
        trial["reasons"].insert(0, str(exc))
    except KeyboardInterrupt:
        # Cleanup already ran in measure()'s finally; leave no trial.json that looks finished.
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    measured = summarise_driver(tmp, cell, trial)
    summarise_cache(tmp, measured, trial)
    try:
        trial["flags"] = flags.of_trial(tmp, trial, measured.stalled if measured else None,
                                        measured.last_t if measured else None, measured.times if measured else None)
    except (ValueError, TypeError, KeyError, AttributeError, OSError) as exc:
        # The trial is measured and kept whatever its flags; the report finds them from its logs.
        trial["flags"], trial["flags_unread"] = [], f"the host could not flag this trial: {exc}"
    trial["wall_s"] = round(time.monotonic() - wall, 3)
    write_json(tmp / "trial.json", trial)
    kept = publish(tmp, final)
    module.exit_json(changed=True, trial={k: trial[k] for k in ("status", "reasons", "summary", "dataset", "wall_s", "flags")},
                     flagged=flags.labels(trial["flags"]), path=str(final), kept_aside=kept)


if __name__ == "__main__":
    main()
