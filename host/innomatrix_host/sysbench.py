"""Parse sysbench 1.0.x / 1.1 text output into plain dicts and summarise trials.

OLTP and fileio runs are both covered: interval lines, the end-of-run summary,
and the --histogram=on latency histogram.

It runs on benchmark hosts (the trial module's summary) and in the report:
see innomatrix_host. Numbers are read through innomatrix_host.numbers, the
measured intervals chosen by innomatrix_host.measured.

Parsing is strict on purpose: a line that is recognisably a sysbench report
line but carries a value we cannot read raises ``ValueError`` instead of being
skipped, because a silently dropped interval or summary field would skew the
benchmark results without anyone noticing.
"""

# Postponed annotations keep the ``X | None`` hints importable on hosts whose
# Python is older than the controller's.
from __future__ import annotations

import itertools
import math
import re
import statistics
from collections.abc import Callable
from typing import Any

from .measured import first_measured_t
from .numbers import ABSURD, count, plausible, real

# sysbench prints every rate and latency with printf("%4.2f") or similar, so a
# plain unsigned decimal is the only legitimate number; "nan", "inf" or a
# negative value means something went wrong and must not be accepted.
_NUM = r"\d+(?:\.\d+)?"

# The most any run prints per interval field, with room to spare: the fastest servers run about a
# million transactions and a few million queries a second, the fastest devices tens of GiB/s.
# A larger figure is a damaged log (a digit too many), not a fast machine, and is refused where it
# is read, as an absurd number is. The bounds are wide on purpose: no real run comes near them.
PLAUSIBLE = {
    "t": 1e8,                       # three years of seconds
    "threads": 1e5,
    "tps": 1e7, "qps": 1e8, "reads_s": 1e8, "writes_s": 1e8, "other_s": 1e8,
    "err_s": 1e7, "reconn_s": 1e6,
    "lat_ms": 1e7,                  # under three hours a request
    "read_mib_s": 1e7, "write_mib_s": 1e7, "fsyncs_s": 1e8,
}


def _plausible(name: str, value: float) -> float:
    """An interval figure no run prints (see PLAUSIBLE) raises ValueError."""
    return plausible(name, value, PLAUSIBLE.get(name, ABSURD))

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

# --rate (a fixed arrival rate): sysbench prints, after each interval line, the events waiting in
# its queue in front of the threads and how many threads were busy, e.g.
# "[ 1s ] queue length: 3783, concurrency: 4".
_QUEUE_RE = re.compile(
    rf"\[\s*(?P<t>{_NUM})s\s*\]\s+queue length:\s*(?P<queue_length>\d+),?\s+concurrency:\s*(?P<concurrency>\d+)"
)
_QUEUE_PREFIX_RE = re.compile(r"\[\s*\S+\s*\]\s+queue length:")
# --report-checkpoints: "[ 3s ] Checkpoint report:" and a whole statistics block, after which every
# counter and the latency histogram start again. Each block ends with the threads' fairness line.
_CHECKPOINT_RE = re.compile(rf"\[\s*(?P<t>{_NUM})s\s*\]\s+Checkpoint report:")
_BLOCK_END_RE = re.compile(r"execution time \(avg/stddev\):.*")
# What sysbench says when arrivals outrun the threads for long enough to fill its queue (--rate).
QUEUE_FULL = "The event queue is full"

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
    "transactions": (_COUNT_RATE_RE, (("count", "transactions", count), ("rate", "tps", real))),
    "queries": (_COUNT_RATE_RE, (("count", "queries", count), ("rate", "qps", real))),
    "ignored errors": (
        _COUNT_RATE_RE,
        (("count", "ignored_errors", count), ("rate", "ignored_errors_s", real)),
    ),
    "reconnects": (
        _COUNT_RATE_RE,
        (("count", "reconnects", count), ("rate", "reconnects_s", real)),
    ),
    # 1.0 says "total time" under General statistics, 1.1 "time elapsed"
    # under Throughput; both are the wall time of the run.
    "total time": (_SECONDS_RE, (("value", "total_time_s", real),)),
    "time elapsed": (_SECONDS_RE, (("value", "total_time_s", real),)),
    "total number of events": (_INT_RE, (("value", "events", count),)),
    "events/s (eps)": (_FLOAT_RE, (("value", "events_s", real),)),
}

