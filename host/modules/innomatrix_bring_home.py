#!/usr/bin/python
"""Publish a fetched results directory in the controller's tree, after checking it arrived whole."""

from __future__ import annotations

DOCUMENTATION = r"""
module: innomatrix_bring_home
short_description: Verify a fetched archive and publish its directory in the controller's results tree
description:
  - Runs on the controller. The archive's SHA-256 must be the one the host computed; every member
    must be a plain file or directory under the directory it brings, or nothing is written.
  - The directory is published at I(run_dir)/I(path) as the host published it, atomically; an
    earlier one there is kept beside it, renamed after its status, never overwritten.
  - The archive is removed once its directory is in place.
options:
  archive: {description: The fetched archive on the controller, type: path, required: true}
  sha256: {description: The archive's SHA-256 as the host computed it, type: str, required: true}
  run_dir: {description: The run's results directory on the controller, type: path, required: true}
  path: {description: Where the directory goes, relative to run_dir, type: str, required: true}
author: innomatrix
"""

from pathlib import Path

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.innomatrix_host.runtime import TrialError, unpack

# The options as Ansible checks them; DOCUMENTATION describes the same (tests/unit/test_module_docs.py).
ARGUMENT_SPEC = {
    "archive": {"type": "path", "required": True},
    "sha256": {"type": "str", "required": True},
    "run_dir": {"type": "path", "required": True},
    "path": {"type": "str", "required": True},
}


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    p = module.params
    if module.check_mode:
        module.exit_json(changed=False, msg="would publish " + p["path"])
    try:
        kept = unpack(Path(p["archive"]), p["sha256"], Path(p["run_dir"]), p["path"])
    except TrialError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(changed=True, path=str(Path(p["run_dir"]) / p["path"]), kept_aside=kept)


if __name__ == "__main__":
    main()
