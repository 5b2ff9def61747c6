"""host/modules/innomatrix_device_facts.py's verdict, refusals(): what it refuses and in which words,
from facts written here (tests/e2e/test_device_safety.py probes real loop devices)."""

from __future__ import annotations

import pytest
from host_module import load_host_module

device_facts = load_host_module("innomatrix_device_facts")

GIB = 2**30
SHOWN = "/dev/disk/by-id/usb-x (→ /dev/sdb)"


def params(**changes) -> dict:
    return {"min_bytes": 0, "wipe_device": "", **changes}


def facts(**changes) -> dict:
    """A blank, writable 10 GiB disk that nothing uses, named through a symlink."""
    return {"path": "/dev/disk/by-id/usb-x", "real_path": "/dev/sdb", "identity": "serial:S123", "size_bytes": 10 * GIB,
            "read_only": False, "partitions": [], "holders": [], "signature": {}, "wipefs": [], "suite_formatted": False,
            **changes}


def findings(**changes) -> dict:
    return {"foreign_mounts": [], "swaps": [], "protected": [], "listed": [("/etc/fstab", []), ("/etc/crypttab", [])],
            **changes}


def test_a_blank_unused_device_is_not_refused() -> None:
    assert device_facts.refusals(params(min_bytes=GIB), facts(), findings()) == ([], False)


@pytest.mark.parametrize(("unusable", "reason"), [
    ("missing", f"{SHOWN} does not exist"),
    ("not_block", f"{SHOWN} is not a block device"),
    ("partition", f"{SHOWN} is a partition; name the whole device"),
])
def test_a_device_the_probe_could_not_look_into_is_refused(unusable: str, reason: str) -> None:
    seen = {"path": "/dev/disk/by-id/usb-x", "real_path": "/dev/sdb"}
    assert device_facts.refusals(params(), seen, {"unusable": unusable}) == ([reason], False)


def test_no_device_and_a_path_named_as_it_resolves() -> None:
    assert device_facts.refusals(params(), {"path": ""}, {"unusable": "unnamed"}) == (["no device named"], False)
    seen = {"path": "/dev/sdb", "real_path": "/dev/sdb"}
    assert device_facts.refusals(params(), seen, {"unusable": "missing"}) == (["/dev/sdb does not exist"], False)


def test_every_use_of_the_device_is_a_reason_in_order() -> None:
    reasons, wipe = device_facts.refusals(
        params(min_bytes=20 * GIB),
        facts(read_only=True, holders=["dm-0", "md0"]),
        findings(foreign_mounts=[("sdb1", "/srv"), ("sdb", "/mnt/a b")], swaps=["/dev/sdb2"], protected=["/", "/home"],
                 listed=[("/etc/fstab", ["UUID=u1", "/dev/sdb1"]), ("/etc/crypttab", ["PARTUUID=p2"])]),
    )
    assert (reasons, wipe) == ([
        f"{SHOWN} is read-only",
        f"{SHOWN} has 10.0 GiB; the matrix needs about 20.0 GiB (dataset, its pristine copy, redo log, headroom)",
        f"{SHOWN} is mounted (/dev/sdb1 on /srv, /dev/sdb on /mnt/a b)",
        f"{SHOWN} is active swap (/dev/sdb2)",
        f"{SHOWN} is held by dm-0, md0 (LVM, RAID, crypt or loop on top of it)",
        f"{SHOWN} holds /",
        f"{SHOWN} holds /home",
        f"{SHOWN} is listed in /etc/fstab (UUID=u1, /dev/sdb1)",
        f"{SHOWN} is listed in /etc/crypttab (PARTUUID=p2)",
    ], False)


def test_size_is_checked_only_when_a_size_is_asked() -> None:
    assert device_facts.refusals(params(min_bytes=0), facts(size_bytes=0), findings()) == ([], False)
    assert device_facts.refusals(params(min_bytes=10 * GIB), facts(), findings()) == ([], False)


@pytest.mark.parametrize(("seen", "what"), [
    ({"wipefs": ["ext4 at 0x438", "dos at 0x1fe"], "signature": {"TYPE": "ext4"}}, "ext4 at 0x438, dos at 0x1fe"),
    ({"signature": {"TYPE": "xfs"}}, "xfs"),
    ({"signature": {"PTTYPE": "gpt"}}, "gpt"),
    ({"partitions": ["sdb1"]}, "partitions"),
])
def test_foreign_signatures_alone_are_refused_with_the_way_to_wipe(seen: dict, what: str) -> None:
    assert device_facts.refusals(params(), facts(**seen), findings()) == ([
        f"{SHOWN} holds signatures the suite did not write ({what}); to wipe it, pass "
        "-e wipe_device=<its serial or WWN> (S123 here)"
    ], False)


@pytest.mark.parametrize("wipe_device", ["S123", "serial:S123"])
def test_the_devices_own_name_lets_it_be_wiped(wipe_device: str) -> None:
    foreign = facts(signature={"TYPE": "ext4"})
    assert device_facts.refusals(params(wipe_device=wipe_device), foreign, findings()) == ([], True)


def test_another_name_does_not_let_it_be_wiped() -> None:
    reasons, wipe = device_facts.refusals(params(wipe_device="yes"), facts(signature={"TYPE": "ext4"}), findings())
    assert not wipe and reasons[0].endswith("-e wipe_device=<its serial or WWN> (S123 here)")


def test_wiping_is_not_suggested_where_it_would_not_help() -> None:
    reasons, wipe = device_facts.refusals(params(), facts(read_only=True, signature={"TYPE": "ext4"}), findings())
    assert (reasons, wipe) == ([f"{SHOWN} is read-only", f"{SHOWN} holds signatures the suite did not write (ext4)"], False)


def test_the_suites_own_filesystem_is_no_foreign_signature() -> None:
    mine = facts(signature={"TYPE": "xfs", "LABEL": "innomatrix"}, wipefs=["xfs at 0x0"], suite_formatted=True)
    assert device_facts.refusals(params(), mine, findings()) == ([], False)


def test_probe_is_safe_exactly_when_nothing_refuses(monkeypatch) -> None:
    monkeypatch.setattr(device_facts, "gather", lambda p: (facts(safe=False, wipe=False, reasons=[]), findings()))
    assert device_facts.probe(params())["safe"] is True
    monkeypatch.setattr(device_facts, "gather", lambda p: (facts(read_only=True), findings()))
    probed = device_facts.probe(params())
    assert (probed["safe"], probed["wipe"], probed["reasons"]) == (False, False, [f"{SHOWN} is read-only"])
