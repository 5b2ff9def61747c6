"""Parse tpcc-mysql's ``tpcc_start`` output into plain dicts, summarise a trial, redact logs.

It runs on benchmark hosts (the trial module's summary) and in the report: see innomatrix_host.
Numbers are read through innomatrix_host.numbers, the measured intervals chosen and stalls judged
as for sysbench (innomatrix_host.measured, sysbench.stall_flags).

The formats are the printf calls of tpcc-mysql's ``src/main.c`` (Percona-Lab/tpcc-mysql):
the ``<Parameters>`` echo, one interval line every ``-i`` seconds after ``MEASURING START.``,
then ``<Raw Results>``, ``<Raw Results2(sum ver.)>``, ``<Constraint Check>`` and ``<TpmC>``.
A failed statement is reported on stderr as ``errno, sqlstate, message`` after a line naming
the transaction (``neword 3:2``); when stdout and stderr share a log these may follow the dots
of ``STOPPING THREADS...`` on the same line, so they are searched for anywhere in a line.

Parsing is strict: a log that stops before ``<TpmC>`` (tpcc_start killed), an interval line
that does not parse, a missing interval or a result table of the wrong shape raises
``ValueError`` naming the line, because a partial parse would pass for a finished trial.
"""

# Postponed annotations keep the ``X | None`` hints importable on hosts whose Python is older
# than the controller's.
from __future__ import annotations

import re
import statistics
from collections.abc import Callable
from typing import Any

from . import sysbench
from .measured import first_measured_t
from .numbers import count, plausible, real

# The transactions in tpcc-mysql's index order ([0]-[4] in the result tables).
TRANSACTIONS = ("new_order", "payment", "order_status", "delivery", "stock_level")
_LABELS = {"New-Order": "new_order", "Payment": "payment", "Order-Status": "order_status",
           "Delivery": "delivery", "Stock-Level": "stock_level"}
# How each transaction names itself on stderr when one of its statements fails.
_STDERR_TAGS = {"neword": "new_order", "payment": "payment", "ordstat": "order_status",
                "delivery": "delivery", "slev": "stock_level"}

# printf("%.3f") of a double; 0/0 prints "nan" or "-nan" and x/0 "inf" (no transaction of a
# type, a measure time shorter than the interval): those become None.
_NUM = r"\d+(?:\.\d+)?"
_MAYBE_NUM = rf"(?:{_NUM}|-?nan|-?inf)"

_INTERVAL_RE = re.compile(
    r"\s*(?P<t>\d+), trx: (?P<new_order_count>\d+),"
    rf" 95%: (?P<p95_ms>{_NUM}), 99%: (?P<p99_ms>{_NUM}), max_rt: (?P<max_rt_ms>{_NUM}),"
    rf" (?P<payment_count>\d+)\|(?P<payment_max_rt_ms>{_NUM}),"
    rf" (?P<order_status_count>\d+)\|(?P<order_status_max_rt_ms>{_NUM}),"
    rf" (?P<delivery_count>\d+)\|(?P<delivery_max_rt_ms>{_NUM}),"
    rf" (?P<stock_level_count>\d+)\|(?P<stock_level_max_rt_ms>{_NUM})\s*"
)
_INTERVAL_PREFIX_RE = re.compile(r"\s*\d+, trx:")

_PARAMETER_RE = re.compile(r"\s*\[(?P<name>[a-zA-Z]+)\]: ?(?P<value>.*)")


def _seconds(value: str) -> int:
    return int(value.split()[0])  # "5 (sec.)"


# tpcc_start's bracketed names -> ours; [pass] is deliberately not read.
_PARAMETERS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "server": ("server", str), "port": ("port", int), "DBname": ("database", str), "user": ("user", str),
    "warehouse": ("warehouses", int), "connection": ("connections", int),
    "rampup": ("rampup_s", _seconds), "measure": ("measure_s", _seconds),
}

