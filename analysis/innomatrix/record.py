"""A trial's `trial.json`, read as untrusted: each field the report uses, checked for kind and bound,
and agreeing with the world around it.

- **Kind and bound**: seconds are numbers within a month, the report interval within 1–3600 s,
  times are ISO 8601 and in order (started ≤ ended, started ≤ measure_start: a trial whose driver
  died in its warmup ends before it would have measured), a count is an integer. The
  warmup is where measuring started (`times.measure_start − times.started`), and the driver's
  `--time` is the warmup plus what was measured.
- **Its directory**: the cell it names (host, filesystem, workload, variant and buffer pool or
  sub-test and block size, threads, repeat) is the cell its path names. A tree copied by hand
  (`r1` copied to `r2`, `repeat` left at 1) is refused, not counted twice.
- **Its driver**: the command it recorded, and the driver's own banner (frame.py checks that
  part once the log is read), ran the threads, the interval and the percentile it says.

Any disagreement is a `RecordError` naming the file and both sides, never a silent choice: which
side is right cannot be known from the tree, and a wrong one changes medians without a trace.
"""

from __future__ import annotations

import math
import re
import shlex
from pathlib import Path
from typing import Any

import pandas as pd

from innomatrix import layout, tree
from innomatrix.plan import KnobError, parse_size
from innomatrix_host.collected import kernel_name
from innomatrix_host.layouts import CACHE_STARTS, cache_start

NOT_APPLICABLE = layout.NOT_APPLICABLE
STATUSES = ("ok", "failed", "invalid")
MONTH_S = 31 * 86400.0
INTERVAL_S = (1.0, 3600.0)
THREADS = (1, 100_000)
# sysbench --rate: 0 is closed-loop; the most a cell may offer is as absurd as PLAUSIBLE allows tps.
RATES = (0, 10_000_000)
# trial.json keeps times to the millisecond; the warmup is a float of seconds.
_TIME_SLACK_S = 0.002
_REPORT_INTERVAL = re.compile(r"--report-interval[= ](\d+(?:\.\d+)?)")


class RecordError(tree.TreeError):
    """A trial.json that cannot be used: a field of the wrong kind or out of bounds, or one that
    contradicts its directory or its driver; the message names the file."""


