"""Reading a number a driver printed: a figure no run prints is refused, never read as inf.

sysbench and tpcc_start print every figure with printf ("%4.2f", "%d"), so a plain unsigned
decimal is the only legitimate number; a larger one than any run prints is a damaged log (a digit
too many), not a fast machine. Both drivers' parsers read through here.
"""

from __future__ import annotations

import re

# No figure either driver prints comes near this (7200 s at a million events/s is 7.2e9): a larger
# one is a corrupted log, and float() would quietly turn 400 digits into inf.
ABSURD = 1e15


def _shown(text: str) -> str:
    return f"{text[:20]}{'...' if len(text) > 20 else ''}"


def count(text: str) -> int:
    """A whole number a driver printed; an absurd one raises ValueError."""
    if len(text) > 16 or int(text) >= ABSURD:
        raise ValueError(f"absurd number {_shown(text)}")
    return int(text)


def real(text: str) -> float:
    """A decimal a driver printed; an absurd one (or one too large for a float) raises ValueError."""
    value = float(text)
    if not value < ABSURD:
        raise ValueError(f"absurd number {_shown(text)}")
    return value


def plausible(name: str, value: float, limit: float) -> float:
    """`value` if it is at most `limit`, the most any run prints of `name`; else ValueError."""
    if value > limit:
        raise ValueError(f"{name} {value:g} is more than any run prints ({limit:g})")
    return value


# Sizes as users and my.cnf write them: bytes, or a number with K, M, G or T (powers of 1024).
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?\s*$", re.IGNORECASE)
SIZE_FACTORS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


class SizeError(ValueError):
    """A size that cannot be read; the message is one line for the user."""


def parse_size(name: str, text: object) -> int:
    """'128M', '1.5G', '4GiB' or a byte count → bytes."""
    match = _SIZE.match(str(text))
    if not match:
        raise SizeError(f"{name}: cannot read size {text!r}; use bytes or a number with K, M, G or T (e.g. 128M, 25G)")
    number, unit = match.groups()
    size = int(float(number) * SIZE_FACTORS[unit.upper()])
    if size <= 0:
        raise SizeError(f"{name}: size {text!r} must be larger than zero")
    return size
