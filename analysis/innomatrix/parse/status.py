"""Parse the trial's status.log: `SHOW GLOBAL STATUS` sampled every interval.

The file is tab-separated `time variable value kind` with a header line. The first sample is
written whole (`absolute`); every later sample lists only the variables that moved since the one
before (`delta`); a sample the server did not answer is one `#error` row (kind `error`). Times are
ISO 8601 UTC with milliseconds.

What comes back: the sample times, and per variable its deltas at every sample (0 where it did
not move, 0 at the first sample) and its absolute value at the first sample, so a counter's rate
is delta / time between samples and a gauge's level is absolute + running sum of deltas. A
variable listed twice in one sample is an error naming the line (its rate would be counted
twice); the rates and levels themselves are checked where they are computed (frame.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyarrow import csv

from innomatrix.parse import ParseError, Samples, as_datetimes

HEADER = "time\tvariable\tvalue\tkind"
KINDS = ("absolute", "delta", "error")
_INT64 = 2 ** 63


class _NotUtf8(ValueError):
    """Bytes the fast reader cannot decode; the exact reader puts replacement characters in."""


@dataclass
class StatusSamples(Samples):
    """`metrics` holds deltas; `absolute` the first sample's value (NaN if it had none)."""

    absolute: dict[str, float] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


def read(path: str | Path, variables: Iterable[str] | None = None, data: bytes | None = None) -> StatusSamples:
    """`variables` limits what is returned (default: every variable in the file); `data`: the
    file's bytes, when the caller read them (a results tree is read by innomatrix.tree)."""
    path = Path(path)
    data = path.read_bytes() if data is None else data
    wanted = set(variables) if variables is not None else None
    try:
        table = _fast_table(data, path)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OverflowError):
        table = None  # a damaged line or an odd value: the exact reader names the line
    is_absolute = _absolute_rows(table) if table is not None else None
    if is_absolute is not None:
        try:
            return _from_columns(table, is_absolute, path, wanted, errors=[])
        except (_NotUtf8, ParseError):
            pass  # the exact reader decodes what is not UTF-8, and names the line of what is wrong
    return parse(data.decode(errors="replace"), path, wanted)


def parse(text: str, path: str | Path = "status.log", variables: Iterable[str] | None = None) -> StatusSamples:
    """The exact reader: every line checked, a bad one named by its line number; the values of the
    variables asked for must be integers of 64 bits (the others are not read: MariaDB shows some
    that no reader needs, wsrep_cluster_conf_id among them, as 2^64 - 1)."""
    wanted = set(variables) if variables is not None else None
    lines = text.splitlines()
    if not lines or lines[0].strip() != HEADER:
        raise ParseError(path, f"expected the header {HEADER!r}", 1)
    times, names, values, kinds, errors, numbers = [], [], [], [], [], []
    for number, line in enumerate(lines[1:], start=2):
        if not line:
            continue
        fields = line.split("\t")
        if len(fields) != 4 or fields[3] not in KINDS:
            raise ParseError(path, f"expected time, variable, value and kind (absolute|delta|error): {line!r}", number)
        stamp, name, value, kind = fields
        if not _looks_like_time(stamp):
            raise ParseError(path, f"not an ISO 8601 UTC time: {stamp!r}", number)
        if kind == "error":
            errors.append(f"{stamp} {value}")
            continue
        number_value = _integer(name, value, path, number) if wanted is None or name in wanted else 0
        times.append(stamp)
        names.append(name)
        values.append(number_value)
        kinds.append(kind)
        numbers.append(number)
    table = pa.table({
        "time": pa.array(times, pa.binary()),
        "variable": pa.array(names, pa.binary()),
        "value": pa.array([float(v) for v in values], pa.float64()),
        "kind": pa.array(kinds, pa.binary()),
    })
    return _from_columns(table, _absolute_rows(table), path, wanted, errors, np.array(numbers, dtype=np.int64))


def _integer(name: str, value: str, path: str | Path, line: int | None) -> int:
    try:
        number = int(value)
    except ValueError:
        raise ParseError(path, f"{name}: not an integer: {value[:40]!r}", line) from None
    if not -_INT64 <= number < 2 * _INT64:  # the server's variables are 64-bit, some unsigned
        raise ParseError(path, f"{name}: {value[:20]}... is beyond any 64-bit counter", line)
    return number


def _fast_values(values: pa.Array) -> np.ndarray:
    """The value column's text (of the rows asked for) as floats, if every one is what `_integer`
    takes without a doubt (a sign and up to 19 digits); else ParseError, for the exact reader."""
    if len(values) and not pc.all(pc.match_substring_regex(values, r"^-?[0-9]{1,19}$")).as_py():
        raise ParseError("status.log", "a value the exact reader should judge")
    return values.cast(pa.string()).cast(pa.float64()).to_numpy()


def _fast_table(data: bytes, path: Path) -> pa.Table:
    end = data.find(b"\n")
    first = data[:end if end >= 0 else len(data)].rstrip(b"\r").decode(errors="replace")
    if first != HEADER:
        raise ParseError(path, f"expected the header {HEADER!r}", 1)
    # Bytes: dictionaries would cost more to build than the rest of the parse, strings a little more.
    # The few distinct times and names are decoded later; rows of one sample are contiguous, so
    # samples are found where the time changes.
    return csv.read_csv(
        pa.BufferReader(data),
        read_options=csv.ReadOptions(use_threads=False),
        parse_options=csv.ParseOptions(delimiter="\t", quote_char=False, double_quote=False),
        convert_options=csv.ConvertOptions(
            column_types={"time": pa.binary(), "variable": pa.binary(), "value": pa.binary(), "kind": pa.binary()},
            strings_can_be_null=False),
    ).combine_chunks()