class Fields:
    """Typed access to a JSON object by dotted name; a field of the wrong kind is a RecordError."""

    def __init__(self, record: dict[str, Any], path: Path):
        self.record, self.path = record, path

    def fail(self, message: str) -> RecordError:
        return RecordError(f"{self.path}: {message}")

    def raw(self, dotted: str) -> Any:
        value: Any = self.record
        parts = dotted.split(".")
        for at, part in enumerate(parts):
            if value is None:
                return None
            if isinstance(value, list) and part.isdigit():  # "noise_floors.0.sd_log"
                value = value[int(part)] if int(part) < len(value) else None
                continue
            if not isinstance(value, dict):  # named as far as it was walked: that is what is not an object
                raise self.fail(f"{'.'.join(parts[:at])} is {_show(value)}, not an object")
            value = value.get(part)
        return value

    def text(self, dotted: str, default: str | None = None) -> str | None:
        value = self.raw(dotted)
        if value is None:
            return default
        if not isinstance(value, str):
            raise self.fail(f"{dotted} is {_show(value)}, not text")
        return value

    def number(self, dotted: str, low: float, high: float, default: float | None = None) -> float | None:
        value = self.raw(dotted)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(f"{dotted} is {_show(value)}, not a number")
        if not (low <= value <= high):  # NaN cannot come from JSON (tree.loads), but fails here too
            raise self.fail(f"{dotted} is {_show(value)}, outside {low:g}–{high:g}")
        return float(value)

    def integer(self, dotted: str, low: int, high: int) -> int | None:
        value = self.number(dotted, low, high)
        if value is not None and value != int(value):
            raise self.fail(f"{dotted} is {value:g}, not a whole number")
        return None if value is None else int(value)

    def texts(self, dotted: str) -> list[str]:
        value = self.raw(dotted)
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise self.fail(f"{dotted} is {_show(value)}, not a list of text")
        return value

    def time(self, dotted: str) -> pd.Timestamp | None:
        text = self.text(dotted)
        if not text:
            return None
        try:
            stamp = pd.Timestamp(text)
        except ValueError:
            raise self.fail(f"{dotted} {text!r} is not an ISO 8601 time") from None
        if stamp is pd.NaT:
            raise self.fail(f"{dotted} {text!r} is not an ISO 8601 time")
        return stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def meta(record: Any, trial_id: str, path: Path) -> dict[str, Any]:
    """What the frame keeps of one trial.json (one row of `Frame.trials`), once it is checked."""
    if not isinstance(record, dict):
        raise RecordError(f"{path}: not a JSON object")
    where = layout.parse(trial_id)
    if where is None:
        raise RecordError(f"{path}: not in a trial directory of a results tree (see innomatrix.layout)")
    fields = Fields(record, path)
    schema = fields.integer("schema", 0, 1_000_000)
    if schema not in (None, 1):
        raise fields.fail(f"schema {schema} is not one this innomatrix reads (1)")
    cell = _cell(fields, where, trial_id)
    started, measure_start, ended = _times(fields)
    warmup = fields.number("durations.warmup_s", 0, MONTH_S)
    if warmup is None:
        warmup = (measure_start - started).total_seconds() if measure_start is not None else 0.0
    elif measure_start is not None and abs((measure_start - started).total_seconds() - warmup) > _TIME_SLACK_S:
        raise fields.fail(f"durations.warmup_s is {warmup:g} s but times.measure_start is "
                          f"{(measure_start - started).total_seconds():g} s after times.started")
    measured = fields.number("durations.measured_s", 0, MONTH_S)
    command = fields.text("driver.command")
    marks = []
    if measured is None and fields.raw("durations.adaptive") is None:
        # What the trial was to measure is its driver's --time less the warmup; without either,
        # a trial cut short cannot be told from one that ran its course.
        time = command_options(command or "").get("time")
        if time is not None and time >= warmup:
            measured = time - warmup
        else:
            marks.append("trial.json does not say how long the trial was to measure: a short one cannot be told")
    interval = fields.number("durations.report_interval_s", *INTERVAL_S)
    if interval is None and (match := _REPORT_INTERVAL.search(command or "")):
        interval = _within(fields, "--report-interval in driver.command", float(match[1]), *INTERVAL_S)
    status = fields.text("status", "unknown")
    if status not in (*STATUSES, "unknown"):
        raise fields.fail(f"status {status!r} is none of {', '.join(STATUSES)}")
    decided = _adaptive(fields, warmup, measured)
    _agrees_with_command(fields, command, cell, interval, warmup, measured, decided)
    device = kernel_name({"name": fields.text("device.name"), "path": fields.text("device.path")})
    return {
        "trial": trial_id,
        **cell,
        "status": status,
        "reasons": "; ".join(fields.texts("reasons")),
        "key": fields.text("key"),
        "started": started,
        "measure_start": measure_start,
        "ended": ended,
        "warmup_s": float(warmup),
        "measured_asked_s": measured,
        "report_interval_s": interval,
        "driver_version": fields.text("driver.version"),
        "command": command,
        "command_options": command_options(command or ""),
        "server_flavor": fields.text("server.flavor"),
        "server_version": fields.text("server.version"),
        # Why the trial has no flush_points.txt, when its server would not give them.
        "flush_points_unread": fields.text("flush_points_unread", ""),
        # Why its status.log has no flush-type counters, or stops having them part-way.
        "flush_types_unread": fields.text("flush_types_unread", ""),
        "_device": device or None,
        "device_model": device_model(fields),
        "recorded_median": fields.number("summary.throughput_median", 0, 1e15),
        "recorded_pct": fields.number("summary.latency_pct", 0, 100),
        "throughput_unit": None,
        "latency_pct": None,
        "driver_last_t": float("-inf"),
        "driver_total_time_s": None,
        "driver_transactions": None,
        "driver_ignored_errors": None,
        "driver_reconnects": None,
        "driver_kind": None,
        "fatal": "",
        "driver_complete": True,
        "driver_breaks": "",
        "driver_flags": "; ".join(_driver_flags(fields)),
        **_flash(fields),
        **_cache_start(fields, cell["layout"], status, marks),
        "fileio_run_p95_ms": fields.number("fileio.run_latency_p95_ms", 0, 1e7),
        "fileio_run_p99_ms": fields.number("fileio.run_latency_p99_ms", 0, 1e7),
        "iostat_truncated": False,
        "iostat_device": "",
        # A fixed-rate trial that fell behind its arrivals (frame reads it from driver.log).
        "saturated": False,
        "marks": marks,
        **decided,
    }


# The most bytes a disk's counters may say one trial sent it: 1 PB is absurd for a trial, not for a disk.
FLASH_BYTES = (0, 10 ** 15)


