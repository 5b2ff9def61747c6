"""host/modules/innomatrix_smart.py: the readings of a pass's devices at one point, labelled so that
each "after" finds its own "before" (a layout's members each under their own name), and appended
to smart.json at once, after every earlier reading. Real smartctl on devices this machine lacks:
each reading is "unsupported" with smartctl's reason, as on a loop device."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from host_module import load_host_module
from innomatrix_host.runtime import append_record

smart_module = load_host_module("innomatrix_smart")

pytestmark = pytest.mark.skipif(shutil.which("smartctl") is None, reason="smartctl is not installed (make test installs it)")
MEMBERS = ["/dev/disk/by-id/im-absent-1", "/dev/disk/by-id/im-absent-2"]


def take(path: Path, point: str, label: str = "md-raid0-m2 xfs") -> list[dict]:
    """What the module does at a point of a layout's pass: every member read, then appended."""
    readings = smart_module.readings(path, MEMBERS, label, point, name_devices=True)
    append_record(path, {"schema": 1, "device": MEMBERS[0]}, "readings", *readings)
    return readings


def test_each_member_after_finds_its_own_before(tmp_path: Path) -> None:
    path = tmp_path / "smart.json"
    before = take(path, "before")
    assert [r["label"] for r in before] == [f"md-raid0-m2 xfs {m} before" for m in MEMBERS]
    assert all("delta" not in r and r["smart"]["status"] == "unsupported" and r["smart"]["reason"] for r in before)
    after = take(path, "after")
    assert [r["label"] for r in after] == [f"md-raid0-m2 xfs {m} after" for m in MEMBERS]
    # paired: a delta is taken (None: two unsupported readings have nothing to subtract)
    assert all("delta" in r and r["delta"] is None for r in after)
    # a plain device's pass is labelled without the device; an "after" of another pass has no
    # "before" to pair with
    [lone] = smart_module.readings(path, MEMBERS[:1], "ext4", "after", name_devices=False)
    assert lone["label"] == "ext4 after" and "delta" not in lone


def test_the_readings_of_a_point_are_appended_after_every_earlier_one(tmp_path: Path) -> None:
    path = tmp_path / "smart.json"
    take(path, "before", "one")
    take(path, "before", "two")
    labels = [r["label"] for r in json.loads(path.read_text())["readings"]]
    assert labels == [f"{pass_} {m} before" for pass_ in ("one", "two") for m in MEMBERS]
