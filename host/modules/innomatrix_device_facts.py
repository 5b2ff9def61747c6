#!/usr/bin/python
"""Probe the device under test, read-only, and say whether the suite may format it."""

from __future__ import annotations

DOCUMENTATION = r"""
module: innomatrix_device_facts
short_description: Read-only probe of a device under test, with a verdict on wiping it
description:
  - Resolves symlinks, then reads /sys, /proc/self/mountinfo, /proc/swaps, fstab, crypttab,
    C(blkid -p) and C(wipefs --no-act) to find what the device is, who it is (serial, WWN, or
    a loop device's backing file), what uses it and which signatures it carries.
  - Never safe, whatever the user says, when it is missing, not a block device, read-only,
    smaller than needed, mounted (other than by the suite at I(mountpoint)), active swap, held
    by another device, listed in fstab or crypttab, or holding a protected path. A signature
    the suite did not write (filesystem, partition table, LVM, RAID, LUKS) is refused unless
    I(wipe_device) names the device's serial, WWN or (for a loop device) backing file.
  - Any failure to probe counts as unsafe.
  - With I(suite_layouts), for a member of a storage layout, what the suite's own layout left on
    the device (an md superblock named C(innomatrix:*), a physical volume of the suite's tagged
    volume group, and the arrays or volumes of those that hold it) is not refused, as the layout
    module removes it. Any other array, volume group or holder still is.
options:
  path: {description: The device as the user named it, type: str, required: true}
  mountpoint: {description: The suite's own mount point (a mount there is the suite's), type: path, required: true}
  label: {description: The filesystem label the suite writes, type: str, required: true}
  state_dir: {description: Where the suite records the UUIDs of filesystems it made, type: path, required: true}
  protected_paths: {description: Paths whose filesystems must not live on the device, type: list, elements: path, default: []}
  min_bytes: {description: Smallest device size the matrix needs (0 skips the check), type: int, default: 0}
  wipe_device: {description: The device's serial, WWN or loop backing file, to allow wiping foreign signatures, type: str, default: ""}
  fstab: {description: fstab to check, type: path, default: /etc/fstab}
  crypttab: {description: crypttab to check, type: path, default: /etc/crypttab}
  suite_layouts: {description: Accept the suite's own md or LVM layout on the device (a layout member), type: bool, default: false}
author: innomatrix
"""

import json
import os
import stat
import subprocess
from pathlib import Path

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.innomatrix_host import layouts


# The options as Ansible checks them; DOCUMENTATION describes the same (tests/unit/test_module_docs.py).
ARGUMENT_SPEC = {
    "path": {"type": "str", "required": True},
    "mountpoint": {"type": "path", "required": True},
    "label": {"type": "str", "required": True},
    "state_dir": {"type": "path", "required": True},
    "protected_paths": {"type": "list", "elements": "path", "default": []},
    "min_bytes": {"type": "int", "default": 0},
    "wipe_device": {"type": "str", "default": ""},
    "fstab": {"type": "path", "default": "/etc/fstab"},
    "crypttab": {"type": "path", "default": "/etc/crypttab"},
    "suite_layouts": {"type": "bool", "default": False},
}


def identity(name: str) -> str:
    """Who the device is, so a key never mixes results from two disks."""
    backing = layouts.sysfs(name, "loop/backing_file")
    if backing:
        return f"loop:{backing}"
    for leaf, kind in (("wwid", "wwn"), ("device/wwid", "wwn"), ("device/serial", "serial"), ("serial", "serial")):
        value = layouts.sysfs(name, leaf)
        if value:
            return f"{kind}:{value}"
    return f"model:{layouts.sysfs(name, 'device/model') or 'unknown'}:{name}"


def holders(names: set[str]) -> set[str]:
    return {holder for name in names for holder in layouts.holders_of(name)}


def mounts_of(names: set[str]) -> list[tuple[str, str]]:
    """(device name, mount point) for every mount of the device, its partitions or holders."""
    numbers = {layouts.sysfs(n, "dev"): n for n in names}
    found = []
    with open("/proc/self/mountinfo") as info:
        for line in info:
            fields = line.split()
            if fields[2] in numbers:
                found.append((numbers[fields[2]], fields[4].replace("\\040", " ")))
    return found


def swaps_of(paths: set[str]) -> list[str]:
    with open("/proc/swaps") as swaps:
        return [line.split()[0] for line in swaps.readlines()[1:] if os.path.realpath(line.split()[0]) in paths]


