"""Unit tests for the knobs part of innomatrix.plan: the matrix knobs as a user types them, checked and normalised."""

from __future__ import annotations

import pytest

from innomatrix_host import mycnf
from innomatrix import plan as k
from innomatrix.plan import KnobError

G = 1 << 30
M = 1 << 20


def one_line(exc: pytest.ExceptionInfo[BaseException]) -> str:
    message = str(exc.value)
    assert "\n" not in message
    return message


# ---------------------------------------------------------------- constants


def test_accepted_values() -> None:
    assert k.FILESYSTEMS == ("ext4", "xfs")
    assert k.WORKLOADS == ("oltp", "tpcc", "fileio")
    assert mycnf.FLAVORS == ("mariadb", "mysql", "percona")


def test_knob_error_is_a_value_error() -> None:
    assert issubclass(KnobError, ValueError)


# ---------------------------------------------------------------- as_list


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, []),
        ("", []),
        ("   ", []),
        ("ext4", ["ext4"]),
        ("ext4,xfs", ["ext4", "xfs"]),
        (" ext4 , xfs ", ["ext4", "xfs"]),
        ("ext4,,xfs,", ["ext4", "xfs"]),
        (["ext4", "xfs"], ["ext4", "xfs"]),
        ([" ext4 ", "", "xfs"], ["ext4", "xfs"]),
        (("A", "C"), ["A", "C"]),
        ([4, 16], ["4", "16"]),
        (32, ["32"]),
        ([], []),
        (["xfs", "ext4"], ["xfs", "ext4"]),  # the user's order is kept
    ],
)
def test_as_list_accepts_comma_strings_scalars_and_lists(value: object, expected: list[str]) -> None:
    assert k.as_list("knob", value) == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("ext4,ext4", "filesystems='ext4,ext4' names a value twice; list each once"),
        ("ext4, xfs ,ext4", "filesystems='ext4, xfs ,ext4' names a value twice; list each once"),
        (["xfs", "xfs"], "filesystems=['xfs', 'xfs'] names a value twice; list each once"),
        ([" xfs", "xfs "], "filesystems=[' xfs', 'xfs '] names a value twice; list each once"),
        ([4, "4"], "filesystems=[4, '4'] names a value twice; list each once"),
    ],
)
def test_as_list_refuses_duplicates(value: object, message: str) -> None:
    with pytest.raises(KnobError) as exc:
        k.as_list("filesystems", value)
    assert one_line(exc) == message


# ---------------------------------------------------------------- sizes


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("128M", 128 * M),
        ("128m", 128 * M),
        ("1.5G", 1536 * M),
        ("4GiB", 4 * G),
        ("4gib", 4 * G),
        ("4GB", 4 * G),
        ("25G", 25 * G),
        ("512K", 512 << 10),
        ("1T", 1 << 40),
        (" 64 M ", 64 * M),
        ("1048576", 1048576),
        (1048576, 1048576),
        ("0.5K", 512),
        ("100B", 100),
    ],
)
def test_parse_size(text: object, expected: int) -> None:
    assert k.parse_size("bp_sizes", text) == expected


@pytest.mark.parametrize("text", ["", "M", "lots", "-1G", "1.5.5G", "12X", "1e3", "G1", "1 G B x", None])
def test_parse_size_refuses_what_it_cannot_read(text: object) -> None:
    with pytest.raises(KnobError) as exc:
        k.parse_size("bp_sizes", text)
    assert one_line(exc) == (
        f"bp_sizes: cannot read size {text!r}; use bytes or a number with K, M, G or T (e.g. 128M, 25G)"
    )


@pytest.mark.parametrize("text", ["0", "0M", "0.0G", "0.0001K"])
def test_parse_size_refuses_zero(text: str) -> None:
    with pytest.raises(KnobError) as exc:
        k.parse_size("bp_sizes", text)
    assert one_line(exc) == f"bp_sizes: size {text!r} must be larger than zero"


@pytest.mark.parametrize(
    ("size", "label"),
    [
        (64 * M, "64M"),
        (128 * M, "128M"),
        (G, "1G"),
        (1536 * M, "1536M"),
        (25 * G, "25G"),
        (1 << 40, "1T"),
        (3 << 40, "3T"),
        (1 << 50, "1024T"),
        (1 << 10, "1K"),
        (2048, "2K"),
        (1536, "1536"),
        (512, "512"),
        (1, "1"),
    ],
)
def test_size_label_is_the_shortest_exact_label(size: int, label: str) -> None:
    assert k.size_label(size) == label


