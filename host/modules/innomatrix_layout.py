#!/usr/bin/python
"""Build or remove a storage layout (md RAID, LVM stripe, LVM cache, bcache) over member devices, the suite's own only."""

from __future__ import annotations

DOCUMENTATION = r"""
module: innomatrix_layout
short_description: Build or remove an md RAID, LVM striped, LVM cache or bcache layout over member devices
description:
  - I(state=present) builds the layout I(name) (a key of innomatrix_host.layouts.LAYOUTS) over
    I(members), in the order given, and returns the layout as the kernel read it back (md level,
    chunk, members with model and serial; the device-mapper table of a logical volume; its kernel
    name; a bcache device's sysfs), the array's path, and the filesystem alignment for it.
  - Every member must be blank or carry only a layout the suite made (an md superblock named
    C(innomatrix:<layout>), the volume group C(innomatrix) tagged C(innomatrix), a bcache whose
    cache set UUID carries the suite's prefix). A bcache layout on a host whose kernel has no
    bcache, or without bcache-tools, is refused in one line. A member of an
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

import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.innomatrix_host import layouts

# make-bcache to a registered, attached bcache device: udev's rule registers both members at once.
REGISTER_TIMEOUT_S = 30

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


def bcache_missing(module: AnsibleModule) -> str | None:
    """Why this host cannot build a bcache, or None: its kernel has none (modprobe bcache fails,
    or leaves no /sys/fs/bcache/register; in check mode, which loads nothing, modinfo finds no
    module and none is loaded), or bcache-tools is not installed."""
    if not module.get_bin_path("make-bcache") or not module.get_bin_path("bcache-super-show"):
        return "bcache-tools (make-bcache, bcache-super-show) is not installed"
    if os.path.exists("/sys/fs/bcache/register"):
        return None
    asked = ["modinfo", "bcache"] if module.check_mode else ["modprobe", "bcache"]
    if not module.get_bin_path(asked[0]):
        return f"this host's kernel has no bcache loaded, and there is no {asked[0]} (kmod) to find one"
    rc, out, err = module.run_command(asked)
    if rc != 0 or not (module.check_mode or os.path.exists("/sys/fs/bcache/register")):
        said = " ".join((err or out).split())[:200]
        return f"this host's kernel has no bcache ({' '.join(asked)} exited {rc}{': ' + said if said else ''})"
    return None


def attach_bcache(module: AnsibleModule, name: str, members: list[str]) -> None:
    """After make-bcache: each member registered (udev's bcache rule does it; a host without the
    rule has it done here), the backing device attached, then the layout's settings written."""
    backing, cache = (os.path.realpath(member) for member in members)
    deadline = time.monotonic() + REGISTER_TIMEOUT_S
    registered_by_hand = False
    while not (layouts.bcache_device(backing) and os.path.exists(f"/sys/class/block/{os.path.basename(backing)}/bcache/cache")):
        if time.monotonic() > deadline:
            module.fail_json(msg=f"bcache over {members[0]} and {members[1]}: the backing device was not registered and "
                                 f"attached within {REGISTER_TIMEOUT_S} s of make-bcache (is udev's bcache rule there?)")
        if not registered_by_hand and time.monotonic() > deadline - REGISTER_TIMEOUT_S / 2:
            # Already registered by udev: the kernel says so and nothing changes.
            for device in (cache, backing):
                module.run_command(layouts.sysfs_write("/sys/fs/bcache/register", device))
            registered_by_hand = True
        time.sleep(0.2)
    run_all(module, [layouts.sysfs_write(path, value) for path, value in layouts.bcache_settings(name, backing)])


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    name, members, state = module.params["name"], module.params["members"], module.params["state"]
    try:
        layouts.check(name, members)
    except layouts.LayoutError as exc:
        module.fail_json(msg=f"refusing layout {name}: {exc}; nothing was changed")
    kind = layouts.LAYOUTS[name]["kind"]
    if kind == layouts.BCACHE and (missing := bcache_missing(module)):
        module.fail_json(msg=f"refusing layout {name}: {missing}; nothing was changed")
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
    undo = [["vgremove", "--yes", "--force", layouts.VG], ["pvremove", "--yes", *members]] if kind == "lvm" else []
    run_all(module, build, undo)
    if kind == layouts.BCACHE:
        attach_bcache(module, name, members)
        read_back = layouts.bcache_read_back(members[0])
        path = read_back["path"]
    else:
        path = layouts.array_path(name)
        read_back = layouts.md_read_back(path) if kind == "md" else layouts.lvm_read_back()
    module.exit_json(**result, layout={"name": name, "path": path, "members_given": members, "read_back": read_back,
                                       "alignment": layouts.alignment(layouts.LAYOUTS[name], len(members))})


if __name__ == "__main__":
    main()
