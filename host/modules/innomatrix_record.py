#!/usr/bin/python
"""Append a session to a JSON record (run.json, host.json, smart.json) without losing earlier ones."""

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
  session: {description: This session's fields (or one reading), appended under key, type: dict}
  entries: {description: Several entries (readings) appended under key at once; instead of session, type: list, elements: dict}
  key: {description: The list it is appended to, type: str, default: sessions}
author: innomatrix
"""

from pathlib import Path

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.innomatrix_host.runtime import TrialError, append_record


# The options as Ansible checks them; DOCUMENTATION describes the same (tests/unit/test_module_docs.py).
ARGUMENT_SPEC = {
    "path": {"type": "path", "required": True},
    "first": {"type": "dict", "required": True},
    "session": {"type": "dict"},
    "entries": {"type": "list", "elements": "dict"},
    "key": {"type": "str", "default": "sessions"},
}


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True,
                           mutually_exclusive=[("session", "entries")], required_one_of=[("session", "entries")])
    if module.check_mode:
        module.exit_json(changed=True)
    key, entries = module.params["key"], module.params["entries"]
    try:
        record = append_record(Path(module.params["path"]), module.params["first"], key,
                               *(entries if entries is not None else [module.params["session"]]))
    except TrialError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(changed=True, entries=len(record[key]))


if __name__ == "__main__":
    main()