@pytest.mark.parametrize(("text", "label"), [("1.5G", "1536M"), ("1024M", "1G"), ("4GiB", "4G"), ("65536K", "64M")])
def test_size_label_of_a_parsed_size(text: str, label: str) -> None:
    assert k.size_label(k.parse_size("bp_sizes", text)) == label


# ---------------------------------------------------------------- numbers


@pytest.mark.parametrize(("value", "expected"), [(4, 4), ("4", 4), (4.0, 4), ("4.0", 4), (" 16 ", 16), ("1e3", 1000)])
def test_positive_int(value: object, expected: int) -> None:
    result = k.positive_int("threads", value)
    assert result == expected
    assert type(result) is int


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (0, "duration=0 must be a whole number above zero"),
        ("0", "duration='0' must be a whole number above zero"),
        (-5, "duration=-5 must be a whole number above zero"),
        (1.5, "duration=1.5 must be a whole number above zero"),
        ("four", "duration='four' is not a number; give a whole number above zero"),
        (None, "duration=None is not a number; give a whole number above zero"),
        ("", "duration='' is not a number; give a whole number above zero"),
        ([], "duration=[] is not a number; give a whole number above zero"),
    ],
)
def test_positive_int_refuses(value: object, message: str) -> None:
    with pytest.raises(KnobError) as exc:
        k.positive_int("duration", value)
    assert one_line(exc) == message


@pytest.mark.parametrize(("value", "expected"), [(0, 0), ("0", 0), ("0.0", 0), (0.0, 0), (3600, 3600), ("10", 10)])
def test_non_negative_int(value: object, expected: int) -> None:
    result = k.non_negative_int("warmup", value)
    assert result == expected
    assert type(result) is int


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (-1, "warmup=-1 must be a whole number of zero or more"),
        ("-1", "warmup='-1' must be a whole number of zero or more"),
        (0.5, "warmup=0.5 must be a whole number of zero or more"),
        ("soon", "warmup='soon' is not a number; give a whole number of zero or more"),
        (None, "warmup=None is not a number; give a whole number of zero or more"),
    ],
)
def test_non_negative_int_refuses(value: object, message: str) -> None:
    with pytest.raises(KnobError) as exc:
        k.non_negative_int("warmup", value)
    assert one_line(exc) == message


@pytest.mark.parametrize(
    ("check", "value"),
    [(k.positive_int, "inf"), (k.positive_int, "nan"), (k.positive_int, float("inf")), (k.non_negative_int, "inf")],
)
def test_infinite_or_nan_numbers_are_refused_with_a_knob_error(check, value) -> None:
    with pytest.raises(KnobError):
        check("duration", value)


# ---------------------------------------------------------------- choose, truthy


def test_choose_returns_the_values_unchanged() -> None:
    assert k.choose("filesystems", ["xfs", "ext4"], k.FILESYSTEMS) == ["xfs", "ext4"]


def test_choose_names_every_unknown_value_and_the_accepted_ones() -> None:
    with pytest.raises(KnobError) as exc:
        k.choose("filesystems", ["btrfs", "ext4", "zfs"], k.FILESYSTEMS)
    assert one_line(exc) == "filesystems: unknown btrfs, zfs; accepted: ext4, xfs"


def test_choose_refuses_an_empty_list() -> None:
    with pytest.raises(KnobError) as exc:
        k.choose("variants", [], ["A", "B"])
    assert one_line(exc) == "variants is empty; accepted: A, B"


def test_choose_is_case_sensitive() -> None:
    with pytest.raises(KnobError) as exc:
        k.choose("filesystems", ["XFS"], k.FILESYSTEMS)
    assert one_line(exc) == "filesystems: unknown XFS; accepted: ext4, xfs"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (True, True),
        (False, False),
        ("true", True),
        ("True", True),
        (" yes ", True),
        ("on", True),
        ("1", True),
        (1, True),
        ("false", False),
        ("no", False),
        ("off", False),
        ("0", False),
        (0, False),
        ("", False),
        (None, False),
        ("maybe", False),
    ],
)
def test_truthy(value: object, expected: bool) -> None:
    assert k.truthy(value) is expected


@pytest.mark.parametrize("text", ["9" * 400, "9" * 400 + "G", str(1 << 60), "1048576T"])
def test_parse_size_refuses_a_size_beyond_any_device(text: str) -> None:
    """400 digits would read as inf, and int(inf) raises OverflowError: a one-line refusal instead."""
    assert k.parse_size("bp_sizes", "1048575T") == 1048575 << 40
    with pytest.raises(KnobError) as exc:
        k.parse_size("bp_sizes", text)
    assert one_line(exc) == f"bp_sizes: size {text[:20]!r}... is beyond any device (more than 1 EiB)"
