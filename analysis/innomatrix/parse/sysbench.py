"""Parse sysbench 1.0.x / 1.1 text output into plain dicts and summarise trials.

This file is also shipped to benchmark hosts as an Ansible ``module_utils``
file (through a symlink), so it deliberately depends on the standard library
only and never imports from the ``innomatrix`` package.

Parsing is strict on purpose: a line that is recognisably a sysbench report
line but carries a value we cannot read raises ``ValueError`` instead of being
skipped, because a silently dropped interval or summary field would skew the
benchmark results without anyone noticing.
"""

# Postponed annotations keep the ``X | None`` hints importable on hosts whose
# Python is older than the controller's.
from __future__ import annotations

import re
import statistics
from collections.abc import Callable
from typing import Any

# sysbench prints every rate and latency with printf("%4.2f") or similar, so a
# plain unsigned decimal is the only legitimate number; "nan", "inf" or a
# negative value means something went wrong and must not be accepted.
_NUM = r"\d+(?:\.\d+)?"

# Float noise allowance when comparing interval start times with the warmup.
_EPSILON_S = 1e-6

# "[ 6s ] thds: 16 tps: ..." -- the lat part is optional because not every
# reporter prints it, and some Lua reporters print "err/s 0.00" (no colon).
_OLTP_RE = re.compile(
    rf"\[\s*(?P<t>{_NUM})s\s*\]"
    r"\s+thds:\s*(?P<threads>\d+)"
    rf"\s+tps:\s*(?P<tps>{_NUM})"
    rf"\s+qps:\s*(?P<qps>{_NUM})"
    rf"\s+\(r/w/o:\s*(?P<reads_s>{_NUM})/(?P<writes_s>{_NUM})/(?P<other_s>{_NUM})\)"
    rf"(?:\s+lat\s+\(ms,(?P<lat_pct>{_NUM})%\):\s*(?P<lat_ms>{_NUM}))?"
    rf"\s+err/s:?\s*(?P<err_s>{_NUM})"
    rf"\s+reconn/s:?\s*(?P<reconn_s>{_NUM})"
)

# "[ 1s ] reads: 0.00 MiB/s writes: 1.09 MiB/s fsyncs: 8829.31/s latency ..."
_FILEIO_RE = re.compile(
    rf"\[\s*(?P<t>{_NUM})s\s*\]"
    rf"\s+reads:\s*(?P<read_mib_s>{_NUM})\s+MiB/s"
    rf"\s+writes:\s*(?P<write_mib_s>{_NUM})\s+MiB/s"
    rf"\s+fsyncs:\s*(?P<fsyncs_s>{_NUM})/s"
    rf"(?:\s+latency\s+\(ms,(?P<lat_pct>{_NUM})%\):\s*(?P<lat_ms>{_NUM}))?"
)

# Enough of an OLTP or fileio interval line to be sure that is what the line
# means to be; cpu/memory/threads intervals ("thds: 1 eps: ...") do not match.
_INTERVAL_PREFIX_RE = re.compile(r"\[\s*\S+\s*\]\s+(?:thds:\s*\S+\s+tps:|reads:)")

_OLTP_INT_FIELDS = ("threads",)
_OLTP_FLOAT_FIELDS = ("t", "tps", "qps", "reads_s", "writes_s", "other_s", "err_s", "reconn_s")
_FILEIO_FLOAT_FIELDS = ("t", "read_mib_s", "write_mib_s", "fsyncs_s")

_VERSION_RE = re.compile(r"sysbench\s+(?P<version>\d+\.\d+\S*)")

# "    transactions:     6818   (340.65 per sec.)"
_COUNT_RATE_RE = re.compile(rf"(?P<count>\d+)\s+\((?P<rate>{_NUM}) per sec\.\)")
_SECONDS_RE = re.compile(rf"(?P<value>{_NUM})s")
_INT_RE = re.compile(r"(?P<value>\d+)")
_FLOAT_RE = re.compile(rf"(?P<value>{_NUM})")
_PERCENTILE_LABEL_RE = re.compile(rf"(?P<pct>{_NUM})th percentile")

# Summary label -> (value pattern, ((regex group, result key, converter), ...)).
_FieldSpec = tuple[re.Pattern[str], tuple[tuple[str, str, Callable[[str], Any]], ...]]
_SUMMARY_FIELDS: dict[str, _FieldSpec] = {
    "transactions": (_COUNT_RATE_RE, (("count", "transactions", int), ("rate", "tps", float))),
    "queries": (_COUNT_RATE_RE, (("count", "queries", int), ("rate", "qps", float))),
    "ignored errors": (
        _COUNT_RATE_RE,
        (("count", "ignored_errors", int), ("rate", "ignored_errors_s", float)),
    ),
    "reconnects": (
        _COUNT_RATE_RE,
        (("count", "reconnects", int), ("rate", "reconnects_s", float)),
    ),
    # 1.0 says "total time" under General statistics, 1.1 "time elapsed"
    # under Throughput; both are the wall time of the run.
    "total time": (_SECONDS_RE, (("value", "total_time_s", float),)),
    "time elapsed": (_SECONDS_RE, (("value", "total_time_s", float),)),
    "total number of events": (_INT_RE, (("value", "events", int),)),
    "events/s (eps)": (_FLOAT_RE, (("value", "events_s", float),)),
}