# "  [0] sc:159 lt:3412  rt:0  fl:0 avg_rt: 21.5 (5)". The number in brackets is the response
# time limit of the success/late split: main.c means seconds (RTIME_NEWORD 5) but compares it
# with response times in milliseconds, so in effect it is milliseconds.
_RAW_RE = re.compile(
    r"\s*\[(?P<index>\d)\] sc:(?P<success>\d+) lt:(?P<late>\d+)\s+rt:(?P<retry>\d+)\s+fl:(?P<failure>\d+)"
    rf" avg_rt: (?P<avg_rt_ms>{_MAYBE_NUM}) \((?P<rt_limit_ms>\d+)\)\s*"
)
_RAW_BY_THREAD_RE = re.compile(
    r"\s*\[(?P<index>\d)\] sc:(?P<success>\d+)\s+lt:(?P<late>\d+)\s+rt:(?P<retry>\d+)\s+fl:(?P<failure>\d+)\s*"
)
_MEASURED_RE = re.compile(r"\s*in (?P<seconds>\d+) sec\.\s*")
_MIX_GROUP_RE = re.compile(r"\s*\[transaction percentage\]\s*")
_MIX_CHECK_RE = re.compile(
    rf"\s*(?P<label>[A-Za-z-]+): (?P<percent>{_MAYBE_NUM})% \(>=\s*(?P<minimum>{_NUM})%\) \[(?P<verdict>OK|NG)\]( \*)?\s*"
)
# The response-time group's heading carries its threshold: "at least 90% passed".
_RT_GROUP_RE = re.compile(rf"\s*\[response time \(at least (?P<minimum>{_NUM})% passed\)\]\s*")
_RT_CHECK_RE = re.compile(rf"\s*(?P<label>[A-Za-z-]+): (?P<percent>{_MAYBE_NUM})%\s+\[(?P<verdict>OK|NG)\]( \*)?\s*")
_TPMC_RE = re.compile(rf"\s*(?P<tpmc>{_MAYBE_NUM}) TpmC\s*")

_SQL_ERROR_RE = re.compile(r"(?:^|[\s.])(?P<errno>\d+), (?P<sqlstate>[0-9A-Z]{5}), (?P<message>.*)$")
_STDERR_TAG_RE = re.compile(r"(?:^|[\s.])(?P<tag>neword|payment|ordstat|delivery) \d+:\d+\s*$|(?:^|[\s.])(?P<slev>slev)\s*$")
# A connection that could not connect or prepare its statements ran no transactions at all;
# the others are the driver giving up.
_FATAL_RE = re.compile(r"error at (?:thread_main|main)|could not initialize MySQL library|error in sigaction|"
                       r"error at malloc")

# Section headings in the order tpcc_start prints them.
_MEASURING = "MEASURING START."
_HEADINGS = {"<Raw Results>": "raw", "<Raw Results2(sum ver.)>": "raw_by_thread",
             "<Constraint Check> (all must be [OK])": "checks", "<TpmC>": "tpmc"}
_ORDER = ("preamble", "intervals", "raw", "raw_by_thread", "checks", "tpmc")

# The password echoes of tpcc_load and tpcc_start: "option p with value '...'" and "[pass]: ...".
REDACTED = "***"
# A log written through a terminal ends its lines with CRLF: the \r is not part of the value.
_ECHOES = (re.compile(r"^(option p with value ').*(')(?=\r?$)", re.MULTILINE),
           re.compile(r"^(\s*\[pass\]: )[^\r\n]*()(?=\r?$)", re.MULTILINE))


def redact(text: str, secret: str) -> str:
    """The text with the password tpcc-mysql echoes replaced by ``***``.

    The echo lines are redacted whatever they hold (tpcc_load truncates a long password before
    echoing it, so the literal secret might not match there); the secret is also replaced
    wherever else it occurs. An empty secret replaces nothing but the echoes.
    """
    for echo in _ECHOES:
        text = echo.sub(rf"\g<1>{REDACTED}\g<2>", text)
    return text.replace(secret, REDACTED) if secret else text


# The most an interval line's figures can be, with room to spare (a New-Order count is of one
# interval: ten million a second for a minute is far beyond any server): a larger one is a
# damaged log, refused where it is read, as an absurd number is.
PLAUSIBLE_COUNT = 6e8
PLAUSIBLE_MS = 1e7  # under three hours a transaction