def _flash(fields: Fields) -> dict[str, Any]:
    """What the disks' own counters (NVMe data units, innomatrix_host.smart.data_units_span) say the
    trial's driver wrote to them: the bytes summed over the disks that could say, their names, and
    why each other disk could not; beside them what the kernel sent those disks over the same span
    (`sent_bytes`, smart.kernel_span), None unless it is known for every one of them. A trial.json
    from before these were read has none of them."""
    if fields.raw("flash") is None:
        return {"flash_written_bytes": None, "flash_sent_bytes": None, "flash_disks": "", "flash_unread": ""}
    disks = fields.raw("flash.disks")
    if not isinstance(disks, list):
        raise fields.fail(f"flash.disks is {_show(disks)}, not a list")
    span = fields.time("flash.from"), fields.time("flash.to")
    if None in span or span[0] > span[1]:
        raise fields.fail(f"flash.from and flash.to are {_show(fields.raw('flash.from'))} and "
                          f"{_show(fields.raw('flash.to'))}, not a span of time in order")
    written, sent, counted, unread, serials = 0, 0, [], [], {}
    for at in range(len(disks)):
        name = " ".join((fields.text(f"flash.disks.{at}.device") or "?").split())[:80]
        reason = fields.text(f"flash.disks.{at}.unsupported")
        if reason is not None:
            reason = " ".join(reason.split())[:200]
            # smartctl's reasons mostly name the device already
            unread.append(reason if reason.startswith(name) else f"{name}: {reason}")
            continue
        count = fields.integer(f"flash.disks.{at}.written_bytes", *FLASH_BYTES)
        if count is None:
            raise fields.fail(f"flash.disks.{at} has neither written_bytes nor a reason it has none")
        # The namespaces of one controller, below, each add what the kernel sent them: the
        # controller's one count is of them all.
        disk_sent = fields.integer(f"flash.disks.{at}.sent_bytes", *FLASH_BYTES)
        sent = None if sent is None or disk_sent is None else sent + disk_sent
        serial = fields.text(f"flash.disks.{at}.serial")
        if serial and serial in serials:
            # Namespaces of one controller: its SMART log counts them all, once.
            unread.append(f"{name}: counted with {serials[serial]} (one controller, serial {serial[:40]})")
            continue
        serials[serial or name] = name
        written += count
        counted.append(name)
    return {"flash_written_bytes": float(written) if counted else None,
            "flash_sent_bytes": float(sent) if counted and sent is not None else None,
            "flash_disks": ", ".join(counted), "flash_unread": "; ".join(unread)}


# The most blocks a cache may say it holds: 2^40 of dm-cache's smallest, 32 KiB, are 32 PiB of flash.
CACHE_BLOCKS = (0, 2 ** 40)


def _cache_start(fields: Fields, layout_name: str, status: str, marks: list[str]) -> dict[str, Any]:
    """A flash cache as the trial found it (the host's start_cache): warm or cold, as its layout
    says it must be, and how many of its blocks held data; none where the trial ran on no cache
    (or was recorded before the start was). The blocks are None where the host could not read
    them. A trial on a cold layout that ran but does not say its cache was made anew is marked:
    nothing shows its cache was empty."""
    asked = cache_start(layout_name)
    if fields.raw("cache_start") is None:
        if asked == "cold" and status == "ok":
            marks.append(f"on {layout_name} but trial.json does not say its cache was made anew (cache_start)")
        return {"cache_start": "", "cache_blocks_at_start": None}
    state = fields.text("cache_start.state")
    if state not in CACHE_STARTS:
        raise fields.fail(f"cache_start.state is {_show(state)}, none of {', '.join(CACHE_STARTS)}")
    if state != asked:
        raise fields.fail(f"cache_start.state is {state} but its layout {layout_name} starts "
                          f"{asked or 'with no cache'}")
    made = fields.number("cache_start.made_s", 0, MONTH_S)
    if (made is None) != (state == "warm"):
        raise fields.fail(f"cache_start.made_s is {_show(made)}: a cold start says how long the remaking took, "
                          "a warm one made nothing")
    used = None
    if fields.raw("cache_start.counters") is not None:
        used = fields.integer("cache_start.counters.used_blocks", *CACHE_BLOCKS)
        total = fields.integer("cache_start.counters.total_blocks", 1, CACHE_BLOCKS[1])
        if used is None or total is None or used > total:
            raise fields.fail(f"cache_start.counters say {_show(used)} of {_show(total)} blocks used, "
                              "not a cache's")
    return {"cache_start": state, "cache_blocks_at_start": used}