# fileio's summary blocks. 1.0.20 prints "File operations:" (reads/s ...) and
# "Throughput:" (read, MiB/s ...); 1.1 folds both into "Throughput:" as
# "read:  IOPS=36406.33 568.85 MiB/s (596.49 MB/s)". The labels are generic
# words ("read", "reads/s"), so they count only inside their own block.
_IOPS_RE = re.compile(rf"IOPS=(?P<iops>{_NUM})\s+(?P<mib_s>{_NUM}) MiB/s\s+\({_NUM} MB/s\)")
_FSYNC_IOPS_RE = re.compile(rf"IOPS=(?P<iops>{_NUM})")
_SECTION_FIELDS: dict[str, dict[str, _FieldSpec]] = {
    "File operations": {
        "reads/s": (_FLOAT_RE, (("value", "read_iops", real),)),
        "writes/s": (_FLOAT_RE, (("value", "write_iops", real),)),
        "fsyncs/s": (_FLOAT_RE, (("value", "fsyncs_s", real),)),
    },
    "Throughput": {
        "read, MiB/s": (_FLOAT_RE, (("value", "read_mib_s", real),)),
        "written, MiB/s": (_FLOAT_RE, (("value", "write_mib_s", real),)),
        "read": (_IOPS_RE, (("iops", "read_iops", real), ("mib_s", "read_mib_s", real))),
        "write": (_IOPS_RE, (("iops", "write_iops", real), ("mib_s", "write_mib_s", real))),
        "fsync": (_FSYNC_IOPS_RE, (("iops", "fsyncs_s", real),)),
    },
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

# --histogram=on: a title line, a column header, then one row per non-empty
# bucket, "%12.3f |%-40.*s %lu" (value, a bar of up to 40 stars, count).
_HISTOGRAM_TITLE = "Latency histogram (values are in milliseconds)"
_HISTOGRAM_HEADER_RE = re.compile(r"value\s+-+\s+distribution\s+-+\s+count")
_HISTOGRAM_ROW_RE = re.compile(rf"(?P<value>{_NUM})\s+\|\**\s+(?P<count>\d+)")


def _convert(
    match: re.Match[str], int_fields: tuple[str, ...], float_fields: tuple[str, ...]
) -> dict[str, Any]:
    """Turn named regex groups into typed values so callers never see strings."""
    values: dict[str, Any] = {name: count(match[name]) for name in int_fields}
    values.update({name: real(match[name]) for name in float_fields})
    for name, value in values.items():
        _plausible(name, value)
    return values


def _latency(match: re.Match[str]) -> dict[str, float | None]:
    """Latency of one interval; None when the line carries no latency part."""
    if match["lat_ms"] is None:
        return {"lat_ms": None, "lat_pct": None}
    pct = real(match["lat_pct"])
    if not 0 < pct <= 100:
        raise ValueError(f"latency percentile {pct:g}% is not a percentile")
    return {"lat_ms": _plausible("lat_ms", real(match["lat_ms"])), "lat_pct": pct}


def parse_interval(line: str) -> dict[str, Any] | None:
    """Parse one --report-interval line of an OLTP or fileio run.

    Returns None for any other line (banner, summary, cpu/memory intervals),
    so callers can feed every output line through it. A line that holds an
    OLTP or fileio interval anywhere (after a terminal's colour codes, say) but
    does not parse raises ValueError, because dropping it would quietly shift
    the medians computed from the intervals.
    """
    text = line.strip()
    if match := _OLTP_RE.fullmatch(text):
        interval: dict[str, Any] = {
            "kind": "oltp",
            **_convert(match, _OLTP_INT_FIELDS, _OLTP_FLOAT_FIELDS),
        }
    elif match := _FILEIO_RE.fullmatch(text):
        interval = {"kind": "fileio", **_convert(match, (), _FILEIO_FLOAT_FIELDS)}
    elif _INTERVAL_PREFIX_RE.search(text):
        raise ValueError(f"malformed sysbench interval line: {line!r}")
    else:
        return None
    interval.update(_latency(match))
    return interval


def parse_queue_line(line: str) -> dict[str, Any] | None:
    """One --rate queue line as {t, queue_length, concurrency}; None for any other line. A line that
    starts as one but does not parse raises ValueError, as a malformed interval line does."""
    text = line.strip()
    if match := _QUEUE_RE.fullmatch(text):
        return {"t": _plausible("t", real(match["t"])), "queue_length": count(match["queue_length"]),
                "concurrency": count(match["concurrency"])}
    if _QUEUE_PREFIX_RE.search(text):
        raise ValueError(f"malformed sysbench queue line: {line!r}")
    return None


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
            return {_LATENCY_FIELDS[label]: real(number["value"])}
        if pct := _PERCENTILE_LABEL_RE.fullmatch(label):
            number = _FLOAT_RE.fullmatch(value)
            if number is None:
                raise ValueError("malformed latency percentile value")
            return {"latency_pct": real(pct["pct"]), "latency_pct_ms": real(number["value"])}
    spec = _SECTION_FIELDS.get(section or "", {}).get(label) or _SUMMARY_FIELDS.get(label)
    if spec is None:
        return None
    pattern, groups = spec
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

    A fileio run adds read_iops, write_iops, fsyncs_s, read_mib_s and
    write_mib_s, from either version's layout. Like every summary figure they
    cover the whole run, warmup included.
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


def parse_histogram(text: str) -> list[tuple[float, int]] | None:
    """The --histogram=on latency histogram as (bucket value in ms, count) rows.

    None when the output has no histogram; an empty list when sysbench printed
    the title but had no events to show. Rows keep sysbench's order, which is
    ascending (a row below the one before it raises ValueError). With --report-checkpoints the
    histogram covers the events since the last checkpoint only. The block ends at a blank line (sysbench closes it with a line
    holding one space): any other line inside it, or the end of the text before
    that blank line, raises ValueError naming the line, since a cut or garbled
    histogram would quietly lose its tail, and with it the high percentiles.
    """
    rows: list[tuple[float, int]] | None = None
    lines = text.splitlines()
    for number, raw_line in enumerate(lines, start=1):
        stripped = raw_line.strip()
        if stripped == _HISTOGRAM_TITLE:
            rows = []
            continue
        if rows is None or _HISTOGRAM_HEADER_RE.fullmatch(stripped):
            continue
        if not stripped:
            return rows
        match = _HISTOGRAM_ROW_RE.fullmatch(stripped)
        if match is None:
            raise ValueError(f"line {number}: malformed histogram row: {raw_line!r}")
        try:
            row = (real(match["value"]), count(match["count"]))
        except ValueError as exc:
            raise ValueError(f"line {number}: {exc}: {raw_line!r}") from None
        # Buckets ascend; two may print as the same value (three decimals are coarser than the
        # buckets below about 0.1 ms), never a smaller one.
        if rows and row[0] < rows[-1][0]:
            raise ValueError(f"line {number}: histogram bucket {row[0]:g} ms after {rows[-1][0]:g} ms: "
                             f"out of order: {raw_line!r}")
        rows.append(row)
    if rows is not None:
        raise ValueError(f"line {len(lines)}: the output ends inside the latency histogram (cut short?)")
    return rows


def histogram_percentile(histogram: list[tuple[float, int]], percentile: float) -> float | None:
    """The latency percentile (ms) sysbench itself derives from this histogram.

    sysbench reports the first bucket whose running count reaches
    round(total * percentile / 100); doing the same here means one run with
    --histogram=on yields p95 and p99 that agree with what --percentile=95
    or 99 would have printed for those events (to the histogram's three
    decimals). None for an empty histogram.
    """
    if not 0 < percentile <= 100:
        raise ValueError(f"percentile must be in (0, 100], got {percentile}")
    counts = [count for _, count in histogram]
    total = sum(counts)
    if total == 0:
        return None
    target = math.floor(total * percentile / 100 + 0.5)
    return next(
        value
        for (value, _), running in zip(histogram, itertools.accumulate(counts))
        if running >= target
    )


def merge_histograms(histograms: list[list[tuple[float, int]]]) -> list[tuple[float, int]]:
    """Several latency histograms as one, counts added bucket by bucket: the events of every trial
    (repeats of a configuration, several hosts) as if one run had recorded them all.

    sysbench 1.0.20's buckets are fixed (1024 of them, log-spaced from 0.001 to 100 000 ms) and
    printed by value, so a value is a bucket wherever it was printed; two neighbouring buckets
    that print as the same value are added together, as they are one value to every percentile.
    A percentile of the result (histogram_percentile) is the percentile of all the events to the
    bucket's resolution (about 1.8 % of the value), which no average of the trials' percentiles is.
    """
    merged: dict[float, int] = {}
    for histogram in histograms:
        for value, events in histogram:
            merged[value] = merged.get(value, 0) + events
    return sorted(merged.items())


# Said of a log that ends without sysbench's summary although its driver did not fail.
INCOMPLETE_LOG = "driver.log ends without sysbench's end-of-run summary (cut short?)"


def parse_output(text: str, check_intervals: bool = True) -> dict[str, Any]:
    """Parse a whole sysbench run log: intervals, summary, histogram, FATAL lines.

    FATAL lines are kept because a server that died mid-run shows up only
    that way (often with no summary at all). histogram is None unless the
    run had --histogram=on. queue holds a --rate run's queue lines
    (parse_queue_line), checkpoints the times of --report-checkpoints reports:
    after one, the summary and the histogram are the final ones, which cover
    the events since the last checkpoint (a checkpoint's own block is skipped). complete is False when the log has no end-of-run
    summary (a killed driver, or a cut log): its caller says which.

    breaks lists where the interval times leave their step (interval_breaks), as
    "line N: ...": a trial with breaks is marked, not dropped. check_intervals=False
    leaves that to a caller that reads the intervals itself.

    Raises ValueError naming the line for what would otherwise be a clean-looking
    wrong number: an interval line printed twice or out of order, or a histogram
    whose counts do not add up to the run's events.
    """
    intervals: list[dict[str, Any]] = []
    interval_lines: list[int] = []
    queue: list[dict[str, Any]] = []
    checkpoints: list[tuple[int, float]] = []
    fatal: list[str] = []
    percentile = None
    lines = text.splitlines()
    for number, line in enumerate(lines, start=1):
        if "FATAL" in line:
            fatal.append(line.strip())
            continue
        if checkpoint := _CHECKPOINT_RE.fullmatch(line.strip()):
            checkpoints.append((number, real(checkpoint["t"])))
            continue
        try:
            interval = parse_interval(line)
            waiting = parse_queue_line(line) if interval is None else None
        except ValueError as exc:
            raise ValueError(f"line {number}: {exc}") from None
        if waiting is not None:
            if queue and waiting["t"] <= queue[-1]["t"]:
                raise ValueError(f"line {number}: queue line [{waiting['t']:g}s] after [{queue[-1]['t']:g}s]: "
                                 "repeated or out of order")
            queue.append(waiting)
        if interval is not None:
            if interval["lat_pct"] is not None:
                if percentile is not None and interval["lat_pct"] != percentile:
                    raise ValueError(f"line {number}: the latency percentile changes from {percentile:g}% to "
                                     f"{interval['lat_pct']:g}% (two runs' output in one log?)")
                percentile = interval["lat_pct"]
            intervals.append(interval)
            interval_lines.append(number)
    breaks = interval_breaks([interval["t"] for interval in intervals]) if check_intervals else []
    for index, problem in breaks:
        # A line printed twice or a time that goes back is a damaged log; a second printed twice
        # with other figures, or one skipped, is sysbench's reporting thread waking late.
        earlier, later = intervals[index - 1], intervals[index]
        if later["t"] < earlier["t"] or later == earlier:
            raise ValueError(f"line {interval_lines[index]}: {problem}")
    summary = parse_summary("\n".join(lines[_after_checkpoints(lines, checkpoints):]))
    if "version" not in summary and (version := _VERSION_RE.search(text[:4096])):
        summary["version"] = version["version"]
    histogram = parse_histogram(text)
    header = parse_header(text)
    if histogram is not None and "events" in summary:
        _check_histogram_events(sum(count for _, count in histogram), summary["events"],
                                header["threads"] if checkpoints else 0)
    return {
        "version": summary.get("version"),
        "header": header,
        "intervals": intervals,
        "summary": summary,
        "histogram": histogram,
        "queue": queue,
        "checkpoints": [t for _, t in checkpoints],
        "fatal": fatal,
        "complete": "latency_sum_ms" in summary,
        "breaks": [f"line {interval_lines[index]}: {problem}" for index, problem in breaks],
    }


def _check_histogram_events(in_histogram: int, in_summary: int, in_flight: int | None) -> None:
    """The histogram and the summary count the same events, or one of them is corrupted. After a
    checkpoint they may differ by the events in flight when it reset them (one per thread: a
    thread records an event's latency, then counts it, and the reset can fall in between)."""
    allowed = in_flight or 0
    if abs(in_histogram - in_summary) > allowed:
        more = f" (more than the {allowed} in flight at a checkpoint)" if allowed else ""
        raise ValueError(f"the latency histogram counts {in_histogram} events, the summary {in_summary}{more}: "
                         "one of them is corrupted")


def _after_checkpoints(lines: list[str], checkpoints: list[tuple[int, float]]) -> int:
    """Where the end-of-run statistics may start: after the last checkpoint's own block (which
    ends at its fairness line), or at the top without checkpoints. A log cut inside that block
    has no end-of-run statistics."""
    if not checkpoints:
        return 0
    last = checkpoints[-1][0]
    return next((index + 1 for index in range(last, len(lines)) if _BLOCK_END_RE.fullmatch(lines[index].strip())),
                len(lines))


# sysbench's banner says what it was run with: "Number of threads: 4", "Report intermediate
# results every 1 second(s)". A log whose banner disagrees with its trial's record is another
# trial's log.
_HEADER_THREADS_RE = re.compile(r"Number of threads:\s*(\d+)")
_HEADER_INTERVAL_RE = re.compile(rf"Report intermediate results every ({_NUM}) second\(s\)")
_HEADER_RATE_RE = re.compile(r"Target transaction rate:\s*(\d+)/sec")
_HEADER_END = "Threads started!"


def parse_header(text: str) -> dict[str, Any]:
    """What the banner says: `threads`, `report_interval_s` and `rate` (--rate's arrivals a second),
    None where it does not say."""
    header: dict[str, Any] = {"threads": None, "report_interval_s": None, "rate": None}
    for line in text.splitlines():
        stripped = line.strip()
        if stripped == _HEADER_END or _INTERVAL_PREFIX_RE.search(stripped):
            break
        if header["threads"] is None and (found := _HEADER_THREADS_RE.fullmatch(stripped)):
            header["threads"] = count(found[1])
        elif header["report_interval_s"] is None and (found := _HEADER_INTERVAL_RE.fullmatch(stripped)):
            header["report_interval_s"] = real(found[1])
        elif header["rate"] is None and (found := _HEADER_RATE_RE.fullmatch(stripped)):
            header["rate"] = count(found[1])
    return header


def interval_breaks(times: list[float]) -> list[tuple[int, str]]:
    """Where the interval times leave their regular step: (index, what) for each break.

    sysbench reports every --report-interval seconds, so consecutive times differ by
    one step (the median difference). A time that repeats or goes back, or one more
    than half a step off, means a line was duplicated, lost or moved; a log that
    merely stops early has no break.
    """
    gaps = [later - earlier for earlier, later in zip(times, times[1:])]
    if not gaps:
        return []
    step = statistics.median(gaps)
    if step <= 0:
        return [(1, f"interval [{times[1]:g}s] after [{times[0]:g}s]: the times do not advance")]
    breaks = []
    for index, gap in enumerate(gaps, start=1):
        if abs(gap - step) <= step / 2:
            continue
        if gap <= 0:
            what = f"interval [{times[index]:g}s] after [{times[index - 1]:g}s]: repeated or out of order"
        else:
            what = (f"interval [{times[index]:g}s] after [{times[index - 1]:g}s]: "
                    f"{round(gap / step) - 1} interval(s) of {step:g} s missing")
        breaks.append((index, what))
    return breaks


def _single_value(values: list[Any], what: str) -> Any:
    """The one value all intervals agree on; mixing runs is a caller bug."""
    distinct = set(values)
    if len(distinct) > 1:
        raise ValueError(f"intervals mix several {what}: {sorted(distinct, key=str)}")
    return distinct.pop() if distinct else None


# A stall: a measured interval whose throughput is at most this fraction of the trial's median
# (zero always counts) and that did no other work either (a fileio interval of tiny writes that
# round to 0.00 MiB/s still fsynced). The host's trial summary and the report's tables both
# judge stalls with stall_flags, so a trial has one stall count wherever it is read.
STALL_FRACTION = 0.01


def stall_flags(throughputs: list[float], other_work: list[float] | None = None,
                fraction: float = STALL_FRACTION) -> list[bool]:
    """For each interval, whether it is a stall (see STALL_FRACTION); `other_work` is fileio's fsyncs/s."""
    if not throughputs:
        return []
    limit = fraction * statistics.median(throughputs)
    other_work = other_work or [0.0] * len(throughputs)
    return [(value <= limit or value == 0) and not other for value, other in zip(throughputs, other_work)]


def episodes(stalls: list[bool]) -> list[tuple[int, int]]:
    """Runs of stalled intervals as (first index, length): the fileio summary's longest stall, the
    trial's stalls flag and the report's stall episodes."""
    runs: list[tuple[int, int]] = []
    for index, stalled in enumerate(stalls):
        if not stalled:
            continue
        if runs and runs[-1][0] + runs[-1][1] == index:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
        else:
            runs.append((index, 1))
    return runs


def trial_figures(throughputs: list[float], latencies: list[float | None] | None = None,
                  errors: list[float] | None = None, other_work: list[float] | None = None,
                  fraction: float = STALL_FRACTION) -> dict[str, Any]:
    """A trial's figures from its measured intervals, in order: the one definition the host's
    summary (trial.json, the end-of-play lines) and the report's tables both apply.

    `throughput_median` is the median interval; `stalls` flags each interval (stall_flags);
    `latency_median` is the median per-interval latency percentile outside stalls (a stalled
    interval completed next to nothing, so its latency says nothing), over every latency given
    when they do not line up with the throughputs; `errors_per_s_mean` is the mean error rate.
    Figures of nothing are None."""
    stalls = stall_flags(throughputs, other_work, fraction)
    if latencies is not None and len(latencies) == len(throughputs):
        latencies = [value for value, stalled in zip(latencies, stalls) if not stalled]
    kept = [value for value in latencies or [] if value is not None]
    return {
        "throughput_median": statistics.median(throughputs) if throughputs else None,
        "stalls": stalls,
        "latency_median": statistics.median(kept) if kept else None,
        "errors_per_s_mean": statistics.fmean(errors) if errors else None,
    }


def _throughput(interval: dict[str, Any]) -> float:
    """The throughput figure of one interval in the unit of its kind."""
    if interval["kind"] == "oltp":
        return float(interval["tps"])
    return float(interval["read_mib_s"] + interval["write_mib_s"])


_THROUGHPUT_UNITS = {"oltp": "tps", "fileio": "MiB/s"}


def _measured(
    intervals: list[dict[str, Any]], warmup_s: float, report_interval_s: float
) -> list[dict[str, Any]]:
    """The intervals that lie wholly after the warmup.

    An interval reported at time t covers (t - report_interval_s, t]; it is
    measured only if it starts at or after warmup_s, so no warmup second
    leaks into the figures.
    """
    first = first_measured_t(warmup_s, report_interval_s)
    return [interval for interval in intervals if interval["t"] >= first]


def _latency_pct(measured: list[dict[str, Any]]) -> float | None:
    """Which percentile the per-interval latencies are (one for the whole trial)."""
    return _single_value(
        [interval["lat_pct"] for interval in measured if interval["lat_pct"] is not None],
        "latency percentiles",
    )


def _figures(measured: list[dict[str, Any]], is_oltp: bool) -> dict[str, Any]:
    return trial_figures([_throughput(interval) for interval in measured],
                         [interval["lat_ms"] for interval in measured],
                         [interval["err_s"] for interval in measured] if is_oltp else None,
                         [interval.get("fsyncs_s", 0.0) for interval in measured])


def measured_stalls(intervals: list[dict[str, Any]], warmup_s: float, report_interval_s: float) -> list[bool]:
    """Which measured intervals are stalls, as summarize counts them (for the trial's flags)."""
    measured = _measured(intervals, warmup_s, report_interval_s)
    return _figures(measured, bool(measured) and measured[0]["kind"] == "oltp")["stalls"]


def summarize(
    intervals: list[dict[str, Any]], warmup_s: float, report_interval_s: float
) -> dict[str, Any]:
    """Summarise one trial from its intervals, ignoring the warmup period.

    See _measured for which intervals count. Medians rather than means keep
    one stall or spike from dominating. With nothing measured the figures
    are None and intervals_measured is 0, leaving the caller to mark the
    trial failed. latency_p95_ms_median keeps its name whatever --percentile
    was; the actual percentile is in latency_pct.
    """
    kind = _single_value([interval["kind"] for interval in intervals], "kinds")
    measured = _measured(intervals, warmup_s, report_interval_s)
    is_oltp = kind == "oltp" and bool(measured)
    figures = _figures(measured, is_oltp)
    return {
        "throughput_median": figures["throughput_median"],
        "throughput_unit": _THROUGHPUT_UNITS.get(kind),
        "latency_p95_ms_median": figures["latency_median"],
        "latency_pct": _latency_pct(measured),
        "intervals_measured": len(measured),
        "stall_intervals": sum(figures["stalls"]),
        "errors_per_s_mean": figures["errors_per_s_mean"],
        "reconnects_total_est": (
            sum(interval["reconn_s"] for interval in measured) * report_interval_s
            if is_oltp
            else None
        ),
    }


# A fixed-rate trial sustains its rate when it completes what arrived. sysbench's arrivals are a
# Poisson process, so the count over a window varies by its square root: a shortfall counts beyond
# three of those and RATE_SHORTFALL of the expected count (interval lines print rates rounded to
# two decimals, and the window's edges cut arrivals in half). A queue that ends a trial holding
# more than QUEUE_INTERVALS report intervals' worth of arrivals is not keeping up either.
RATE_SHORTFALL = 0.02
QUEUE_INTERVALS = 1.0


def rate_figures(intervals: list[dict[str, Any]], queue: list[dict[str, Any]], fatal: list[str], offered: float,
                 warmup_s: float, report_interval_s: float) -> dict[str, Any]:
    """A fixed-rate (--rate) trial's offered and achieved rate over its measured window, its queue,
    and whether it is `saturated`, with the `reasons` in one line each.

    `achieved_tps` is the measured transactions over the measured time (a count, not a median of
    intervals: it is held against the arrivals of the same window). A run that sysbench stopped
    because its event queue filled is saturated whatever was measured before."""
    measured = _measured(intervals, warmup_s, report_interval_s)
    first = first_measured_t(warmup_s, report_interval_s)
    waiting = [entry["queue_length"] for entry in queue if entry["t"] >= first]
    measured_s = len(measured) * report_interval_s
    expected = offered * measured_s
    completed = sum(interval["tps"] for interval in measured) * report_interval_s
    reasons = []
    if any(QUEUE_FULL in line for line in fatal):
        reasons.append(f"sysbench's event queue filled up and it stopped: arrivals at {offered:g}/s outran "
                       "the threads")
    if measured and expected - completed > 3 * math.sqrt(expected) + RATE_SHORTFALL * expected:
        reasons.append(f"completed {completed / measured_s:.1f} of the {offered:g} transactions/s offered "
                       f"({completed / expected:.0%})")
    if waiting and waiting[-1] > QUEUE_INTERVALS * offered * report_interval_s:
        reasons.append(f"the queue ended the trial holding {waiting[-1]} transactions "
                       f"({waiting[-1] / offered:.1f} s of arrivals)")
    return {
        "offered_tps": offered,
        "achieved_tps": completed / measured_s if measured else None,
        "queue_length_max": max(waiting, default=None),
        "queue_length_end": waiting[-1] if waiting else None,
        "saturated": bool(reasons),
        "reasons": reasons,
    }


# sysbench's "MiB" is 2^20 bytes in both the interval lines and the summary.
_MIB = 1 << 20

# The bound on how far the summary's MiB/s may stray from IOPS x
# block size. sysbench prints both MiB/s figures to two decimals, so their sum
# can be 0.01 off from rounding alone, which exceeds 1 % below 1 MiB/s
# (512-byte blocks at low IOPS); that much is always allowed.
_BANDWIDTH_TOLERANCE = 0.01
_BANDWIDTH_ROUNDING_MIB_S = 0.01


def _median_and_stddev(values: list[float]) -> tuple[float | None, float | None]:
    """Median and sample standard deviation; None where there are too few values."""
    median = statistics.median(values) if values else None
    return median, (statistics.stdev(values) if len(values) > 1 else None)


def _run_bandwidth(summary: dict[str, Any], block_size_bytes: int) -> dict[str, Any]:
    """Whole-run IOPS and MiB/s from the summary, and whether they agree."""
    figures = ("read_iops", "write_iops", "read_mib_s", "write_mib_s")
    if not all(name in summary for name in figures):
        return {
            "run_iops": None,
            "run_mib_s": None,
            "run_mib_s_from_iops": None,
            "bandwidth_matches_iops": None,
        }
    iops = summary["read_iops"] + summary["write_iops"]
    mib_s = summary["read_mib_s"] + summary["write_mib_s"]
    mib_s_from_iops = iops * block_size_bytes / _MIB
    allowed = max(_BANDWIDTH_TOLERANCE * mib_s_from_iops, _BANDWIDTH_ROUNDING_MIB_S)
    return {
        "run_iops": iops,
        "run_mib_s": mib_s,
        "run_mib_s_from_iops": mib_s_from_iops,
        "bandwidth_matches_iops": abs(mib_s - mib_s_from_iops) <= allowed,
    }


def _run_percentiles(
    summary: dict[str, Any], histogram: list[tuple[float, int]] | None
) -> dict[str, Any]:
    """Whole-run p95 and p99 latency, from the histogram if there is one."""
    if histogram:
        return {
            "run_latency_p95_ms": histogram_percentile(histogram, 95),
            "run_latency_p99_ms": histogram_percentile(histogram, 99),
            "run_latency_source": "histogram",
        }
    pct = summary.get("latency_pct")
    return {
        "run_latency_p95_ms": summary["latency_pct_ms"] if pct == 95 else None,
        "run_latency_p99_ms": summary["latency_pct_ms"] if pct == 99 else None,
        "run_latency_source": "summary" if pct in (95, 99) else None,
    }


def summarize_fileio(
    intervals: list[dict[str, Any]],
    summary: dict[str, Any],
    warmup_s: float,
    report_interval_s: float,
    block_size_bytes: int,
    histogram: list[tuple[float, int]] | None = None,
) -> dict[str, Any]:
    """Summarise one fileio cell: its intervals after warmup, and the whole run.

    From the intervals measured after warmup (as in summarize): median and
    sample standard deviation of read, write and total MiB/s, and of IOPS
    derived per interval as MiB/s x 2^20 / block_size_bytes; stall_intervals
    (no I/O at all) and longest_stall_s, the longest stretch of consecutive
    stalls, which is what the posts' 20-30 s zero-throughput periods were;
    the median of the per-interval latency at the --percentile sysbench ran
    with (latency_pct says which).

    The run_* figures come from sysbench's end-of-run summary and
    --histogram=on output, which cover the whole run, warmup included:
    sysbench 1.0.20 cannot start them after a warmup (--report-checkpoints
    resets them, but also corrupts the next fileio interval line). p95 and
    p99 come from the histogram when one is given, so a single
    --percentile=99 --histogram=on run yields both; without it, only the
    percentile the summary printed is filled in. bandwidth_matches_iops
    checks the summary's MiB/s against IOPS x block size (None when the
    summary lacks the figures, e.g. a killed run).
    """
    if block_size_bytes <= 0:
        raise ValueError(f"block_size_bytes must be positive, got {block_size_bytes}")
    kind = _single_value([interval["kind"] for interval in intervals], "kinds")
    if kind not in (None, "fileio"):
        raise ValueError(f"summarize_fileio needs fileio intervals, got {kind}")
    measured = _measured(intervals, warmup_s, report_interval_s)
    reads = [interval["read_mib_s"] for interval in measured]
    writes = [interval["write_mib_s"] for interval in measured]
    totals = [read + write for read, write in zip(reads, writes)]
    iops = [total * _MIB / block_size_bytes for total in totals]
    read_median, read_stddev = _median_and_stddev(reads)
    write_median, write_stddev = _median_and_stddev(writes)
    total_median, total_stddev = _median_and_stddev(totals)
    iops_median, iops_stddev = _median_and_stddev(iops)
    figures = trial_figures(totals, [interval["lat_ms"] for interval in measured], None,
                            [interval["fsyncs_s"] for interval in measured])
    stalls = figures["stalls"]
    return {
        "block_size_bytes": block_size_bytes,
        "intervals_measured": len(measured),
        "read_mib_s_median": read_median,
        "read_mib_s_stddev": read_stddev,
        "write_mib_s_median": write_median,
        "write_mib_s_stddev": write_stddev,
        "mib_s_median": total_median,
        "mib_s_stddev": total_stddev,
        "iops_median": iops_median,
        "iops_stddev": iops_stddev,
        "stall_intervals": sum(stalls),
        "longest_stall_s": max((length for _, length in episodes(stalls)), default=0) * report_interval_s,
        "latency_pct": _latency_pct(measured),
        "latency_ms_median": figures["latency_median"],
        "run_read_iops": summary.get("read_iops"),
        "run_write_iops": summary.get("write_iops"),
        "run_fsyncs_s": summary.get("fsyncs_s"),
        "run_read_mib_s": summary.get("read_mib_s"),
        "run_write_mib_s": summary.get("write_mib_s"),
        **_run_bandwidth(summary, block_size_bytes),
        "run_latency_avg_ms": summary.get("latency_avg_ms"),
        "run_latency_max_ms": summary.get("latency_max_ms"),
        **_run_percentiles(summary, histogram),
    }