def _plausible(name: str, value: float) -> float:
    return value if name == "t" else plausible(name, value, PLAUSIBLE_MS if name.endswith("_ms") else PLAUSIBLE_COUNT)


def _number(text: str) -> float | None:
    """What printf("%.3f") printed: nan and inf (0/0, x/0) are None, a number must be sane."""
    return None if text.lstrip("-") in ("nan", "inf") else real(text)


class _Reader:
    """One pass over the output: the section it is in and what it has found so far."""

    def __init__(self) -> None:
        self.section = "preamble"
        self.check_group: str | None = None
        self.rt_minimum = 0.0
        self.parameters: dict[str, Any] = {}
        self.intervals: list[dict[str, Any]] = []
        self.final: dict[str, dict[str, Any]] = {}
        self.final_by_thread: dict[str, dict[str, int]] = {}
        self.measured_s: int | None = None
        self.checks: list[dict[str, Any]] = []
        self.tpmc: float | None = None
        self.tpmc_seen = False
        self.errors: dict[tuple[int, str, str], dict[str, Any]] = {}
        self.transaction_errors = dict.fromkeys(TRANSACTIONS, 0)
        self.fatal: list[dict[str, Any]] = []
        self.handlers: dict[str, Callable[[str], None]] = {
            "preamble": self.parameter, "intervals": self.interval, "raw": self.raw_row,
            "raw_by_thread": self.raw_by_thread_row, "checks": self.check, "tpmc": self.tpmc_line,
        }

    def read(self, number: int, line: str) -> None:
        if _FATAL_RE.search(line):
            self.fatal.append({"line": number, "text": line.strip()})
        if tag := _STDERR_TAG_RE.search(line):
            self.transaction_errors[_STDERR_TAGS[tag["tag"] or tag["slev"]]] += 1
            return
        if error := _SQL_ERROR_RE.search(line):
            key = (int(error["errno"]), error["sqlstate"], error["message"].strip())
            found = self.errors.setdefault(key, {"errno": key[0], "sqlstate": key[1], "message": key[2],
                                                 "count": 0, "first_line": number})
            found["count"] += 1
            return
        stripped = line.strip()
        if stripped == _MEASURING:
            self.enter("intervals")
        elif stripped in _HEADINGS:
            self.enter(_HEADINGS[stripped])
        elif stripped:
            self.handlers[self.section](line)

    def enter(self, section: str) -> None:
        if _ORDER.index(section) != _ORDER.index(self.section) + 1:
            raise ValueError(f"{section!r} section out of order (after {self.section!r})")
        self.section = section

    def parameter(self, line: str) -> None:
        found = _PARAMETER_RE.fullmatch(line)
        if found and found["name"] in _PARAMETERS:
            key, convert = _PARAMETERS[found["name"]]
            self.parameters[key] = convert(found["value"].strip())

    def interval(self, line: str) -> None:
        found = _INTERVAL_RE.fullmatch(line)
        if found is None:
            # Anything else here (a stray message) is not ours to judge; a broken interval is.
            if _INTERVAL_PREFIX_RE.match(line):
                raise ValueError(f"malformed interval line: {line!r}")
            return
        interval = {name: _plausible(name, count(value) if name == "t" or name.endswith("_count") else real(value))
                    for name, value in found.groupdict().items()}
        step = self.intervals[0]["t"] if self.intervals else interval["t"]
        due = (len(self.intervals) + 1) * step
        if interval["t"] != due:
            raise ValueError(f"interval at {interval['t']} s where {due} s was due: a line is missing")
        self.intervals.append(interval)

    def raw_row(self, line: str) -> None:
        if measured := _MEASURED_RE.fullmatch(line):
            self.measured_s = count(measured["seconds"])
            return
        row = _RAW_RE.fullmatch(line)
        if row is None:
            raise ValueError(f"malformed <Raw Results> row: {line!r}")
        self.final[self.transaction(row, self.final)] = {
            "success": count(row["success"]), "late": count(row["late"]), "retry": count(row["retry"]),
            "failure": count(row["failure"]), "avg_rt_ms": _number(row["avg_rt_ms"]),
            "rt_limit_ms": count(row["rt_limit_ms"]),
        }

    def raw_by_thread_row(self, line: str) -> None:
        row = _RAW_BY_THREAD_RE.fullmatch(line)
        if row is None:
            raise ValueError(f"malformed <Raw Results2(sum ver.)> row: {line!r}")
        self.final_by_thread[self.transaction(row, self.final_by_thread)] = {
            name: count(row[name]) for name in ("success", "late", "retry", "failure")}

    @staticmethod
    def transaction(row: re.Match[str], table: dict[str, Any]) -> str:
        index = int(row["index"])
        if index != len(table) or index >= len(TRANSACTIONS):
            raise ValueError(f"result row [{index}] out of order")
        return TRANSACTIONS[index]

    def check(self, line: str) -> None:
        if _MIX_GROUP_RE.fullmatch(line):
            self.check_group = "transaction_mix"
            return
        if group := _RT_GROUP_RE.fullmatch(line):
            self.check_group, self.rt_minimum = "response_time", float(group["minimum"])
            return
        pattern = {"transaction_mix": _MIX_CHECK_RE, "response_time": _RT_CHECK_RE}.get(self.check_group or "")
        found = pattern.fullmatch(line) if pattern else None
        if found is None or found["label"] not in _LABELS:
            raise ValueError(f"malformed <Constraint Check> line: {line!r}")
        self.checks.append({
            "group": self.check_group,
            "transaction": _LABELS[found["label"]],
            "percent": _number(found["percent"]),
            "minimum_percent": float(found["minimum"]) if self.check_group == "transaction_mix" else self.rt_minimum,
            "ok": found["verdict"] == "OK",
        })

    def tpmc_line(self, line: str) -> None:
        found = _TPMC_RE.fullmatch(line)
        if found is None or self.tpmc_seen:
            raise ValueError(f"unexpected line in <TpmC>: {line!r}")
        self.tpmc, self.tpmc_seen = _number(found["tpmc"]), True

    def finish(self) -> None:
        """Raise if the output stopped early or a table is incomplete."""
        if not self.tpmc_seen:
            raise ValueError(f"the output ends in the {self.section!r} section, before the TpmC figure: "
                             "tpcc_start did not finish")
        if len(self.final) != len(TRANSACTIONS) or len(self.final_by_thread) != len(TRANSACTIONS):
            raise ValueError("a <Raw Results> table does not have one row per transaction")
        if self.measured_s is None:
            raise ValueError("<Raw Results> has no 'in N sec.' line")
        if [check["group"] for check in self.checks] != ["transaction_mix"] * 4 + ["response_time"] * 5:
            raise ValueError("<Constraint Check> does not have 4 transaction-mix and 5 response-time checks")
        covered = len(self.intervals) * self.intervals[0]["t"] if self.intervals else 0
        if covered != self.measured_s:
            raise ValueError(f"the intervals cover {covered} s but the tool measured {self.measured_s} s")


