"""Reading a number a driver printed: a figure no run prints is refused, never read as inf.

sysbench and tpcc_start print every figure with printf ("%4.2f", "%d"), so a plain unsigned
decimal is the only legitimate number; a larger one than any run prints is a damaged log (a digit
too many), not a fast machine. Both drivers' parsers read through here.
"""

from __future__ import annotations

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
