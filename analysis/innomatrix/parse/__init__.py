"""Parsers for driver and collector output.

`sysbench` is shipped to benchmark hosts and stays standard-library only. The collector parsers
(`vmstat`, `iostat`, `status`) run on the controller and share what is defined here: the error
they raise and the shape of what they return.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is for the controller; sysbench.py, beside this file, also runs on hosts
    import numpy as np


class ParseError(ValueError):
    """A file that cannot be read as what it claims to be; names the file and, when known, the line."""

    def __init__(self, path: str | Path, message: str, line: int | None = None):
        self.path, self.line, self.message = str(path), line, message
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")

    def __reduce__(self) -> tuple:
        # Rebuilt from its parts when it crosses a process boundary (parallel loading).
        return (type(self), (self.path, self.message, self.line))


@dataclass
class Samples:
    """One collector's samples: when each was taken and one array per metric, all the same length.

    `times` are datetime64[ms] in `zone` (UTC unless the tool stamped local time and named its
    zone); `resolution_s` is how finely the tool stamped them (a stamp of whole seconds may be up
    to a second before the true time); `notes` say what was dropped or assumed, for the report;
    `marks` what makes the trial's figures from this file doubtful (the trial is flagged with them).
    """

    times: np.ndarray
    resolution_s: float
    metrics: dict[str, np.ndarray]
    notes: list[str] = field(default_factory=list)
    zone: str = "UTC"
    marks: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.times)


def as_datetimes(stamps, unit: str) -> np.ndarray:
    """Text stamps as datetime64[unit]. A stamp numpy reads only with a warning (an offset such as
    "+05:00", which it drops) is none a collector writes: ValueError, as for one it cannot read,
    and never a warning on the report's terminal."""
    import numpy as np

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            return np.asarray(stamps).astype(f"datetime64[{unit}]")
        except Warning as warning:
            raise ValueError(str(warning)) from None


def line_of(text: str, position: int) -> int:
    """1-based line number of a character position."""
    return text.count("\n", 0, position) + 1
