#!/usr/bin/python
"""Unmount the device under test: stop what the suite left holding it, or name who holds it."""

from __future__ import annotations

DOCUMENTATION = r"""
module: innomatrix_unmount
short_description: Unmount the device under test, naming the processes that hold it busy
description:
  - Processes that the suite started (they carry C(INNOMATRIX_STARTED_BY) in their environment)
    and still hold the mount point are stopped by pid, SIGTERM then SIGKILL after I(grace) seconds.
  - "If the unmount still fails, the error names every holder found in /proc, for example
    C(cannot unmount /mnt/innomatrix: held by mariadbd (pid 1234), bash (pid 99))."
  - Nothing is done when nothing is mounted there; /etc/fstab is never touched.
options:
  path: {description: The mount point, type: path, required: true}
  grace: {description: Seconds a stopped process has to exit before SIGKILL, type: float, default: 30}
author: innomatrix
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.innomatrix_host.mounts import holders, is_mounted, unmount


# The options as Ansible checks them; DOCUMENTATION describes the same (tests/unit/test_module_docs.py).
ARGUMENT_SPEC = {
    "path": {"type": "path", "required": True},
    "grace": {"type": "float", "default": 30},
}


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    path = module.params["path"]
    if module.check_mode:
        mounted = is_mounted(path)
        module.exit_json(changed=mounted, holders=[str(h) for h in holders(path)] if mounted else [])
    result = unmount(path, module.params["grace"])
    if result["error"]:
        module.fail_json(msg=result["error"], stopped=result["stopped"])
    module.exit_json(changed=result["changed"], stopped=result["stopped"])


if __name__ == "__main__":
    main()
