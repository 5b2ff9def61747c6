#!/usr/bin/python
"""Record the device's SMART / NVMe health at a point of the run, beside the earlier readings."""

from __future__ import annotations

DOCUMENTATION = r"""
module: innomatrix_smart
short_description: Append a SMART / NVMe health reading of the device under test to smart.json
description:
  - Reads C(smartctl -j -a) (and C(nvme smart-log) for NVMe devices) and appends the wear
    attributes under a label, e.g. C(ext4 before) and C(ext4 after) around a filesystem pass.
    A reading labelled C(<x> after) also records what changed since C(<x> before).
  - A device without SMART (a loop device) is recorded as unsupported with the reason; this
    module never fails a run for want of SMART.
options:
  device: {description: The device under test, type: path, required: true}
  path: {description: The host's smart.json under results, type: path, required: true}
  label: {description: Which point of the run this is, type: str, required: true}
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
    "device": {"type": "path", "required": True},
    "path": {"type": "path", "required": True},
    "label": {"type": "str", "required": True},
}


def earlier(path: Path, label: str) -> dict | None:
    """The latest reading recorded under `label`, if any."""
    try:
        readings = json.loads(path.read_text()).get("readings", [])
    except (OSError, ValueError):
        return None
    return next((r for r in reversed(readings) if r.get("label") == label), None)


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    p = module.params
    if module.check_mode:
        module.exit_json(changed=True)
    path = Path(p["path"])
    reading = {"label": p["label"], "time": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
               "smart": snapshot(p["device"])}
    if p["label"].endswith(" after"):
        before = earlier(path, p["label"][: -len("after")] + "before")
        if before is not None:
            reading["delta"] = snapshot_delta(before["smart"], reading["smart"])
    try:
        append_record(path, {"schema": 1, "device": p["device"]}, "readings", reading)
    except TrialError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(changed=True, status=reading["smart"].get("status"), reason=reading["smart"].get("reason"),
                     reading=reading)


if __name__ == "__main__":
    main()