def interval_rate(line: str) -> tuple[int, int] | None:
    """(t, New-Orders) of one interval line as tpcc_start prints it, None for any other line: what
    an adaptive trial watches while the driver runs (the whole log is parsed afterwards)."""
    found = _INTERVAL_RE.fullmatch(line)
    return (count(found["t"]), count(found["new_order_count"])) if found else None


def parse_output(text: str, stopped: bool = False) -> dict[str, Any]:
    """Parse one whole tpcc_start log (stdout and stderr together).

    ``stopped``: the trial stopped tpcc_start itself while it measured (duration=auto), right after
    an interval line; the log then ends among the intervals, without the final tables, which is
    accepted (``final_tables`` is False) instead of being an output that stopped early.

    Returns ``parameters`` (server, port, database, user, warehouses, connections, rampup_s,
    measure_s; never the password); ``interval_s``; ``intervals``, each with ``t`` (seconds
    since MEASURING START), ``new_order_count``, ``p95_ms``, ``p99_ms``, ``max_rt_ms`` (New-Order)
    and ``<type>_count``, ``<type>_max_rt_ms`` for payment, order_status, delivery and
    stock_level; ``measured_s``; ``final`` and ``final_by_thread``, per transaction: success,
    late, retry, failure (``final`` also avg_rt_ms, rt_limit_ms); ``constraint_checks``, each
    with group (``transaction_mix`` or ``response_time``), transaction, percent,
    minimum_percent, ok; ``tpmc`` (the tool's figure); ``errors`` (SQL errors grouped by errno,
    sqlstate and message, with count and first_line); ``transaction_errors`` (failed attempts
    per transaction type, as stderr names them) and ``fatal`` (lines saying a connection or the
    driver gave up, with their line numbers).
    """
    reader = _Reader()
    lines = text.splitlines()
    for number, line in enumerate(lines, start=1):
        try:
            reader.read(number, line)
        except ValueError as exc:
            raise ValueError(f"line {number}: {exc}") from None
    final_tables = not (stopped and reader.section == "intervals")
    try:
        if final_tables:
            reader.finish()
    except ValueError as exc:
        raise ValueError(f"line {len(lines)}: {exc}") from None
    return {
        "final_tables": final_tables,
        "parameters": reader.parameters,
        "interval_s": reader.intervals[0]["t"] if reader.intervals else None,
        "intervals": reader.intervals,
        "measured_s": reader.measured_s,
        "final": reader.final,
        "final_by_thread": reader.final_by_thread,
        "constraint_checks": reader.checks,
        "tpmc": reader.tpmc,
        "errors": list(reader.errors.values()),
        "transaction_errors": reader.transaction_errors,
        "fatal": reader.fatal,
    }


