#!/usr/bin/python
"""Build or remove a storage layout (md RAID, LVM stripe, LVM cache) over member devices, the suite's own only."""

from __future__ import annotations

DOCUMENTATION = r"""
module: innomatrix_layout
short_description: Build or remove an md RAID, LVM striped or LVM cache layout over member devices
description:
  - I(state=present) builds the layout I(name) (a key of innomatrix_host.layouts.LAYOUTS) over
    I(members), in the order given, and returns the layout as the kernel read it back (md level,
    chunk, members with model and serial; the device-mapper table of a logical volume; its kernel
    name), the array's path, and the filesystem alignment for it.
  - Every member must be blank or carry only a layout the suite made (an md superblock named
    C(innomatrix:<layout>), the volume group C(innomatrix) tagged C(innomatrix)). A member of an
    array or volume group the suite did not make, held by a device it did not make, that blkid
    cannot read, or holding any other signature, a partition table or an LVM label in no volume
    group (unless I(wipe) names it), is refused in one line naming it, and nothing is changed.
  - A layout of the suite's found on the members (left half-built by an interrupted run, or by a
    host that lost power) is removed and the layout built anew, never reassembled; the result
    lists what was removed.
  - I(state=absent) removes the suite's layout from the members and touches nothing else.
  - In check mode, nothing is run; the result lists the commands that would be.
  - Whole-device safety (mounts, swap, fstab, the root disk) is innomatrix_device_facts' to prove
    for every member before this module runs.
options:
  name: {description: 'The layout, e.g. md-raid0, md-raid5, md-raid10, lvm-stripe, lvm-cache-writeback (a key of LAYOUTS)', type: str, required: true}
  members: {description: The member devices by any name that resolves to them, type: list, elements: str, required: true}
  state: {description: Build the layout or remove it, type: str, default: present, choices: [present, absent]}
  wipe: {description: "Members whose signatures may be wiped first (the device probe found the suite's filesystem, or wipe_device names them)", type: list, elements: str, default: []}
author: innomatrix
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.innomatrix_host import layouts

# The options as Ansible checks them; DOCUMENTATION describes the same (tests/unit/test_module_docs.py).
ARGUMENT_SPEC = {
    "name": {"type": "str", "required": True},
    "members": {"type": "list", "elements": "str", "required": True},
    "state": {"type": "str", "default": "present", "choices": ["present", "absent"]},
    "wipe": {"type": "list", "elements": "str", "default": []},
}


def run_all(module: AnsibleModule, commands: list[list[str]], undo: list[list[str]] | None = None) -> None:
    """Run the commands in order; at the first that fails, run `undo` (best effort) and fail."""
    for argv in commands:
        rc, out, err = module.run_command(argv)
        if rc != 0:
            last = ((err or out).strip().splitlines() or [""])[-1]
            undone = [" ".join(c) for c in undo or [] if module.run_command(c)[0] == 0]
            module.fail_json(msg=f"{' '.join(argv)} exited {rc}: {last}"
                             + (f" (undone: {'; '.join(undone)})" if undone else ""), failed_command=argv)
    # The array's and the logical volume's device nodes and links come from udev.
    module.run_command(["udevadm", "settle", "--timeout=30"])


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    name, members, state = module.params["name"], module.params["members"], module.params["state"]
    try:
        layouts.check(name, members)
    except layouts.LayoutError as exc:
        module.fail_json(msg=f"refusing layout {name}: {exc}; nothing was changed")
    states = [layouts.member_state(member) for member in members]
    wipe = set(module.params["wipe"])
    reasons = [reason for reason in (layouts.refusal(s, layouts.holder_is_ours, s["member"] in wipe) for s in states)
               if reason]
    if reasons:
        module.fail_json(msg=f"refusing layout {name}: {'; '.join(reasons)}; nothing was changed", members=states)
    removal = layouts.removal_commands(states) + layouts.wipe_commands(states, wipe)
    build = layouts.build_commands(name, members) if state == "present" else []
    result = {"changed": bool(removal or build), "removed": [" ".join(c) for c in removal],
              "commands": [" ".join(c) for c in removal + build]}
    if module.check_mode or not result["changed"]:
        module.exit_json(**result)
    run_all(module, removal)
    if state == "absent":
        module.exit_json(**result)
    # A failed vgcreate would leave the members labelled in no volume group, which the next run
    # could not tell from someone's spares, and a failed lvcreate or lvconvert a volume group with
    # volumes in it: take what was just made off again (each step best effort).
    undo = [["vgremove", "--yes", "--force", layouts.VG], ["pvremove", "--yes", *members]] \
        if layouts.LAYOUTS[name]["kind"] == "lvm" else []
    run_all(module, build, undo)
    path = layouts.array_path(name)
    kind = layouts.LAYOUTS[name]["kind"]
    read_back = layouts.md_read_back(path) if kind == "md" else layouts.lvm_read_back()
    module.exit_json(**result, layout={"name": name, "path": path, "members_given": members, "read_back": read_back,
                                       "alignment": layouts.alignment(layouts.LAYOUTS[name], len(members))})


if __name__ == "__main__":
    main()