def device_model(fields: Fields) -> str:
    """What kind of device the trial ran on, as like hosts of a fleet share it: the kernel's model
    (SMART's whole name where it lengthens the kernel's; each member's, for a layout, as the kernel
    read it back), "loop device" for a loop file; ""
    where the record cannot say (a disk the kernel names no model of, a member without one, a
    trial.json from before models were recorded). Whitespace runs made one space, at most
    MODEL_CHARS characters: a table cell, not a document."""
    members = fields.raw("device.layout.read_back.members")
    if members is not None:
        if not isinstance(members, list):
            raise fields.fail(f"device.layout.read_back.members is {_show(members)}, not a list")
        models = [_model_text(fields.text(f"device.layout.read_back.members.{at}.model")) for at in range(len(members))]
        return " + ".join(sorted(models)) if models and all(models) else ""
    if fields.raw("device.layout") is not None:
        return ""  # a layout whose members were not read back: nothing to be alike by
    model = _model_text(fields.text("device.model"))
    if model:
        # A SATA disk's kernel model is the first 16 characters of its name: two models of one
        # series read alike there. SMART's name, read at the trial's start, is whole; taken where
        # it is the kernel's name, lengthened (another name would be another disk, or a misread).
        whole = _model_text(fields.text("smart.before.wear.model"))
        return whole if whole.startswith(model) else model
    # Loop files are alike whatever disk holds them (that disk is not recorded): README says so.
    return "loop device" if (fields.text("device.identity") or "").startswith("loop:") else ""


MODEL_CHARS = 80


def _model_text(text: str | None) -> str:
    return " ".join((text or "").split())[:MODEL_CHARS]


def _driver_flags(fields: Fields) -> list[str]:
    """The driver's own judgements (tpcc-mysql's): `driver_flags`; in a trial.json from before the
    host flagged trials, `flags` held them as text. The host's flags (objects in `flags`) are not
    read back: the report finds them again from the logs."""
    if fields.raw("driver_flags") is not None:
        return fields.texts("driver_flags")
    recorded = fields.raw("flags")
    if isinstance(recorded, list) and all(isinstance(item, dict) for item in recorded):
        return []
    return fields.texts("flags")


def _within(fields: Fields, what: str, value: float, low: float, high: float) -> float:
    if not low <= value <= high:
        raise fields.fail(f"{what} is {value:g}, outside {low:g}–{high:g}")
    return value


# A cell's dimensions as trial.json names them; the path is the truth the tree is grouped by.
_TEXT_DIMENSIONS = ("host", "layout", "filesystem", "workload", "variant", "bp_size", "subtest", "block_size")


def _cell(fields: Fields, where: dict[str, Any], trial_id: str) -> dict[str, Any]:
    """The cell's dimensions, from the path, once trial.json's `cell` is seen to say the same.

    Trees written before fileio had its own fields kept a fileio cell's sub-test in `variant`:
    for a fileio path, `variant` is read as the sub-test.
    """
    fileio = where["workload"] == layout.FILEIO
    said: dict[str, Any] = {name: fields.text(f"cell.{name}") for name in _TEXT_DIMENSIONS}
    said.update(threads=fields.integer("cell.threads", *THREADS), repeat=fields.integer("cell.repeat", 1, 1_000_000),
                members=fields.integer("cell.members", 1, 9999), rate=fields.integer("cell.rate", 0, RATES[1]))
    if fileio and said["subtest"] is None and said["variant"] not in (None, NOT_APPLICABLE):
        said["subtest"], said["variant"] = said["variant"], None
    differ = [f"{name} {value!r} (its directory says {where[name]!r})" for name, value in said.items()
              if value is not None and value != where[name]]
    # A trial from before layouts names none: it ran on a plain device, wherever it was moved to.
    if where["layout"] != layout.PLAIN and said["layout"] is None:
        differ.append(f"no layout (its directory says {where['layout']!r} over {where['members']} members)")
    if differ:
        raise fields.fail(f"its cell does not match the directory it is in ({trial_id}): {'; '.join(differ)}; "
                          "a copied or moved trial is refused rather than counted as another cell")
    cell = dict(where)
    if not 1 <= cell["threads"] <= THREADS[1]:
        raise fields.fail(f"t{cell['threads']}: {cell['threads']} threads is outside {THREADS[0]}–{THREADS[1]}")
    cell["bp_bytes"] = _bytes(cell["bp_size"])
    cell["block_bytes"] = _bytes(cell["block_size"])
    return cell


