#!/usr/bin/python
"""Append a session to a JSON record (run.json, host.json) without losing earlier ones."""

from __future__ import annotations

DOCUMENTATION = r"""
module: innomatrix_record
short_description: Create a JSON record or append a session to it, atomically
description:
  - A resumed run is worked on by several sessions; each is appended under C(sessions), so the
    record of the first session (and its start time) is never overwritten.
options:
  path: {description: The JSON file, type: path, required: true}
  first: {description: Fields written when the file is created, type: dict, required: true}
  session: {description: This session's fields, appended to sessions, type: dict, required: true}
author: innomatrix
"""

import json
import os
from pathlib import Path

from ansible.module_utils.basic import AnsibleModule


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "path": {"type": "path", "required": True},
            "first": {"type": "dict", "required": True},
            "session": {"type": "dict", "required": True},
        },
        supports_check_mode=True,
    )
    path = Path(module.params["path"])
    if module.check_mode:
        module.exit_json(changed=True)
    record = dict(module.params["first"], sessions=[])
    if path.exists():
        try:
            record = json.loads(path.read_text())
        except ValueError as exc:
            module.fail_json(msg=f"{path} is not valid JSON ({exc}); move it aside to start a new record")
    record.setdefault("sessions", []).append(module.params["session"])
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    tmp.rename(path)
    module.exit_json(changed=True, sessions=len(record["sessions"]))


if __name__ == "__main__":
    main()