def blkid(path: str) -> dict[str, str]:
    """Low-level probe (-p): sees partition tables, RAID and LVM members, not just filesystems."""
    done = subprocess.run(["blkid", "-p", "-o", "export", path], capture_output=True, text=True)
    # Exit 2 means nothing was found: a blank device.
    if done.returncode == 2:
        return {}
    if done.returncode != 0:
        raise OSError(f"blkid -p {path} failed: {done.stderr.strip() or done.returncode}")
    return dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)


def wipefs_signatures(path: str) -> list[str]:
    """What `wipefs -a` would erase: a second opinion beside blkid."""
    done = subprocess.run(["wipefs", "--no-act", "--json", path], capture_output=True, text=True)
    if done.returncode != 0:
        raise OSError(f"wipefs --no-act {path} failed: {done.stderr.strip() or done.returncode}")
    if not done.stdout.strip():
        return []
    return [f"{s.get('type')} at {s.get('offset')}" for s in json.loads(done.stdout).get("signatures", [])]


def device_of(path: str) -> str | None:
    """The whole-disk name that holds a path's filesystem (sda for /dev/sda2), if it is a block device."""
    probe = Path(path)
    while not probe.exists():
        probe = probe.parent
    st = os.stat(probe)
    node = Path(f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}")
    if not node.exists():
        return None
    real = node.resolve()
    return real.parent.name if (real / "partition").exists() else real.name


def listed_in(table: str, column: int, real_paths: set[str], ids: dict[str, set[str]]) -> list[str]:
    """Lines of fstab or crypttab whose device field names this device, by path, UUID or label."""
    try:
        lines = Path(table).read_text().splitlines()
    except FileNotFoundError:
        return []
    hits = []
    for line in lines:
        fields = line.split()
        if not fields or fields[0].startswith("#") or len(fields) <= column:
            continue
        spec = fields[column]
        key, _, value = spec.partition("=")
        if key in ids and value.strip('"') in ids[key]:
            hits.append(spec)
        elif spec.startswith("/") and os.path.realpath(spec) in real_paths:
            hits.append(spec)
    return hits


# Why the probe could not look further than the name; refusals() words each for the user.
UNUSABLE = {
    "unnamed": "no device named",
    "missing": "{shown} does not exist",
    "not_block": "{shown} is not a block device",
    "partition": "{shown} is a partition; name the whole device",
}


def gather(p: dict) -> tuple[dict, dict]:
    """Read what the device is and what uses it, judging nothing.

    Returns the facts the module reports and the findings only refusals() reads: why the probe
    stopped early ("unusable", a key of UNUSABLE), or the mounts, swaps, protected paths and
    fstab or crypttab lines that involve the device.
    """
    path = p["path"].strip()
    facts = {"path": path, "safe": False, "wipe": False, "reasons": []}
    if not path:
        return facts, {"unusable": "unnamed"}
    real = os.path.realpath(path)
    facts["real_path"] = real
    if not os.path.exists(real):
        return facts, {"unusable": "missing"}
    if not stat.S_ISBLK(os.stat(real).st_mode):
        return facts, {"unusable": "not_block"}
    name = os.path.basename(real)
    if (layouts.SYS_BLOCK / name / "partition").exists():
        return facts, {"unusable": "partition"}
    partitions = set(layouts.partitions_of(name))
    users = holders({name, *partitions})
    members = {name, *partitions}
    signatures = {n: blkid(f"/dev/{n}") for n in sorted(members)}
    facts.update(
        name=name,
        identity=identity(name),
        # What kind of disk it is (hosts of a fleet with the same model are alike); "" where the
        # kernel names none (a loop device, a virtio disk).
        model=layouts.sysfs(name, "device/model"),
        size_bytes=int(layouts.sysfs(name, "size") or 0) * 512,
        read_only=layouts.sysfs(name, "ro") == "1",
        scheduler=layouts.sysfs(name, "queue/scheduler"),
        read_ahead_kb=layouts.sysfs(name, "queue/read_ahead_kb"),
        rotational=layouts.sysfs(name, "queue/rotational") == "1",
        partitions=sorted(partitions),
        holders=sorted(users),
        signature=signatures[name],
        wipefs=wipefs_signatures(real),
    )
    mounts = mounts_of(members | users)
    facts["mounted_by_suite"] = (name, p["mountpoint"]) in mounts
    # A layout member: the suite's own arrays or volumes over it may hold it, even mounted where
    # the suite mounts (a run that was interrupted); the layout module removes them.
    suite_holders = {h for h in users if layouts.holder_is_ours(h)} if p.get("suite_layouts") else set()
    if suite_holders:
        facts["holders"] = sorted(users - suite_holders)
        mounts = [m for m in mounts if not (m[0] in suite_holders and m[1] == p["mountpoint"])]
    ids = {key: {s[key] for s in signatures.values() if key in s} for key in ("UUID", "LABEL", "PARTUUID", "PARTLABEL")}
    real_paths = {f"/dev/{n}" for n in members}
    findings = {
        "foreign_mounts": [m for m in mounts if m != (name, p["mountpoint"])],
        "swaps": swaps_of({f"/dev/{n}" for n in members | users}),
        "protected": [protected for protected in p["protected_paths"] if device_of(protected) in members | users],
        "listed": [(table, listed_in(table, column, real_paths, ids))
                   for table, column in ((p["fstab"], 0), (p["crypttab"], 1))],
    }

    # The label alone could be anyone's; the UUID recorded when the suite ran mkfs is the proof.
    signature = signatures[name]
    record = Path(p["state_dir"], f"{signature.get('UUID', '-')}.json")
    facts["suite_formatted"] = (
        signature.get("LABEL") == p["label"] and signature.get("TYPE") in ("ext4", "xfs") and record.is_file()
    )
    facts["suite_record"] = json.loads(record.read_text()) if facts["suite_formatted"] else {}
    facts["suite_layout"] = bool(p.get("suite_layouts")) and layouts.ours(layouts.member_state(real))
    return facts, findings