def _tpmc(new_orders: int, seconds: float) -> float | None:
    return new_orders * 60 / seconds if seconds > 0 else None


def _tool_agreement(parsed: dict[str, Any]) -> tuple[int | None, str | None]:
    """New-Orders the tool counted beyond the interval lines, and why they disagree if they do.

    The tool prints (success + late) × 60 ÷ measured seconds as a C float with 3 decimals: that
    rounding, in transactions, is the slack. Beyond it, each connection may finish one New-Order
    between the last interval report and the moment counting stops, so the tool may count up
    to one per connection more than the interval lines, never fewer.
    """
    tool, measured_s = parsed["tpmc"], parsed["measured_s"]
    if tool is None or not measured_s:
        return None, "the tool printed no TpmC figure (nothing was measured)"
    interval_sum = sum(interval["new_order_count"] for interval in parsed["intervals"])
    slack = (0.0005 + abs(tool) * 2**-23) * measured_s / 60
    beyond = tool * measured_s / 60 - interval_sum
    if not -slack <= beyond <= parsed["parameters"].get("connections", 0) + slack:
        return None, (f"tpmC recomputed from the interval lines ({_tpmc(interval_sum, measured_s):.3f}) "
                      f"does not match the tool's ({tool:.3f})")
    return (round(beyond) if beyond > slack else 0), None


def _measured(parsed: dict[str, Any], warmup_s: float, interval_s: float) -> list[dict[str, Any]]:
    first = first_measured_t(warmup_s, interval_s)
    return [interval for interval in parsed["intervals"] if interval["t"] >= first]


def _figures(measured: list[dict[str, Any]], interval_s: float) -> dict[str, Any]:
    return sysbench.trial_figures([interval["new_order_count"] * 60 / interval_s for interval in measured],
                                  [interval["p95_ms"] for interval in measured])


def measured_stalls(parsed: dict[str, Any], warmup_s: float, interval_s: float) -> list[bool]:
    """Which measured intervals are stalls, as summarize counts them (for the trial's flags)."""
    return _figures(_measured(parsed, warmup_s, interval_s), interval_s)["stalls"]


