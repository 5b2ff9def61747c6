"""A sysbench log's interval lines as columns, for the frame: what `sysbench.parse_output` reads, in bulk.

`parse_output` matches one line at a time with Python's `re` and builds a dict per interval, about
10 µs a line. Here Arrow matches the same patterns (imported from `sysbench`, so the two cannot
drift) on all lines at once, and the numbers of the matching lines are read in one pass. The rest
of the log (summary, FATAL lines, histogram) still goes through `parse_output`, with the interval
lines it does not need left out.

Anything unusual goes to `parse_output` whole, so the result and the errors are the same: text
with line breaks or spaces other than "\\n", " " and "\\t", non-ASCII text (where `re` and RE2
differ on what `\\s` and `\\d` match), a line that starts like an interval but does not parse, a
log mixing kinds, or intervals with and without latency.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from innomatrix_host.numbers import ABSURD
from innomatrix_host.sysbench import _FILEIO_RE, _INTERVAL_PREFIX_RE, _OLTP_RE, PLAUSIBLE, interval_breaks, parse_output

# Beside "\n", what str.splitlines breaks lines at or str.strip strips in ASCII text.
_OTHER_LINE_BREAKS_AND_SPACES = "\r\x0b\x0c\x1c\x1d\x1e\x1f"
# parse_interval strips a line and then matches it whole; on one line of plain text this is the same.
_KINDS = {kind: f"^[ \t]*(?:{pattern.pattern})[ \t]*$" for kind, pattern in (("oltp", _OLTP_RE),
                                                                              ("fileio", _FILEIO_RE))}
_FIELDS = {kind: [name for name, _ in sorted(pattern.groupindex.items(), key=lambda item: item[1])]
           for kind, pattern in (("oltp", _OLTP_RE), ("fileio", _FILEIO_RE))}
_LATENCY_FIELDS = ("lat_pct", "lat_ms")
# Anywhere in a line, as parse_interval looks for it: an interval behind colour codes is not skipped.
_PREFIX = _INTERVAL_PREFIX_RE.pattern
# The patterns' literal text has no digit and no dot, so the numbers of a matching line, in order,
# are its runs of digits and dots: one per field.
_NUMBERS_ONLY = bytes(c if chr(c) in "0123456789." else ord(" ") for c in range(256))


@dataclass
class DriverOutput:
    """`parse_output(text)` with the intervals as columns.

    `kinds`: the distinct interval kinds, sorted. `columns`: one float array per field of the
    intervals (`t`, `threads`, `tps`, ..., `lat_pct`, `lat_ms`), NaN where a line has no value;
    empty if the log has no intervals or mixes kinds. `complete`: the log has sysbench's
    end-of-run summary. `breaks`: where the interval times leave their step (parse_output).
    `header`: what sysbench's banner says it ran with (parse_output). `queue`: a fixed-rate run's
    queue lines, and `histogram` its --histogram=on latency histogram (parse_output).
    """

    kinds: list[str]
    columns: dict[str, np.ndarray]
    header: dict[str, Any]
    summary: dict[str, Any]
    fatal: list[str]
    complete: bool
    breaks: list[str]
    queue: list[dict[str, Any]]
    histogram: list[tuple[float, int]] | None


def parse_output_columns(text: str) -> DriverOutput:
    """Raises ValueError naming the line, as parse_output does."""
    bulk = _in_bulk(text)
    return bulk if bulk is not None else _from_output(parse_output(text))


def _from_output(parsed: dict[str, Any]) -> DriverOutput:
    intervals = parsed["intervals"]
    kinds = sorted({interval["kind"] for interval in intervals})
    columns = {}
    if len(kinds) == 1:
        columns = {name: np.array([np.nan if interval[name] is None else interval[name] for interval in intervals],
                                  dtype=np.float64) for name in _FIELDS[kinds[0]]}
    return DriverOutput(kinds=kinds, columns=columns, header=parsed["header"], summary=parsed["summary"],
                        fatal=parsed["fatal"], complete=parsed["complete"], breaks=parsed["breaks"],
                        queue=parsed["queue"], histogram=parsed["histogram"])


def _in_bulk(text: str) -> DriverOutput | None:
    """The common case read in bulk; None for anything parse_output should see whole.

    The lines stay in Arrow arrays, never Python strings: a log takes a few times its size in
    memory while it is read (bench/report_memory.py), not ten.
    """
    if not text.isascii() or any(character in text for character in _OTHER_LINE_BREAKS_AND_SPACES):
        return None
    array = pc.split_pattern(pa.array([text], pa.large_string()), "\n").flatten()
    not_fatal = pc.invert(pc.match_substring(array, "FATAL"))
    matched = {kind: pc.and_(pc.match_substring_regex(array, pattern), not_fatal) for kind, pattern in _KINDS.items()}
    kinds = sorted(kind for kind, rows in matched.items() if pc.any(rows).as_py())
    if len(kinds) > 1:
        return None  # parse_output reads both kinds, for the frame to report the mix
    is_interval = matched[kinds[0]] if kinds else pa.array(np.zeros(len(array), dtype=bool))
    if pc.any(pc.and_not(pc.and_(pc.match_substring_regex(array, _PREFIX), not_fatal), is_interval)).as_py():
        return None  # a malformed interval line
    columns = _numbers(array.filter(is_interval), kinds[0]) if kinds else {}
    if columns is None:
        return None
    is_interval = is_interval.to_numpy(zero_copy_only=False)
    if columns and interval_breaks(columns["t"].tolist()):
        return None  # parse_output names the lines, or refuses a damaged log
    unindented = pc.invert(pc.match_substring_regex(array, r"^[ \t]")).to_numpy(zero_copy_only=False)
    kept = np.flatnonzero(~_repeats_an_interval(is_interval, unindented))
    try:
        # Most interval lines are left out here: their times were checked above.
        rest = parse_output("\n".join(array.take(pa.array(kept)).to_pylist()), check_intervals=False)
    except ValueError:
        return None  # parse_output on the whole text names the line
    # The intervals parse_output read must be the same as those rows of the columns; this would
    # catch a change to the patterns that breaks the one-number-per-field reading above.
    check = _from_output(rest).columns
    rows = np.searchsorted(np.flatnonzero(is_interval), kept[is_interval[kept]])
    if list(check) != list(columns) or any(not np.array_equal(values[rows], check[name], equal_nan=True)
                                           for name, values in columns.items()):
        return None
    return DriverOutput(kinds=kinds, columns=columns, header=rest["header"], summary=rest["summary"],
                        fatal=rest["fatal"], complete=rest["complete"], breaks=[], queue=rest["queue"],
                        histogram=rest["histogram"])


def _numbers(rows: pa.Array, kind: str) -> dict[str, np.ndarray] | None:
    """The interval lines' fields as columns; None if only some lines carry a latency.

    The lines' bytes are read as they lie in the array, one after the other (each interval line
    starts with "[" or a blank, so no two numbers run together), every other character made a
    blank, and split once."""
    offsets = np.frombuffer(rows.buffers()[1], dtype=np.int64)[rows.offset:rows.offset + len(rows) + 1]
    joined = rows.buffers()[2].to_pybytes()[offsets[0]:offsets[-1]].translate(_NUMBERS_ONLY)
    joined = pc.ascii_trim_whitespace(pa.array([joined], pa.large_binary()).cast(pa.large_string()))
    tokens = pc.list_flatten(pc.ascii_split_whitespace(joined))
    del joined
    names = _FIELDS[kind]
    if len(tokens) != len(rows) * len(names):
        names = [name for name in names if name not in _LATENCY_FIELDS]
        if len(tokens) != len(rows) * len(names):
            return None
    values = tokens.cast(pa.float64()).to_numpy()
    del tokens
    if not (values < ABSURD).all():
        return None  # parse_output refuses it, naming the line
    by_field = dict(zip(names, values.reshape(len(rows), len(names)).T.copy()))
    pcts = by_field.get("lat_pct")
    if pcts is not None and (len(np.unique(pcts)) > 1 or not (0 < pcts[0] <= 100)):
        return None  # parse_output refuses a percentile that changes, or is none
    if any((by_field[name] > PLAUSIBLE[name]).any() for name in by_field if name in PLAUSIBLE):
        return None  # parse_output refuses a figure beyond any run, naming the line
    return {name: by_field[name] if name in by_field else np.full(len(rows), np.nan) for name in _FIELDS[kind]}


def _repeats_an_interval(is_interval: np.ndarray, unindented: np.ndarray) -> np.ndarray:
    """Lines parse_output can do without: interval lines right after an unindented interval line.

    To the summary and histogram an interval line only ends a block, and only when unindented; the
    first of a run of them does that, the others change nothing.
    """
    repeats = np.zeros(len(is_interval), dtype=bool)
    repeats[1:] = is_interval[1:] & is_interval[:-1] & unindented[:-1]
    return repeats