# Only meaningful inside the "Latency (ms):" block: "min:" or "sum:" elsewhere
# would be some other statistic.
_LATENCY_SECTION = "Latency (ms)"
_LATENCY_FIELDS = {
    "min": "latency_min_ms",
    "avg": "latency_avg_ms",
    "max": "latency_max_ms",
    "sum": "latency_sum_ms",
}


def _convert(
    match: re.Match[str], int_fields: tuple[str, ...], float_fields: tuple[str, ...]
) -> dict[str, Any]:
    """Turn named regex groups into typed values so callers never see strings."""
    values: dict[str, Any] = {name: int(match[name]) for name in int_fields}
    values.update({name: float(match[name]) for name in float_fields})
    return values


def _latency(match: re.Match[str]) -> dict[str, float | None]:
    """Latency of one interval; None when the line carries no latency part."""
    if match["lat_ms"] is None:
        return {"lat_ms": None, "lat_pct": None}
    return {"lat_ms": float(match["lat_ms"]), "lat_pct": float(match["lat_pct"])}


def parse_interval(line: str) -> dict[str, Any] | None:
    """Parse one --report-interval line of an OLTP or fileio run.

    Returns None for any other line (banner, summary, cpu/memory intervals),
    so callers can feed every output line through it. A line that starts like
    an OLTP or fileio interval but does not parse raises ValueError, because
    dropping it would quietly shift the medians computed from the intervals.
    """
    text = line.strip()
    if match := _OLTP_RE.fullmatch(text):
        interval: dict[str, Any] = {
            "kind": "oltp",
            **_convert(match, _OLTP_INT_FIELDS, _OLTP_FLOAT_FIELDS),
        }
    elif match := _FILEIO_RE.fullmatch(text):
        interval = {"kind": "fileio", **_convert(match, (), _FILEIO_FLOAT_FIELDS)}
    elif _INTERVAL_PREFIX_RE.match(text):
        raise ValueError(f"malformed sysbench interval line: {line!r}")
    else:
        return None
    interval.update(_latency(match))
    return interval


def _section_of(raw_line: str, current: str | None) -> str | None:
    """Track which summary block ("Latency (ms)", ...) a line belongs to.

    Block headers are the only unindented lines ending in a colon; any other
    unindented text (interval or FATAL lines) ends the block, while blank and
    indented lines stay in it.
    """
    stripped = raw_line.strip()
    if not stripped or raw_line[0].isspace():
        return current
    return stripped[:-1] if stripped.endswith(":") else None


def _summary_field(label: str, value: str, section: str | None) -> dict[str, Any] | None:
    """Values of one "label: value" summary line; None if the label is unknown.

    Raises ValueError (without position; the caller adds it) when the label
    is known but the value does not have the expected shape.
    """
    if section == _LATENCY_SECTION:
        if label in _LATENCY_FIELDS:
            number = _FLOAT_RE.fullmatch(value)
            if number is None:
                raise ValueError("malformed latency value")
            return {_LATENCY_FIELDS[label]: float(number["value"])}
        if pct := _PERCENTILE_LABEL_RE.fullmatch(label):
            number = _FLOAT_RE.fullmatch(value)
            if number is None:
                raise ValueError("malformed latency percentile value")
            return {"latency_pct": float(pct["pct"]), "latency_pct_ms": float(number["value"])}
    if label not in _SUMMARY_FIELDS:
        return None
    pattern, groups = _SUMMARY_FIELDS[label]
    match = pattern.fullmatch(value)
    if match is None:
        raise ValueError(f"malformed value for {label!r}")
    return {key: convert(match[group]) for group, key, convert in groups}