def _absolute_rows(table: pa.Table) -> np.ndarray | None:
    """Which rows are absolute; None if some row is neither absolute nor delta (an `error` row or
    another kind, which the exact reader records or rejects)."""
    kind = table.column("kind")
    is_absolute = pc.equal(kind, b"absolute")
    if not pc.all(pc.or_(is_absolute, pc.equal(kind, b"delta"))).as_py():
        return None
    return is_absolute.to_numpy()


def _from_columns(table: pa.Table, is_absolute: np.ndarray, path: str | Path, wanted: set[str] | None,
                  errors: list[str], lines: np.ndarray | None = None) -> StatusSamples:
    """Samples from rows of absolute and delta kind, in the order the file holds them; `lines`, each
    row's line number, names the line of a fault (the fast reader has none: `read` then asks the
    exact reader, which does)."""
    if table.num_rows == 0:
        empty = np.array([], dtype="datetime64[ms]")
        return StatusSamples(times=empty, resolution_s=0.001, metrics={}, errors=errors,
                             notes=["status: no sample was recorded"])
    times, starts = _samples(table.column("time").chunk(0), path)
    if len(starts) > 1 and is_absolute[starts[1]:].any():
        raise ParseError(path, "absolute rows after the first sample")
    names, rows, slot = _wanted_rows(table.column("variable").chunk(0), wanted)
    sample = np.searchsorted(starts, rows, side="right") - 1
    _refuse_repeats(slot * len(times) + sample, rows, names, slot, lines, path)
    column = table.column("value").chunk(0).take(rows)
    values = column.to_numpy() if pa.types.is_floating(column.type) else _fast_values(column)
    absolute_row = is_absolute[rows]
    absolute = np.full(len(names), np.nan)
    absolute[slot[absolute_row]] = values[absolute_row]
    moved = ~absolute_row
    flat = slot[moved] * len(times) + sample[moved]
    deltas = np.bincount(flat, weights=values[moved], minlength=len(names) * len(times)).reshape(len(names), len(times))
    notes = [f"status: {len(errors)} samples the server did not answer"] if errors else []
    return StatusSamples(times=times, resolution_s=0.001,
                         metrics={name: deltas[j] for j, name in enumerate(names)}, notes=notes,
                         absolute={name: float(absolute[j]) for j, name in enumerate(names)}, errors=errors)


def _refuse_repeats(cells: np.ndarray, rows: np.ndarray, names: list[str], slot: np.ndarray,
                    lines: np.ndarray | None, path: str | Path) -> None:
    """One row per variable per sample: a second one would be added to the first."""
    _, first, counts = np.unique(cells, return_index=True, return_counts=True)
    if (counts == 1).all():
        return
    repeated = np.ones(len(cells), dtype=bool)
    repeated[first] = False
    at = int(np.flatnonzero(repeated)[0])
    raise ParseError(path, f"{names[slot[at]]} is listed twice in one sample",
                     int(lines[rows[at]]) if lines is not None else None)


def _samples(stamps: pa.Array, path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """The sample times, and the row each sample starts at.

    The trial module writes a sample's rows together, at rising times, so a sample is a run of rows
    with one stamp. Runs whose times do not rise mean two samples share a time or the times go
    backwards; which one is told apart only then.
    """
    changes = pc.not_equal(stamps[1:], stamps[:-1]).to_numpy(zero_copy_only=False)
    starts = np.concatenate(([0], np.flatnonzero(changes) + 1))
    times = _parse_times(_texts(stamps.take(starts)), path)
    if len(times) > 1 and (np.diff(times) <= np.timedelta64(0, "ms")).any():
        distinct = _texts(pc.unique(stamps))
        if len(np.unique(_parse_times(distinct, path))) < len(distinct):
            raise ParseError(path, "two samples share a time stamp")
        raise ParseError(path, "sample times go backwards")
    return times, starts


def _parse_times(stamps: list[str], path: str | Path) -> np.ndarray:
    if not all(map(_looks_like_time, stamps)):
        bad = next(s for s in stamps if not _looks_like_time(s))
        raise ParseError(path, f"not an ISO 8601 UTC time: {bad!r}")
    try:
        return as_datetimes([s[:-1] for s in stamps], "ms")
    except ValueError:
        raise ParseError(path, "a time stamp is not ISO 8601") from None


def _wanted_rows(variables: pa.Array, wanted: set[str] | None) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The variables to return, in the order they first appear; the rows that hold them; each of
    those rows' index into the variables."""
    if wanted is None:
        rows, chosen = np.arange(len(variables)), variables
    else:  # a few of the ~500 names: find their rows before encoding, not after
        matched = pc.is_in(variables, value_set=pa.array(sorted(wanted), pa.binary()))
        rows = np.flatnonzero(matched.to_numpy(zero_copy_only=False))
        chosen = variables.take(rows)
    encoded = pc.dictionary_encode(chosen)
    return _texts(encoded.dictionary), rows, encoded.indices.to_numpy().astype(np.int64)


def _texts(array: pa.Array) -> list[str]:
    try:
        return array.cast(pa.string()).to_pylist()
    except pa.ArrowInvalid:
        raise _NotUtf8() from None


def _looks_like_time(stamp: str) -> bool:
    return len(stamp) >= 20 and stamp[4] == "-" and stamp[10] == "T" and stamp.endswith("Z")
