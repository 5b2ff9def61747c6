"""Parse the trial's status.log: `SHOW GLOBAL STATUS` sampled every interval.

The file is tab-separated `time variable value kind` with a header line. The first sample is
written whole (`absolute`); every later sample lists only the variables that moved since the one
before (`delta`); a sample the server did not answer is one `#error` row (kind `error`). Times are
ISO 8601 UTC with milliseconds.

What comes back: the sample times, and per variable its deltas at every sample (0 where it did
not move, 0 at the first sample) and its absolute value at the first sample, so a counter's rate
is delta / time between samples and a gauge's level is absolute + running sum of deltas.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
from pyarrow import csv

from innomatrix.parse import ParseError, Samples

HEADER = "time\tvariable\tvalue\tkind"
KINDS = ("absolute", "delta", "error")


@dataclass
class StatusSamples(Samples):
    """`metrics` holds deltas; `absolute` the first sample's value (NaN if it had none)."""

    absolute: dict[str, float] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


def read(path: str | Path, variables: Iterable[str] | None = None) -> StatusSamples:
    """`variables` limits what is returned (default: every variable in the file)."""
    path = Path(path)
    wanted = set(variables) if variables is not None else None
    try:
        table = _fast_table(path)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OverflowError):
        table = None  # error rows, a damaged line or an odd value: the exact reader says which
    if table is None:
        return parse(path.read_text(errors="replace"), path, wanted)
    return _from_columns(table, path, wanted, errors=[])


def parse(text: str, path: str | Path = "status.log", variables: Iterable[str] | None = None) -> StatusSamples:
    """The exact reader: every line checked, a bad one named by its line number."""
    wanted = set(variables) if variables is not None else None
    lines = text.splitlines()
    if not lines or lines[0].strip() != HEADER:
        raise ParseError(path, f"expected the header {HEADER!r}", 1)
    times, names, values, kinds, errors = [], [], [], [], []
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
        try:
            number_value = int(value)
        except ValueError:
            raise ParseError(path, f"{name}: not an integer: {value!r}", number) from None
        times.append(stamp)
        names.append(name)
        values.append(number_value)
        kinds.append(kind)
    table = pa.table({
        "time": pa.array(times, pa.string()).dictionary_encode(),
        "variable": pa.array(names, pa.string()).dictionary_encode(),
        "value": pa.array([float(v) for v in values], pa.float64()),
        "kind": pa.array(kinds, pa.string()).dictionary_encode(),
    })
    return _from_columns(table, path, wanted, errors)


def _fast_table(path: Path) -> pa.Table:
    with open(path, "rb") as handle:
        first = handle.readline().rstrip(b"\r\n").decode(errors="replace")
    if first != HEADER:
        raise ParseError(path, f"expected the header {HEADER!r}", 1)
    return csv.read_csv(
        path,
        parse_options=csv.ParseOptions(delimiter="\t", quote_char=False, double_quote=False),
        convert_options=csv.ConvertOptions(
            column_types={"time": pa.dictionary(pa.int32(), pa.string()),
                          "variable": pa.dictionary(pa.int32(), pa.string()),
                          "value": pa.int64(),
                          "kind": pa.dictionary(pa.int32(), pa.string())},
            strings_can_be_null=False),
    )


def _from_columns(table: pa.Table, path: str | Path, wanted: set[str] | None, errors: list[str]) -> StatusSamples:
    table = table.combine_chunks()
    if table.num_rows == 0:
        empty = np.array([], dtype="datetime64[ms]")
        return StatusSamples(times=empty, resolution_s=0.001, metrics={}, errors=errors,
                             notes=["status: no sample was recorded"])
    stamp_of, row_stamp = _dictionary(table, "time")
    name_of, row_name = _dictionary(table, "variable")
    kind_of, row_kind = _dictionary(table, "kind")
    odd = sorted(set(kind_of) - set(KINDS[:2]))
    if odd:
        raise ParseError(path, f"unknown kind {odd[0]!r}")  # `error` rows take the exact reader
    if not all(map(_looks_like_time, stamp_of)):
        bad = next(s for s in stamp_of if not _looks_like_time(s))
        raise ParseError(path, f"not an ISO 8601 UTC time: {bad!r}")
    try:
        stamp_times = np.array([s[:-1] for s in stamp_of], dtype="datetime64[ms]")
    except ValueError:
        raise ParseError(path, "a time stamp is not ISO 8601") from None
    order = np.argsort(stamp_times, kind="stable")
    times = stamp_times[order]
    if len(times) > 1 and (np.diff(times) <= np.timedelta64(0, "ms")).any():
        raise ParseError(path, "two samples share a time stamp")
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    sample = rank[row_stamp]
    if (np.diff(sample) < 0).any():
        raise ParseError(path, "sample times go backwards")
    values = table.column("value").to_numpy().astype(np.float64)
    keep = [i for i, name in enumerate(name_of) if wanted is None or name in wanted]
    slot_of = np.full(len(name_of), -1)
    slot_of[keep] = np.arange(len(keep))
    slot = slot_of[row_name]
    chosen = slot >= 0
    absolute_code = kind_of.index("absolute") if "absolute" in kind_of else -1
    is_absolute = row_kind == absolute_code
    if (sample[is_absolute] != 0).any():
        raise ParseError(path, "absolute rows after the first sample")
    absolute = np.full(len(keep), np.nan)
    absolute[slot[chosen & is_absolute]] = values[chosen & is_absolute]
    moved = chosen & ~is_absolute
    flat = slot[moved] * len(times) + sample[moved]
    deltas = np.bincount(flat, weights=values[moved], minlength=len(keep) * len(times)).reshape(len(keep), len(times))
    notes = [f"status: {len(errors)} samples the server did not answer"] if errors else []
    return StatusSamples(times=times, resolution_s=0.001,
                         metrics={name_of[i]: deltas[j] for j, i in enumerate(keep)}, notes=notes,
                         absolute={name_of[i]: float(absolute[j]) for j, i in enumerate(keep)}, errors=errors)


def _dictionary(table: pa.Table, name: str) -> tuple[list[str], np.ndarray]:
    """A string column as (its distinct values, each row's index into them)."""
    array = table.column(name).chunk(0)
    if not pa.types.is_dictionary(array.type):
        array = array.dictionary_encode()
    return array.dictionary.to_pylist(), array.indices.to_numpy(zero_copy_only=False)


def _looks_like_time(stamp: str) -> bool:
    return len(stamp) >= 20 and stamp[4] == "-" and stamp[10] == "T" and stamp.endswith("Z")