def parse_summary(text: str) -> dict[str, Any]:
    """Parse the end-of-run statistics block(s) of sysbench 1.0.20 or 1.1.

    Only fields actually printed appear in the result (a run killed by a
    FATAL error prints none). If a field is printed twice (e.g. both "total
    time" and "time elapsed", or several percentiles) the first one wins.
    events_s is derived from events / total_time_s when sysbench 1.0 does not
    print it, so both versions offer the same rate.
    """
    summary: dict[str, Any] = {}
    section: str | None = None
    for number, raw_line in enumerate(text.splitlines(), start=1):
        section = _section_of(raw_line, section)
        stripped = raw_line.strip()
        if "version" not in summary and (version := _VERSION_RE.match(stripped)):
            summary["version"] = version["version"]
            continue
        label, colon, value = stripped.partition(":")
        if not colon:
            continue
        try:
            fields = _summary_field(label.strip(), value.strip(), section)
        except ValueError as exc:
            raise ValueError(f"line {number}: {exc}: {raw_line!r}") from None
        for key, field_value in (fields or {}).items():
            summary.setdefault(key, field_value)
    if "events_s" not in summary and "events" in summary and summary.get("total_time_s"):
        summary["events_s"] = summary["events"] / summary["total_time_s"]
    return summary


def parse_output(text: str) -> dict[str, Any]:
    """Parse a whole sysbench run log: intervals, summary and FATAL lines.

    FATAL lines are kept because a server that died mid-run shows up only
    that way (often with no summary at all).
    """
    intervals: list[dict[str, Any]] = []
    fatal: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if "FATAL" in line:
            fatal.append(line.strip())
            continue
        try:
            interval = parse_interval(line)
        except ValueError as exc:
            raise ValueError(f"line {number}: {exc}") from None
        if interval is not None:
            intervals.append(interval)
    summary = parse_summary(text)
    return {
        "version": summary.get("version"),
        "intervals": intervals,
        "summary": summary,
        "fatal": fatal,
    }


def _single_value(values: list[Any], what: str) -> Any:
    """The one value all intervals agree on; mixing runs is a caller bug."""
    distinct = set(values)
    if len(distinct) > 1:
        raise ValueError(f"intervals mix several {what}: {sorted(distinct, key=str)}")
    return distinct.pop() if distinct else None


def _is_stall(interval: dict[str, Any]) -> bool:
    """True when the interval completed no work at all.

    A fileio interval with 0.00 MiB/s but non-zero fsyncs still did I/O
    (tiny writes round to zero MiB/s), so it is not a stall.
    """
    if interval["kind"] == "oltp":
        return bool(interval["tps"] == 0)
    return bool(interval["read_mib_s"] + interval["write_mib_s"] == 0 and interval["fsyncs_s"] == 0)


def _throughput(interval: dict[str, Any]) -> float:
    """The throughput figure of one interval in the unit of its kind."""
    if interval["kind"] == "oltp":
        return float(interval["tps"])
    return float(interval["read_mib_s"] + interval["write_mib_s"])


_THROUGHPUT_UNITS = {"oltp": "tps", "fileio": "MiB/s"}


def summarize(
    intervals: list[dict[str, Any]], warmup_s: float, report_interval_s: float
) -> dict[str, Any]:
    """Summarise one trial from its intervals, ignoring the warmup period.

    An interval reported at time t covers (t - report_interval_s, t]; it is
    measured only if it starts at or after warmup_s, so no warmup second
    leaks into the medians. Medians rather than means keep one stall or
    spike from dominating. With nothing measured the figures are None and
    intervals_measured is 0, leaving the caller to mark the trial failed.
    latency_p95_ms_median keeps its name whatever --percentile was; the
    actual percentile is in latency_pct.
    """
    if report_interval_s <= 0:
        raise ValueError(f"report_interval_s must be positive, got {report_interval_s}")
    kind = _single_value([interval["kind"] for interval in intervals], "kinds")
    measured = [
        interval
        for interval in intervals
        if interval["t"] - report_interval_s >= warmup_s - _EPSILON_S
    ]
    throughputs = [_throughput(interval) for interval in measured]
    # A stalled interval completed nothing, so its "latency" of 0 says nothing about latency.
    latencies = [
        interval["lat_ms"]
        for interval in measured
        if interval["lat_ms"] is not None and not _is_stall(interval)
    ]
    is_oltp = kind == "oltp" and bool(measured)
    return {
        "throughput_median": statistics.median(throughputs) if throughputs else None,
        "throughput_unit": _THROUGHPUT_UNITS.get(kind),
        "latency_p95_ms_median": statistics.median(latencies) if latencies else None,
        "latency_pct": _single_value(
            [interval["lat_pct"] for interval in measured if interval["lat_pct"] is not None],
            "latency percentiles",
        ),
        "intervals_measured": len(measured),
        "stall_intervals": sum(map(_is_stall, measured)),
        "errors_per_s_mean": (
            statistics.fmean(interval["err_s"] for interval in measured) if is_oltp else None
        ),
        "reconnects_total_est": (
            sum(interval["reconn_s"] for interval in measured) * report_interval_s
            if is_oltp
            else None
        ),
    }