def refusals(p: dict, facts: dict, findings: dict) -> tuple[list[str], bool]:
    """Why the suite may not format the device, one line each, and whether wipe_device lets it
    wipe the signatures the suite did not write. Pure: reads only what gather() returned."""
    path, real = facts["path"], facts.get("real_path", facts["path"])
    shown = path if real == path else f"{path} (→ {real})"
    if "unusable" in findings:
        return [UNUSABLE[findings["unusable"]].format(shown=shown)], False
    reasons = []
    if facts["read_only"]:
        reasons.append(f"{shown} is read-only")
    if p["min_bytes"] and facts["size_bytes"] < p["min_bytes"]:
        reasons.append(f"{shown} has {facts['size_bytes'] / 2**30:.1f} GiB; the matrix needs about "
                       f"{p['min_bytes'] / 2**30:.1f} GiB (dataset, its pristine copy, redo log, headroom)")
    if findings["foreign_mounts"]:
        reasons.append(f"{shown} is mounted ({', '.join(f'/dev/{d} on {m}' for d, m in findings['foreign_mounts'])})")
    if findings["swaps"]:
        reasons.append(f"{shown} is active swap ({', '.join(findings['swaps'])})")
    if facts["holders"]:
        reasons.append(f"{shown} is held by {', '.join(facts['holders'])} (LVM, RAID, crypt or loop on top of it)")
    reasons += [f"{shown} holds {protected}" for protected in findings["protected"]]
    reasons += [f"{shown} is listed in {table} ({', '.join(hits)})" for table, hits in findings["listed"] if hits]

    signature = facts["signature"]
    if facts["suite_formatted"] or facts.get("suite_layout") or not (signature or facts["wipefs"] or facts["partitions"]):
        return reasons, False
    what = ", ".join(facts["wipefs"]) or signature.get("TYPE") or signature.get("PTTYPE") or "partitions"
    own_name = facts["identity"].split(":", 1)[1]
    if p["wipe_device"] and p["wipe_device"] in {facts["identity"], own_name}:
        return reasons, True
    if reasons:
        # wipe_device cannot lift the reasons above: don't suggest it.
        reasons.append(f"{shown} holds signatures the suite did not write ({what})")
    else:
        reasons.append(
            f"{shown} holds signatures the suite did not write ({what}); to wipe it, pass "
            f"-e wipe_device=<its serial or WWN> ({own_name} here)"
        )
    return reasons, False


def probe(p: dict) -> dict:
    """The device's facts with the verdict: safe, the reasons it is not, whether to wipe it."""
    facts, findings = gather(p)
    facts["reasons"], facts["wipe"] = refusals(p, facts, findings)
    facts["safe"] = not facts["reasons"]
    return facts


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    try:
        facts = probe(module.params)
    except (OSError, ValueError) as exc:
        # Fail closed: a device that cannot be probed is never formatted.
        facts = {"path": module.params["path"], "safe": False, "wipe": False, "reasons": [f"cannot probe it: {exc}"]}
    module.exit_json(changed=False, device=facts)


if __name__ == "__main__":
    main()