def _times(fields: Fields) -> tuple[pd.Timestamp, pd.Timestamp | None, pd.Timestamp | None]:
    started = fields.time("times.started")
    if started is None:
        raise fields.fail("no times.started: the intervals cannot be placed on a clock")
    measure_start, ended = fields.time("times.measure_start"), fields.time("times.ended")
    if ended is not None and not (started <= ended <= started + pd.Timedelta(seconds=MONTH_S)):
        raise fields.fail(f"times.ended {ended.isoformat()} is not within a month after times.started "
                          f"{started.isoformat()}")
    # A trial whose driver died in its warmup ended before it would have started measuring.
    if measure_start is not None and not (started <= measure_start <= started + pd.Timedelta(seconds=MONTH_S)):
        raise fields.fail(f"times.measure_start {measure_start.isoformat()} is not within a month after "
                          f"times.started {started.isoformat()}")
    return started, measure_start, ended


def _adaptive(fields: Fields, warmup: float, measured: float | None) -> dict[str, Any]:
    """How the trial's warmup and duration were decided: fixed, or by the trial (warmup=auto:
    steady / max; duration=auto: precision / max) within the time it was given (planned_s)."""
    if fields.raw("durations.adaptive") is None:
        planned = warmup + measured if measured is not None else float("nan")
        return {"warmup_decided_by": "fixed", "ended_by": "fixed", "planned_s": planned, "adaptive_round_s": None,
                "stopped_driver": False}
    warmup_auto = fields.raw("durations.adaptive.rules.warmup_auto")
    stopped = fields.raw("durations.adaptive.stopped_driver")
    round_s = fields.number("durations.adaptive.round_s", 0, MONTH_S)
    return {
        "warmup_decided_by": fields.text("durations.adaptive.warmup_decided_by") or "?",
        "ended_by": fields.text("durations.adaptive.ended_by") or "?",
        "planned_s": fields.number("durations.adaptive.planned_s", 0, 2 * MONTH_S, float("nan")),
        "adaptive_round_s": round_s if warmup_auto and round_s else None,
        # The trial stopped its driver once it had measured enough: sysbench prints no summary then.
        "stopped_driver": bool(stopped),
    }


def command_options(command: str) -> dict[str, float]:
    """What the driver's recorded command says of the trial: `threads`, `report_interval`,
    `time` (the whole run, warmup included), `percentile` and `rate` where it gives them. sysbench
    takes `--threads=N`, …; tpcc_start `-c N` (connections), `-i N`, `-r N` + `-l N`."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    found: dict[str, float] = {}
    long_names = {"--threads": "threads", "--report-interval": "report_interval", "--time": "time",
                  "--percentile": "percentile", "--rate": "rate"}
    short_names = {"-c": "threads", "-i": "report_interval", "-l": "time"}
    tpcc = bool(words) and Path(words[0]).name == "tpcc_start"
    for index, word in enumerate(words):
        name, _, value = word.partition("=")
        if name in long_names and value:
            found.setdefault(long_names[name], _float(value))
        elif tpcc and word in short_names and index + 1 < len(words):
            found.setdefault(short_names[word], _float(words[index + 1]))
    return {name: value for name, value in found.items() if value is not None}


def _float(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _agrees_with_command(fields: Fields, command: str | None, cell: dict[str, Any], interval: float | None,
                         warmup: float, measured: float | None, decided: dict[str, Any]) -> None:
    """The recorded command ran the cell's threads, its report interval and its time."""
    if not command:
        return
    options = command_options(command)
    planned = decided["planned_s"] if decided["warmup_decided_by"] != "fixed" else (
        warmup + measured if measured is not None else None)
    told = {"threads": cell["threads"], "report_interval": interval, "time": planned, "rate": cell["rate"]}
    options.setdefault("rate", 0.0)  # a closed-loop sysbench, or tpcc_start, which has no rate
    differ = [f"{name} {options[name]:g} (trial.json: {value:g})" for name, value in told.items()
              if name in options and value is not None and not math.isnan(value) and abs(options[name] - value) > 1e-6]
    if differ:
        raise fields.fail(f"driver.command ran {'; '.join(differ)}: the record and its command disagree")


def _bytes(label: str) -> int:
    """A size label in bytes; -1 where there is none."""
    try:
        return parse_size("size", label)
    except KnobError:
        return -1