def summarize(parsed: dict[str, Any], warmup_s: float, interval_s: float) -> dict[str, Any]:
    """Summarise one trial from ``parse_output``'s result, ignoring the warmup.

    Times are seconds since MEASURING START (tpcc_start's ramp-up, -r, prints no interval).
    An interval reported at t covers (t - interval_s, t]; it is measured if it starts at or
    after warmup_s. ``tpmc_measured`` is New-Orders × 60 ÷ seconds over the measured
    intervals, ``tpmc_whole_run`` the same over every interval, compared with the tool's
    ``tpmc_tool``. Medians over the measured intervals keep one stall from dominating.

    ``status`` is ``invalid`` with ``reasons`` when a transaction failed, a transaction-mix
    check says [NG], a connection or the driver gave up, the tool's TpmC does not match the
    intervals, or no interval is left after the warmup; otherwise ``ok``. ``flags`` name what
    is recorded but does not invalidate: ``response_time_ng`` (tpcc-mysql runs without think
    time, so its response-time checks usually fail), ``sql_errors`` (retried statements),
    ``new_orders_after_last_interval`` (see ``tpmc_tool_beyond_intervals``) and
    ``stall_intervals``. The median New-Order rate, which intervals are stalls and the p95 median
    outside them are sysbench.trial_figures' (the one definition the report applies too); the p99
    median leaves the same stalls out.
    """
    if interval_s <= 0:
        raise ValueError(f"interval_s must be positive, got {interval_s}")
    if parsed["interval_s"] is not None and parsed["interval_s"] != interval_s:
        raise ValueError(f"the output reports every {parsed['interval_s']} s, not every {interval_s} s")
    measured = _measured(parsed, warmup_s, interval_s)
    measured_new_orders = sum(interval["new_order_count"] for interval in measured)
    whole_run_new_orders = sum(interval["new_order_count"] for interval in parsed["intervals"])
    figures = _figures(measured, interval_s)
    busy = [interval for interval, stall in zip(measured, figures["stalls"]) if not stall]
    stalls = sum(figures["stalls"])

    reasons: list[str] = []
    final_tables = parsed.get("final_tables", True)
    for transaction in TRANSACTIONS if final_tables else ():
        failures = max(parsed["final"][transaction]["failure"], parsed["final_by_thread"][transaction]["failure"])
        if failures:
            reasons.append(f"{failures} {transaction} transaction(s) failed (gave up after retrying)")
    for check in parsed["constraint_checks"]:
        if check["group"] == "transaction_mix" and not check["ok"]:
            reasons.append(f"transaction-mix check [NG]: {check['transaction']} {_percent(check['percent'])} "
                           f"(at least {check['minimum_percent']}% required)")
    if parsed["fatal"]:
        lines = ", ".join(str(fatal["line"]) for fatal in parsed["fatal"])
        reasons.append(f"a connection or the driver gave up: {parsed['fatal'][0]['text']!r} (line(s) {lines})")
    beyond, mismatch = _tool_agreement(parsed) if final_tables else (None, None)
    if mismatch:
        reasons.append(mismatch)
    if not measured:
        reasons.append(f"no interval left after the {warmup_s} s warmup")

    flags = []
    if any(check["group"] == "response_time" and not check["ok"] for check in parsed["constraint_checks"]):
        flags.append("response_time_ng")
    if parsed["errors"]:
        flags.append("sql_errors")
    if beyond:
        flags.append("new_orders_after_last_interval")
    if stalls:
        flags.append("stall_intervals")
    return {
        "status": "invalid" if reasons else "ok",
        "reasons": reasons,
        "flags": flags,
        # False when the trial stopped tpcc_start (duration=auto): no failure counts, transaction-mix
        # or response-time checks and no TpmC of the tool's to check the intervals against.
        "final_tables": final_tables,
        "tpmc_tool": parsed["tpmc"],
        "tpmc_whole_run": _tpmc(whole_run_new_orders, len(parsed["intervals"]) * interval_s),
        "tpmc_tool_beyond_intervals": beyond,
        "tpmc_measured": _tpmc(measured_new_orders, len(measured) * interval_s),
        "throughput_median": figures["throughput_median"],
        "throughput_unit": "tpmC",
        "latency_p95_ms_median": figures["latency_median"],
        "latency_p99_ms_median": statistics.median(i["p99_ms"] for i in busy) if busy else None,
        "intervals_measured": len(measured),
        "new_orders_measured": measured_new_orders,
        "stall_intervals": stalls,
        "sql_errors": sum(error["count"] for error in parsed["errors"]),
    }


def _percent(value: float | None) -> str:
    return "nan%" if value is None else f"{value:.2f}%"
