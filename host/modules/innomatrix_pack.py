#!/usr/bin/python
"""Pack a finished directory of the host's staging tree for the controller to fetch."""

from __future__ import annotations

DOCUMENTATION = r"""
module: innomatrix_pack
short_description: Pack one results directory on the host, once, for the controller to fetch
description:
  - The host writes each cell (and each dataset load) into its staging tree; this packs one such
    directory into a gzip tar in I(outbox), 0600 and owned by I(owner) (the login user), so the
    controller fetches it over the connection itself and never reads it through become.
  - Returns the archive's path, its SHA-256 (checked on the controller before anything is
    published) and its size.
options:
  root: {description: The host's staging tree of the run, type: path, required: true}
  path: {description: The directory to pack, relative to root (a cell's or a load's path), type: str, required: true}
  outbox: {description: Where the archive is written, type: path, required: true}
  owner: {description: The login user who fetches it; empty leaves the owner as is, type: str, default: ""}
author: innomatrix
"""

from pathlib import Path

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.innomatrix_host.runtime import TrialError, pack

# The options as Ansible checks them; DOCUMENTATION describes the same (tests/unit/test_module_docs.py).
ARGUMENT_SPEC = {
    "root": {"type": "path", "required": True},
    "path": {"type": "str", "required": True},
    "outbox": {"type": "path", "required": True},
    "owner": {"type": "str", "default": ""},
}


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    p = module.params
    if module.check_mode:
        module.exit_json(changed=False, msg="would pack " + p["path"])
    try:
        packed = pack(Path(p["root"]), p["path"], Path(p["outbox"]), p["owner"] or None)
    except (TrialError, OSError, LookupError) as exc:
        module.fail_json(msg=f"cannot pack {p['path']}: {exc}")
    module.exit_json(changed=True, **packed)


if __name__ == "__main__":
    main()
