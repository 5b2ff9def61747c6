#!/usr/bin/python
"""Record the device's SMART / NVMe health at a point of the run, beside the earlier readings."""

from __future__ import annotations

DOCUMENTATION = r"""
module: innomatrix_smart
short_description: Take SMART / NVMe health readings of the devices under test for smart.json
description:
  - Reads C(smartctl -j -a) (and C(nvme smart-log) for NVMe devices) of each device and appends
    its wear attributes under a label, e.g. C(ext4 before) and C(ext4 after) around a filesystem
    pass, or C(md-raid0-m4 xfs /dev/sdb before) for each member of a layout. A reading labelled
    C(<x> after) also records what changed since C(<x> before).
  - All the devices of a point of the run in one call, as a 12-disk array has 12 readings.
  - A device without SMART (a loop device) is recorded as unsupported with the reason; this
    module never fails a run for want of SMART.
options:
  devices: {description: The devices to read, type: list, elements: path, required: true}
  path: {description: The host's smart.json under results, type: path, required: true}
  label: {description: What is measured, e.g. the pass, type: str, required: true}
  point: {description: Before or after it, type: str, choices: [before, after], required: true}
  name_devices: {description: Name each device in its reading's label (a layout's members), type: bool, default: false}
author: innomatrix
"""

import datetime as dt
import json
from pathlib import Path

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.innomatrix_host.runtime import TrialError, append_record
from ansible.module_utils.innomatrix_host.smart import snapshot, snapshot_delta


# The options as Ansible checks them; DOCUMENTATION describes the same (tests/unit/test_module_docs.py).
ARGUMENT_SPEC = {
    "devices": {"type": "list", "elements": "path", "required": True},
    "path": {"type": "path", "required": True},
    "label": {"type": "str", "required": True},
    "point": {"type": "str", "choices": ["before", "after"], "required": True},
    "name_devices": {"type": "bool", "default": False},
}


def earlier(path: Path, label: str) -> dict | None:
    """The latest reading recorded under `label`, if any."""
    try:
        readings = json.loads(path.read_text()).get("readings", [])
    except (OSError, ValueError):
        return None
    return next((r for r in reversed(readings) if r.get("label") == label), None)


def reading(path: Path, device: str, label: str, point: str) -> dict:
    """One device's reading labelled `<label> <point>`; an "after" carries its change since the "before"."""
    taken = {"label": f"{label} {point}", "time": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
             "smart": snapshot(device)}
    if point == "after":
        before = earlier(path, f"{label} before")
        if before is not None:
            taken["delta"] = snapshot_delta(before["smart"], taken["smart"])
    return taken


def readings(path: Path, devices: list[str], label: str, point: str, name_devices: bool) -> list[dict]:
    """Each device's reading at `point`, labelled `<label> [<device>] <point>`."""
    return [reading(path, device, f"{label} {device}" if name_devices else label, point) for device in devices]


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    p = module.params
    if module.check_mode:
        module.exit_json(changed=True)
    path = Path(p["path"])
    taken = readings(path, p["devices"], p["label"], p["point"], p["name_devices"])
    try:
        append_record(path, {"schema": 1, "device": p["devices"][0]}, "readings", *taken)
    except TrialError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(changed=True, readings=taken)


if __name__ == "__main__":
    main()
