#!/usr/bin/python
"""Probe the device under test, read-only, and say whether the suite may format it."""

from __future__ import annotations

DOCUMENTATION = r"""
module: innomatrix_device_facts
short_description: Read-only probe of a device under test, with a verdict on wiping it
description:
  - Resolves symlinks, then reads /sys, /proc/self/mountinfo and C(blkid -p) to find what the
    device is, who it is (serial, WWN, or a loop device's backing file), whether it or a
    partition of it is mounted, and which signatures it carries.
  - The device is safe to format only when it is a writable block device, nothing on it is
    mounted (other than by the suite at I(mountpoint)) and it is blank or carries the suite's
    own filesystem label. Any failure to probe counts as unsafe.
options:
  path: {description: The device as the user named it, type: str, required: true}
  mountpoint: {description: The suite's own mount point (a mount there is the suite's), type: path, required: true}
  label: {description: The filesystem label the suite writes, type: str, required: true}
  state_dir: {description: Where the suite records the UUIDs of filesystems it made, type: path, required: true}
author: innomatrix
"""

import json
import os
import stat
import subprocess
from pathlib import Path

from ansible.module_utils.basic import AnsibleModule


def sysfs(name: str, leaf: str) -> str:
    try:
        return (Path("/sys/class/block") / name / leaf).read_text().strip()
    except OSError:
        return ""


def identity(name: str) -> str:
    """Who the device is, so a key never mixes results from two disks."""
    backing = sysfs(name, "loop/backing_file")
    if backing:
        return f"loop:{backing}"
    for leaf, kind in (("wwid", "wwn"), ("device/wwid", "wwn"), ("device/serial", "serial"), ("serial", "serial")):
        value = sysfs(name, leaf)
        if value:
            return f"{kind}:{value}"
    return f"model:{sysfs(name, 'device/model') or 'unknown'}:{name}"


def mounts_of(names: set[str]) -> list[tuple[str, str]]:
    """(device name, mount point) for every mount of the device or its partitions."""
    numbers = {sysfs(n, "dev"): n for n in names}
    found = []
    with open("/proc/self/mountinfo") as info:
        for line in info:
            fields = line.split()
            if fields[2] in numbers:
                found.append((numbers[fields[2]], fields[4]))
    return found


def swaps_of(paths: set[str]) -> list[str]:
    with open("/proc/swaps") as swaps:
        return [line.split()[0] for line in swaps.readlines()[1:] if line.split()[0] in paths]


def blkid(path: str) -> dict[str, str]:
    """Low-level probe (-p): sees partition tables, RAID and LVM members, not just filesystems."""
    done = subprocess.run(["blkid", "-p", "-o", "export", path], capture_output=True, text=True)
    # Exit 2 means nothing was found: a blank device.
    if done.returncode == 2:
        return {}
    if done.returncode != 0:
        raise OSError(f"blkid -p {path} failed: {done.stderr.strip() or done.returncode}")
    return dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)


def probe(path: str, mountpoint: str, label: str, state_dir: str) -> dict:
    facts = {"path": path, "safe": False, "reasons": []}
    if not path:
        facts["reasons"].append("no device named")
        return facts
    real = os.path.realpath(path)
    facts["real_path"] = real
    if not os.path.exists(real):
        facts["reasons"].append(f"{path} does not exist")
        return facts
    if not stat.S_ISBLK(os.stat(real).st_mode):
        facts["reasons"].append(f"{path} is not a block device")
        return facts
    name = os.path.basename(real)
    partitions = {p.name for p in Path("/sys/class/block", name).iterdir() if (p / "partition").exists()}
    facts.update(
        name=name,
        identity=identity(name),
        size_bytes=int(sysfs(name, "size") or 0) * 512,
        read_only=sysfs(name, "ro") == "1",
        scheduler=sysfs(name, "queue/scheduler"),
        read_ahead_kb=sysfs(name, "queue/read_ahead_kb"),
        rotational=sysfs(name, "queue/rotational") == "1",
        partitions=sorted(partitions),
        signature=blkid(real),
    )
    facts["mounts"] = mounts_of({name, *partitions})
    ours = [m for m in facts["mounts"] if m == (name, mountpoint)]
    foreign = [m for m in facts["mounts"] if m not in ours]
    facts["mounted_by_suite"] = bool(ours)
    signature = facts["signature"]
    # The label alone could be anyone's; the UUID recorded when the suite ran mkfs is the proof.
    record = Path(state_dir, f"{signature.get('UUID', '-')}.json")
    facts["suite_formatted"] = (
        signature.get("LABEL") == label and signature.get("TYPE") in ("ext4", "xfs") and record.is_file()
    )
    facts["suite_record"] = json.loads(record.read_text()) if facts["suite_formatted"] else {}
    if facts["read_only"]:
        facts["reasons"].append(f"{path} is read-only")
    if foreign:
        facts["reasons"].append(f"{path} is mounted ({', '.join(f'/dev/{d} on {m}' for d, m in foreign)})")
    swaps = swaps_of({real, *(f"/dev/{p}" for p in partitions)})
    if swaps:
        facts["reasons"].append(f"{path} is active swap ({', '.join(swaps)})")
    if partitions:
        facts["reasons"].append(f"{path} has partitions ({', '.join(sorted(partitions))})")
    if signature and not facts["suite_formatted"]:
        what = signature.get("TYPE") or signature.get("PTTYPE") or "unknown"
        facts["reasons"].append(f"{path} holds a {what} signature the suite did not write")
    facts["safe"] = not facts["reasons"]
    return facts


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "path": {"type": "str", "required": True},
            "mountpoint": {"type": "path", "required": True},
            "label": {"type": "str", "required": True},
            "state_dir": {"type": "path", "required": True},
        },
        supports_check_mode=True,
    )
    try:
        params = module.params
        facts = probe(params["path"].strip(), params["mountpoint"], params["label"], params["state_dir"])
    except OSError as exc:
        # Fail closed: a device that cannot be probed is never formatted.
        facts = {"path": module.params["path"], "safe": False, "reasons": [f"cannot probe: {exc}"]}
    module.exit_json(changed=False, device=facts)


if __name__ == "__main__":
    main()
