#!/usr/bin/python
"""Build tpcc-mysql on the host from a source tree already there (tpcc_tool.build)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: innomatrix_tpcc_build
short_description: Build tpcc_load and tpcc_start from a tpcc-mysql source tree on the host
description:
  - Copies the tree at I(src) into I(build_dir) (the source, maybe a git checkout, stays clean)
    and builds there with the link line and C dialect today's toolchains need; a build of the
    same source (by its SHA-256) is reused and reported unchanged.
  - Returns C(bin_dir), C(commit) (none unless I(src) is a git work tree), C(src) and
    C(source_sha256). In check mode nothing is built, and the commit is unknown.
options:
  src: {description: The tpcc-mysql source tree (or the directory a tarball unpacked to), type: path, required: true}
  build_dir: {description: Where the tree is copied and built, type: path, required: true}
author: innomatrix
"""

from pathlib import Path

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.innomatrix_host.tpcc_tool import TpccError, build

# The options as Ansible checks them; DOCUMENTATION describes the same (tests/unit/test_module_docs.py).
ARGUMENT_SPEC = {
    "src": {"type": "path", "required": True},
    "build_dir": {"type": "path", "required": True},
}


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    src, build_dir = module.params["src"], module.params["build_dir"]
    if module.check_mode:
        module.exit_json(changed=True, bin_dir=build_dir, commit=None, src=src, source_sha256=None)
    try:
        built = build(Path(src), Path(build_dir))
    except TpccError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(**built)


if __name__ == "__main__":
    main()
