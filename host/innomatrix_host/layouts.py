"""Storage layouts over several member devices: md RAID and LVM stripes, as seed 001 compared them,
and a flash cache in front of a slow disk (dm-cache and dm-writecache through LVM, and bcache), as
seed 000 did.

A layout is data (LAYOUTS: its kind, RAID level and chunk or stripe size); this module turns one,
with its members, into the commands that build and remove it, reads back what the kernel made,
and tells the suite's own leftovers from anything else on a member:

- what the suite builds carries its tag: an md array is created with homehost TAG, so its
  superblock's name reads `innomatrix:<array>`; an LVM volume group is named VG and tagged TAG;
  a bcache's cache set UUID begins with BCACHE_CSET_PREFIX (both members' superblocks carry it)
  and its backing device is labelled `innomatrix:<layout>`;
- a member that belongs to an array, a volume group or a device-mapper target that is not tagged
  so is never touched: the layout is refused, naming the member and what holds it;
- a layout the suite left half-built (a run that was interrupted, a host that lost power) is
  removed and built anew, never reassembled: a benchmark wants the layout it asked for, freshly
  made, not whatever an interrupted create left (say so in the plan).

Standard library only: it runs on the benchmark host, inside Ansible's module wrapper.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

TAG = "innomatrix"
VG, LV = "innomatrix", "bench"
SYS_BLOCK = Path("/sys/class/block")
SYS_BCACHE = Path("/sys/fs/bcache")
# How long a cold bcache's detach may take: bcache writes every dirty block back to the slow disk
# first (a writeback cache holds up to writeback_percent of itself dirty).
BCACHE_DETACH_TIMEOUT_S = 3600

# Each entry: how it is built (md, or lvm and its logical volume's type), the RAID level, the chunk
# or stripe size in KiB, the md metadata version; fewest members.
#
# The cache family is over exactly two members, in the order the host lists its devices: the
# backing device (the slow disk) first, the cache device (the flash) second. Seed 000's three-way
# comparison is these layouts side by side over the same two members: the backing device alone,
# the cache device alone (a linear volume on one of them; the other is in the volume group, unused),
# and the cache in front of the backing device. A cache takes the whole cache device (LVM's
# cachevol: data and metadata on one volume): `chunk_kib` is dm-cache's block, `settings` its
# policy's or dm-writecache's tunables (writecache's watermarks are its dirty threshold, in per
# cent of the cache's blocks). A cold twin says `start: cold` (CACHE_STARTS; no `start` is warm).
LAYOUTS: dict[str, dict[str, Any]] = {
    "md-raid0": {"kind": "md", "level": 0, "chunk_kib": 512, "metadata": "1.2", "min_members": 1},
    "md-raid5": {"kind": "md", "level": 5, "chunk_kib": 512, "metadata": "1.2", "min_members": 3},
    "md-raid10": {"kind": "md", "level": 10, "chunk_kib": 512, "metadata": "1.2", "min_members": 2},
    "lvm-stripe": {"kind": "lvm", "type": "striped", "stripe_kib": 64, "min_members": 1},
    "lvm-backing-only": {"kind": "lvm", "type": "linear", "on_member": 0, "min_members": 2, "fixed_members": 2},
    "lvm-cache-device-only": {"kind": "lvm", "type": "linear", "on_member": 1, "min_members": 2,
                              "fixed_members": 2},
    "lvm-cache-writeback": {"kind": "lvm", "type": "cache", "cache_mode": "writeback", "policy": "smq",
                            "chunk_kib": 64, "settings": {}, "min_members": 2, "fixed_members": 2},
    "lvm-cache-writethrough": {"kind": "lvm", "type": "cache", "cache_mode": "writethrough", "policy": "smq",
                               "chunk_kib": 64, "settings": {}, "min_members": 2, "fixed_members": 2},
    "lvm-writecache": {"kind": "lvm", "type": "writecache",
                       "settings": {"high_watermark": 50, "low_watermark": 45}, "min_members": 2,
                       "fixed_members": 2},
    # bcache, where the host's kernel has it: its backing device's tunables (written to
    # /sys/block/bcacheN/bcache/ once it is made): the dirty share of the cache writeback aims at
    # (the kernel's default), and the size from which a sequential stream goes around the cache.
    # That is 0 here, not the kernel's 4M: every write goes through the cache, as dm-cache's do and
    # as seed 000's FlashCache did by default; with 4M the load's and each trial's restore of the
    # datadir would go around it, and no trial would find the cache warm as the method says.
    "bcache-writeback": {"kind": "bcache", "type": "bcache", "cache_mode": "writeback",
                         "settings": {"writeback_percent": 10, "sequential_cutoff": 0}, "min_members": 2,
                         "fixed_members": 2},
    "bcache-writethrough": {"kind": "bcache", "type": "bcache", "cache_mode": "writethrough",
                            "settings": {"writeback_percent": 10, "sequential_cutoff": 0}, "min_members": 2,
                            "fixed_members": 2},
}
# A cache's state when a trial begins, part of the method (seed 000's trials ran two hours for it):
# warm, as the dataset's load, the trials before and the trial's own restore of the datadir left it
# (all went through the cache; a fileio trial restores nothing); cold, made anew just before the
# trial's server starts (detached, its dirty blocks written back, its volume made again and
# attached with the same settings), so that the trial measures the cache filling. Each cache layout
# has a cold twin, `<name>-cold`: the layout's name is in every cell's key and path, so warm and
# cold trials are never one cell. A warm layout carries no `start`: its cells' keys are those it
# had before cold twins existed.
# A bcache's buckets outlive a detach: its cold start is a cache set made anew on the cache device.
CACHE_STARTS = ("warm", "cold")
CACHE_TYPES = ("cache", "writecache")
BCACHE = "bcache"
LAYOUTS.update({f"{name}-cold": {**layout, "start": "cold"} for name, layout in list(LAYOUTS.items())
                if layout.get("type") in (*CACHE_TYPES, BCACHE)})


def cache_start(name: str) -> str | None:
    """How a trial finds the cache of layout `name` (CACHE_STARTS), None for a layout without one."""
    layout = LAYOUTS.get(name, {})
    return layout.get("start", "warm") if layout.get("type") in (*CACHE_TYPES, BCACHE) else None


# The cache volume LVM attaches to the benchmark's volume (its cachevol).
CACHE_LV = "cache"
# The device-mapper names of the volumes the suite makes: its volume, the hidden ones a cache
# adds (the origin under dm-cache or dm-writecache; the cache volume and, for dm-cache, its data
# and metadata layers). Nothing else in a volume group called innomatrix is taken for the suite's.
SUITE_DM_NAMES = frozenset(f"{VG}-{name}" for name in (
    LV, f"{LV}_corig", f"{LV}_wcorig", f"{CACHE_LV}_cvol", f"{CACHE_LV}_cvol-cdata", f"{CACHE_LV}_cvol-cmeta",
    # the cache volume on its own: before it is attached, or when a cold start's remaking stopped part-way
    CACHE_LV))
# What each member of a two-member cache layout is, in order.
CACHE_ROLES = ("backing", "cache")


# The superblock names the suite's arrays carry: exactly these, never any `innomatrix:` array
# (mdadm's default homehost is the hostname, and a user's host may be called innomatrix).
SUITE_MD_NAMES = frozenset(f"{TAG}:{name}" for name, layout in LAYOUTS.items() if layout["kind"] == "md")
# A bcache's tag: its cache set UUID begins with "innomatrix" in ASCII hex (make-bcache takes the
# UUID; it has no label of its own for a cache device), and its backing device's label is its
# layout's name after the tag (bcache keeps the label in the backing device's superblock).
BCACHE_CSET_PREFIX = "696e6e6f-6d61-7472-6978-"


def bcache_label(name: str) -> str:
    """The label of a bcache layout's backing device: the tag and the layout's name, a cold twin's
    as its warm layout's (bcache takes 32 bytes of label, and `innomatrix:bcache-writethrough-cold`
    is 35; the cold start is in the cell's key)."""
    return f"{TAG}:{name.removesuffix('-cold')}"


SUITE_BCACHE_LABELS = frozenset(bcache_label(name) for name, layout in LAYOUTS.items() if layout["kind"] == BCACHE)


class LayoutError(ValueError):
    """A layout that cannot be built as asked, or a member it may not touch: one line for the user."""


def data_members(layout: dict[str, Any], members: int) -> int:
    """The stripe width in chunks, as md advertises it (its queue's optimal_io_size ÷ the chunk):
    the members whose chunks hold data in one stripe, except over a RAID10 of an odd count. A
    layout that stripes over none (a linear volume, a cache in front of a disk) has one."""
    if not striped(layout):
        return 1
    if layout["kind"] == "md" and layout["level"] == 5:
        return members - 1
    if layout["kind"] == "md" and layout["level"] == 10:
        # Two copies of each chunk ("near" layout): an even count stripes over half the members;
        # over an odd count the copies wander across rows, and md's own hint (the queue's
        # optimal_io_size, what mkfs reads when told nothing) is then a chunk on every member.
        return members // 2 if members % 2 == 0 else members
    return members


def striped(layout: dict[str, Any]) -> bool:
    """Whether the layout spreads its data over its members in chunks (md RAID, an LVM stripe)."""
    return layout["kind"] == "md" or layout.get("type") == "striped"


def stripe_unit_kib(layout: dict[str, Any]) -> int | None:
    """The chunk or stripe size, None for a layout that stripes over nothing."""
    if not striped(layout):
        return None
    return int(layout["chunk_kib"] if layout["kind"] == "md" else layout["stripe_kib"])


def member_roles(layout: dict[str, Any], members: Sequence[str]) -> list[str]:
    """`role: member` for a cache layout's members (backing first, then cache); the members as
    they are for any other layout."""
    if layout.get("fixed_members") == len(CACHE_ROLES):
        return [f"{role}: {member}" for role, member in zip(CACHE_ROLES, members)]
    return list(members)


def alignment(layout: dict[str, Any], members: int, block_bytes: int = 4096) -> dict[str, Any]:
    """The filesystem's stripe geometry for the layout, and the mkfs options that say it:
    xfs takes the stripe unit and width (su, sw), ext4 the same in filesystem blocks (stride,
    stripe_width). One data member has no stripe to align to."""
    unit_kib, width = stripe_unit_kib(layout), data_members(layout, members)
    if width < 2:
        return {"stripe_unit_kib": unit_kib, "data_members": width, "mkfs_options": {"xfs": "", "ext4": ""}}
    stride = unit_kib * 1024 // block_bytes
    return {
        "stripe_unit_kib": unit_kib,
        "data_members": width,
        "mkfs_options": {"xfs": f"-d su={unit_kib}k,sw={width}",
                         "ext4": f"-E stride={stride},stripe_width={stride * width}"},
    }


def array_path(name: str) -> str:
    """Where the layout's block device appears: the md array's or the logical volume's path (a
    bcache device's name is the kernel's to give: bcache_read_back says it)."""
    return f"/dev/md/{name}" if LAYOUTS[name]["kind"] == "md" else f"/dev/{VG}/{LV}"


def check(name: str, members: Sequence[str]) -> dict[str, Any]:
    """The layout entry for `name` over `members` (paths as given), or a LayoutError: an unknown
    layout, too few members, a member listed twice (by any of its names)."""
    if name not in LAYOUTS:
        raise LayoutError(f"unknown layout {name!r}; accepted: {', '.join(LAYOUTS)}")
    layout = LAYOUTS[name]
    if len(members) < layout["min_members"]:
        raise LayoutError(f"{name} needs at least {layout['min_members']} members; {len(members)} given")
    if layout.get("fixed_members") not in (None, len(members)):
        raise LayoutError(f"{name} is over exactly {layout['fixed_members']} members "
                          f"({', '.join(CACHE_ROLES)} device); {len(members)} given")
    seen: dict[str, str] = {}
    for member in members:
        real = os.path.realpath(member)
        if real in seen:
            raise LayoutError(f"{member} is listed twice among the members of {name} (as {seen[real]} too)")
        seen[real] = member
    return layout


def build_commands(name: str, members: Sequence[str], cset_uuid: str | None = None) -> list[list[str]]:
    """The commands that build the layout on members the suite may use (blank or its own); a
    bcache's with `cset_uuid` (new_cset_uuid() when None)."""
    layout, count = LAYOUTS[name], len(members)
    if layout["kind"] == BCACHE:
        # Both superblocks at once, the cache set's UUID the suite's: udev's bcache rule registers
        # each member, and the backing device attaches to the cache set its superblock names.
        return [["make-bcache", "--bdev", members[0], "--cache", members[1], "--cset-uuid", cset_uuid or new_cset_uuid(),
                 *(["--writeback"] if layout["cache_mode"] == "writeback" else [])]]
    if layout["kind"] == "md":
        # --assume-clean: a RAID5 would otherwise resync in the background while the first cells
        # ran, and measure that instead; parity that was never computed does not change the I/O
        # the benchmark does. --force lets a RAID0 have one member (the member-count sweep's 1).
        # The new array's first blocks are the members' old data: wipe what they may still show.
        return [["mdadm", "--create", array_path(name), "--run", "--force", "--assume-clean",
                 f"--level={layout['level']}", f"--raid-devices={count}", f"--chunk={layout['chunk_kib']}K",
                 f"--metadata={layout['metadata']}", f"--homehost={TAG}", f"--name={name}", *members],
                ["wipefs", "--all", array_path(name)]]
    group = [["pvcreate", "--yes", *members], ["vgcreate", "--addtag", TAG, VG, *members]]
    if layout["type"] == "striped":
        return [*group, ["lvcreate", "--yes", "--wipesignatures", "y", "--type", "striped", f"--stripes={count}",
                         f"--stripesize={layout['stripe_kib']}k", "--extents", "100%FREE", "--name", LV, VG]]
    # A linear volume on one member (a cache's: on the backing device), all of it (100%PVS: of the
    # physical volumes named).
    volume = ["lvcreate", "--yes", "--wipesignatures", "y", "--type", "linear", "--extents", "100%PVS",
              "--name", LV, VG, members[layout.get("on_member", 0)]]
    if layout["type"] == "linear":
        return [*group, volume]
    return [*group, volume, *attach_commands(layout, members[1])]


def attach_commands(layout: dict[str, Any], cache_member: str) -> list[list[str]]:
    """A cache layout's cache: a volume over all of the cache device, attached to the benchmark's
    volume. It begins empty and clean: attaching writes the cache's metadata afresh (`--zero` clears
    only the volume's first 4 KiB), so nothing is cached and nothing written back at first."""
    settings = [arg for key, value in sorted(layout["settings"].items())
                for arg in ("--cachesettings", f"{key}={value}")]
    if layout["type"] == "cache":
        attach = ["lvconvert", "--yes", "--type", "cache", "--cachevol", f"{VG}/{CACHE_LV}",
                  "--cachemode", layout["cache_mode"], "--cachepolicy", layout["policy"],
                  "--chunksize", f"{layout['chunk_kib']}k", *settings, f"{VG}/{LV}"]
    else:
        attach = ["lvconvert", "--yes", "--type", "writecache", "--cachevol", f"{VG}/{CACHE_LV}", *settings,
                  f"{VG}/{LV}"]
    cache_volume = ["lvcreate", "--yes", "--wipesignatures", "y", "--zero", "y", "--type", "linear", "--extents",
                    "100%PVS", "--name", CACHE_LV, VG, cache_member]
    # LVM attaches a writecache only from an inactive volume ("must be inactive to attach"; found
    # in the VM, LVM 2.03.16); dm-cache takes an active one.
    inactive = [["lvchange", "--activate", "n", f"{VG}/{CACHE_LV}"]] if layout["type"] == "writecache" else []
    return [cache_volume, *inactive, attach]


def recache_commands(name: str, members: Sequence[str], volumes: dict[str, str]) -> list[list[str]]:
    """What makes a cache layout's cache anew, empty, under its mounted volume (a cold start),
    from where the volume group stands (`volumes`: each visible volume's segment type, as `lvs`
    says): detach the cache if it is attached (LVM writes a writeback cache's dirty blocks back
    first, and waits), remove the cache volume if there is one, then the build's own commands for
    a cache over the same cache device. A remaking that stopped part-way is taken up where it stopped."""
    layout = LAYOUTS[name]
    if layout.get("type") not in CACHE_TYPES:
        raise LayoutError(f"{name} has no cache to make anew")
    if LV not in volumes:
        raise LayoutError(f"no volume {VG}/{LV} to put a cache in front of (volumes: {', '.join(volumes) or 'none'})")
    detach = [["lvconvert", "--yes", "--splitcache", f"{VG}/{LV}"]] if volumes[LV] in CACHE_TYPES else []
    remove = [["lvremove", "--yes", f"{VG}/{CACHE_LV}"]] if detach or CACHE_LV in volumes else []
    return [*detach, *remove, *attach_commands(layout, members[1])]


def bcache_recache_commands(name: str, members: Sequence[str], csets: Sequence[str],
                            cset_uuid: str | None = None) -> list[list[str]]:
    """What makes a bcache layout's cache anew, empty, under its mounted bcache device (a cold
    start): detach the backing device and wait until bcache has written its dirty data back and let
    go, unregister the cache sets on the cache device (`csets`, bcache_csets_on: none when a
    remaking that stopped part-way got past that), wipe it, make a cache set there with the suite's
    tag (`cset_uuid`, new_cset_uuid() when None), attach the backing device to it once it is
    registered, and write the layout's settings again."""
    layout = LAYOUTS[name]
    if layout["kind"] != BCACHE:
        raise LayoutError(f"{name} is no bcache")
    theirs = [cset for cset in csets if not cset.startswith(BCACHE_CSET_PREFIX)]
    if theirs:
        raise LayoutError(f"{members[1]} holds cache set {theirs[0]}, which the suite did not make")
    backing = SYS_BLOCK / os.path.basename(os.path.realpath(members[0])) / "bcache"
    new = cset_uuid or new_cset_uuid()
    unregister = [sysfs_write(f"{SYS_BCACHE}/{cset}/unregister", "1", only_if_there=True) for cset in csets]
    return [sysfs_write(f"{backing}/detach", "1"),
            wait_for_paths([f"{backing}/cache"], gone=True, seconds=BCACHE_DETACH_TIMEOUT_S),
            *unregister,
            *([wait_for_paths([f"{SYS_BCACHE}/{cset}" for cset in csets], gone=True, seconds=30)] if csets else []),
            ["wipefs", "--all", members[1]],
            ["make-bcache", "--cache", members[1], "--cset-uuid", new],
            # udev's bcache rule registers the new cache device; on a host without it, this does.
            wait_for_paths([f"{SYS_BCACHE}/{new}"], gone=False, seconds=30, nudge=sysfs_write(
                f"{SYS_BCACHE}/register", members[1])),
            sysfs_write(f"{backing}/attach", new),
            wait_for_paths([f"{backing}/cache"], gone=False, seconds=30),
            *(sysfs_write(path, value) for path, value in bcache_settings(name, members[0]))]


def bcache_csets_on(cache_member: str) -> list[str]:
    """The cache sets the kernel holds on this cache device, by UUID (their cache0 link)."""
    name = os.path.basename(os.path.realpath(cache_member))
    if not SYS_BCACHE.is_dir():
        return []
    return sorted(entry.name for entry in SYS_BCACHE.iterdir()
                  if (entry / "cache0").exists() and os.path.basename(os.path.dirname(os.path.realpath(entry / "cache0"))) == name)


def wait_for_paths(paths: Sequence[str], gone: bool, seconds: int, nudge: Sequence[str] = ()) -> list[str]:
    """A command that waits, polling every 0.1 s, until none of the paths exists (`gone`) or all
    do, and fails naming one that is not as asked after `seconds`; `nudge`, a command run once half
    way, when waiting alone has not done it."""
    ready = '[ ! -e "$p" ] || held="$p"' if gone else '[ -e "$p" ] || held="$p"'
    said = "still there" if gone else "not there"
    steps = seconds * 10
    nudging = f'[ "$i" != {steps // 2} ] || {shlex.join(nudge)} 2>/dev/null; ' if nudge else ""
    return ["sh", "-c", f'for i in $(seq {steps}); do held=; for p; do {ready}; done; [ -n "$held" ] || exit 0; '
            f'{nudging}sleep 0.1; done; echo "$held {said} after {seconds} s" >&2; exit 1', "sh", *paths]


def new_cset_uuid() -> str:
    """A cache set UUID with the suite's tag (BCACHE_CSET_PREFIX) and 48 random bits."""
    return BCACHE_CSET_PREFIX + os.urandom(6).hex()


def bcache_settings(name: str, backing: str) -> list[tuple[str, str]]:
    """What the suite writes to the backing device's bcache directory once it is registered, in
    order: its label (the tag), the cache mode, then the layout's tunables."""
    layout = LAYOUTS[name]
    folder = SYS_BLOCK / os.path.basename(os.path.realpath(backing)) / "bcache"
    values = [("label", bcache_label(name)), ("cache_mode", layout["cache_mode"]),
              *((key, str(value)) for key, value in layout["settings"].items())]
    return [(str(folder / key), value) for key, value in values]


def bcache_removal(states: Sequence[dict[str, Any]]) -> list[list[str]]:
    """What takes the suite's bcache off these members, registered or not: stop the backing
    device (its bcacheN goes), unregister the cache set, wait until the kernel let go of both
    (both are asynchronous; a superblock wiped before would be written again), then wipe the
    bcache superblocks."""
    found = [s for s in states if s["type"] == BCACHE and ours(s)]
    if not found:
        return []
    backing = [f"/sys/class/block/{s['name']}/bcache" for s in found if s.get("bcache_role") == "backing"]
    csets = sorted({f"/sys/fs/bcache/{s['bcache_cset']}" for s in found if s.get("bcache_cset")})
    stop = [sysfs_write(f"{folder}/stop", "1", only_if_there=True) for folder in backing]
    unregister = [sysfs_write(f"{folder}/unregister", "1", only_if_there=True) for folder in csets]
    wait = wait_for_paths([*backing, *csets], gone=True, seconds=30)
    return [*stop, *unregister, wait, *(["wipefs", "--all", s["member"]] for s in found)]


def sysfs_write(path: str, value: str, only_if_there: bool = False) -> list[str]:
    """A command that writes value to a sysfs file (echo, as the kernel's documentation does);
    `only_if_there`: none where the file is not (a device the kernel no longer holds)."""
    guard = '[ ! -e "$1" ] || ' if only_if_there else ""
    return ["sh", "-c", guard + 'echo "$2" > "$1"', "sh", path, value]


def volume_types(text: str) -> dict[str, str]:
    """`lvs --noheadings -o lv_name,segtype <VG>` as {volume: segment type}."""
    return dict(line.split()[:2] for line in text.splitlines() if len(line.split()) >= 2)


# --- reading what is on a member -----------------------------------------------------------------


Run = Callable[[list[str]], subprocess.CompletedProcess]


def run(argv: list[str]) -> subprocess.CompletedProcess:
    """argv's exit code and output; a command that is not there exits 127, as in a shell."""
    try:
        return subprocess.run(argv, capture_output=True, text=True)
    except OSError as exc:
        return subprocess.CompletedProcess(argv, 127, "", f"{argv[0]}: {exc.strerror or exc}")


def key_values(text: str) -> dict[str, str]:
    """`mdadm --export` and `blkid -o export` output: KEY=value lines."""
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def sysfs(name: str, leaf: str) -> str:
    """A block device's attribute in /sys/class/block, "" where it has none."""
    try:
        return (SYS_BLOCK / name / leaf).read_text().strip()
    except OSError:
        return ""


def holders_of(name: str) -> list[str]:
    """The block devices built on this one (an md array, a device-mapper target)."""
    folder = SYS_BLOCK / name / "holders"
    return sorted(entry.name for entry in folder.iterdir()) if folder.is_dir() else []


def partitions_of(name: str) -> list[str]:
    """The kernel's partitions of a whole device."""
    folder = SYS_BLOCK / name
    return sorted(entry.name for entry in folder.iterdir() if (entry / "partition").is_file()) \
        if folder.is_dir() else []


def member_state(path: str, runner: Run = run) -> dict[str, Any]:
    """What is on a member, judging nothing: its kernel name, its blkid type, an md superblock's
    array name, an LVM volume group and its tags, and the block devices that hold it."""
    real = os.path.realpath(path)
    name = os.path.basename(real)
    state: dict[str, Any] = {"member": path, "name": name, "holders": holders_of(name)}
    # blkid -p: 0 found something, 2 found nothing; anything else is a member it could not read,
    # which is never taken for a blank one. A partition table (PTTYPE) is a signature too.
    probed = runner(["blkid", "-p", "-o", "export", real])
    found = key_values(probed.stdout) if probed.returncode == 0 else {}
    state["type"] = found.get("TYPE") or (f"{found['PTTYPE']} partition table" if "PTTYPE" in found else "")
    if probed.returncode not in (0, 2):
        last = ((probed.stderr or probed.stdout or "").strip().splitlines() or [""])[-1]
        state["unreadable"] = f"blkid -p exited {probed.returncode}" + (f": {last}" if last else "")
    state["partitions"] = partitions_of(name)
    if state["type"] == "linux_raid_member":
        examined = runner(["mdadm", "--examine", "--export", real])
        state["md_name"] = key_values(examined.stdout).get("MD_NAME", "")
    elif state["type"] == BCACHE:
        shown = runner(["bcache-super-show", real])
        state.update(bcache_superblock(shown.stdout))
        if shown.returncode != 0:
            last = ((shown.stderr or shown.stdout or "").strip().splitlines() or [""])[-1]
            state["unreadable"] = f"bcache-super-show exited {shown.returncode}" + (f": {last}" if last else "")
    elif state["type"] == "LVM2_member":
        listed = runner(["pvs", "--noheadings", "--reportformat", "json", "-o", "vg_name,vg_tags", real])
        try:
            pv = json.loads(listed.stdout)["report"][0]["pv"][0]
            state["vg"], state["vg_tags"] = pv.get("vg_name", ""), [t for t in pv.get("vg_tags", "").split(",") if t]
        except (ValueError, KeyError, IndexError, TypeError):
            state["vg"], state["vg_tags"] = "", []
    return state


def bcache_superblock(text: str) -> dict[str, str]:
    """`bcache-super-show` of a member: whether it is a backing or a cache device, its label and
    its cache set's UUID ("" for any it does not say)."""
    fields = dict(line.split(None, 1) for line in text.splitlines() if len(line.split(None, 1)) == 2)
    version = fields.get("sb.version", "")
    role = "backing" if "[backing device]" in version else "cache" if "[cache device]" in version else ""
    label = fields.get("dev.label", "").strip()
    return {"bcache_role": role, "bcache_label": "" if label == "(empty)" else label,
            "bcache_cset": fields.get("cset.uuid", "").strip()}


def ours(state: dict[str, Any]) -> bool:
    """Whether what is on the member is a layout the suite made (and so the suite's to remove)."""
    if state["type"] == "linux_raid_member":
        return state.get("md_name", "") in SUITE_MD_NAMES
    if state["type"] == "LVM2_member":
        return state.get("vg") == VG and TAG in state.get("vg_tags", [])
    if state["type"] == BCACHE:
        return state.get("bcache_cset", "").startswith(BCACHE_CSET_PREFIX) or (
            state.get("bcache_role") == "backing" and state.get("bcache_label") in SUITE_BCACHE_LABELS)
    return False


def refusal(state: dict[str, Any], holder_is_ours: Callable[[str], bool], may_wipe: bool = False) -> str | None:
    """Why the suite may not use the member for a layout, in one line, or None.

    Blank members and the suite's own leftovers may be used; an array, a volume group or a
    device-mapper target not tagged as the suite's may not, nor any other signature unless
    `may_wipe` (the device probe proved it the suite's filesystem, or the user named the member
    in wipe_device)."""
    member = state["member"]
    if state.get("unreadable"):
        return f"{member} could not be probed ({state['unreadable']}); a member that cannot be read is never taken for blank"
    foreign_holders = [h for h in state["holders"] if not holder_is_ours(h)]
    if foreign_holders:
        return f"{member} is held by {', '.join(foreign_holders)}, which the suite did not make (md, LVM, dm or crypt)"
    if state["type"] == "linux_raid_member" and not ours(state):
        return f"{member} is a member of md array {state.get('md_name') or '(unnamed)'}, which the suite did not make"
    if state["type"] == "LVM2_member" and not state.get("vg") and not may_wipe:
        # A label with no volume group says nothing of whose it is: a spare someone prepared, or
        # what a removal of the suite's stripe that was cut short between vgremove and pvremove left.
        return (f"{member} is an LVM physical volume in no volume group (an interrupted removal of the suite's "
                f"stripe can leave one): if it is the suite's, name it in wipe_device")
    if state["type"] == BCACHE and not ours(state) and not may_wipe:
        return (f"{member} is a bcache {state.get('bcache_role') or ''} device of cache set "
                f"{state.get('bcache_cset') or '(none)'}, which the suite did not make (name it in wipe_device if it may go)")
    if state["type"] == "LVM2_member" and state.get("vg") and not ours(state):
        return (f"{member} is an LVM physical volume of volume group {state.get('vg') or '(none)'}, "
                f"which is not the suite's ({VG}, tagged {TAG})")
    if state["type"] and state["type"] not in ("linux_raid_member", "LVM2_member", BCACHE) and not may_wipe:
        return (f"{member} holds a {state['type']} signature; a layout is built only on blank members or the "
                f"suite's own (name it in wipe_device if it may go)")
    if state.get("partitions") and not may_wipe:
        return (f"{member} has partitions ({', '.join(state['partitions'])}); a layout is built only on whole, "
                f"blank members (name it in wipe_device if they may go)")
    return None


# --- the kernel's own account of a built layout ---------------------------------------------------


def member_record(name: str) -> dict[str, str]:
    """A member as the kernel knows it: name, model and serial (what SMART is taken from)."""
    return {"name": name, "path": f"/dev/{name}", "model": sysfs(name, "device/model"),
            "serial": sysfs(name, "serial") or sysfs(name, "device/serial")}


def io_hints(name: str) -> dict[str, int | None]:
    """The I/O sizes the block device advertises (its queue's minimum_io_size and optimal_io_size,
    in bytes): what mkfs aligns to when told nothing, so the alignment the suite computed can be
    checked against the kernel's own. None where sysfs has no number."""
    hints = {key: sysfs(name, f"queue/{leaf}") for key, leaf in (("io_min_bytes", "minimum_io_size"),
                                                                 ("io_opt_bytes", "optimal_io_size"))}
    return {key: int(value) if value.isascii() and value.isdigit() else None for key, value in hints.items()}


def md_read_back(array: str, runner: Run = run) -> dict[str, Any]:
    """The md array as the kernel made it: /sys/block/mdN/md/ and `mdadm --detail --export`."""
    name = os.path.basename(os.path.realpath(array))
    detail = key_values(runner(["mdadm", "--detail", "--export", array]).stdout)
    members = sorted(entry.name[len("dev-"):] for entry in (SYS_BLOCK / name / "md").glob("dev-*"))
    chunk = sysfs(name, "md/chunk_size")
    return {
        "kind": "md", "name": name, "path": array,
        "level": sysfs(name, "md/level") or detail.get("MD_LEVEL", ""),
        "chunk_kib": int(chunk) // 1024 if chunk.isascii() and chunk.isdigit() else None,
        "metadata": detail.get("MD_METADATA", ""), "md_name": detail.get("MD_NAME", ""),
        "uuid": detail.get("MD_UUID", ""),
        **io_hints(name),
        "members": [member_record(m) for m in members],
    }


def leaves(name: str) -> list[str]:
    """The disks under a device-mapper or md device, through every layer between (a cache's
    origin and cache volumes, a volume's physical volumes): the block devices with no slaves."""
    folder = SYS_BLOCK / name / "slaves"
    below = sorted(entry.name for entry in folder.iterdir()) if folder.is_dir() else []
    return sorted({leaf for slave in below for leaf in leaves(slave)}) if below else [name]


def kernel_name(device_number: str) -> str:
    """The kernel's name for a MAJOR:MINOR as a device-mapper table gives it, "" if none."""
    path = Path("/sys/dev/block") / device_number
    return os.path.basename(os.path.realpath(path)) if path.exists() else ""


def dm_table_fields(table: list[str]) -> dict[str, Any]:
    """What a device-mapper table line says of the layout (`dmsetup table`, split): a stripe's
    count and size; a cache's mode, policy, block size and the devices it caches and holds; a
    writecache's block size and settings. Fields it cannot read stay None."""
    fields: dict[str, Any] = {"target": table[2] if len(table) >= 3 else "", "stripes": None, "stripe_kib": None}
    try:
        if fields["target"] == "striped":
            # <start> <length> striped <stripes> <chunk sectors> <dev> <offset> ...
            fields.update(stripes=int(table[3]), stripe_kib=int(table[4]) // 2)
        elif fields["target"] == "cache":
            # <start> <length> cache <metadata dev> <cache dev> <origin dev> <block sectors>
            #   <#features> <feature>* <policy> <#policy args> <policy arg>*
            count = int(table[7])
            features = table[8:8 + count]
            modes = [f for f in features if f in ("writeback", "writethrough", "passthrough")]
            fields.update(cache_device=table[4], origin_device=table[5], chunk_kib=int(table[6]) // 2,
                          features=features, cache_mode=modes[0] if modes else "writethrough",
                          policy=table[8 + count], policy_args=table[10 + count:])
        elif fields["target"] == "writecache":
            # <start> <length> writecache <p|s> <origin dev> <cache dev> <block bytes> <#args> <arg>*
            fields.update(origin_device=table[4], cache_device=table[5], block_bytes=int(table[6]),
                          settings=table[8:8 + int(table[7])])
    except (IndexError, ValueError):
        pass
    return fields


def bracketed(text: str) -> str:
    """The chosen one of a sysfs list such as bcache's `writethrough [writeback] writearound none`."""
    chosen = [word[1:-1] for word in text.split() if word.startswith("[") and word.endswith("]")]
    return chosen[0] if len(chosen) == 1 else text


def bcache_device(backing: str) -> str:
    """The kernel's name of the bcache device over a backing device ("" while it has none)."""
    link = SYS_BLOCK / os.path.basename(os.path.realpath(backing)) / "bcache" / "dev"
    return os.path.basename(os.path.realpath(link)) if link.exists() else ""


def bcache_read_back(backing: str) -> dict[str, Any]:
    """The bcache device over `backing` as the kernel holds it: its name, the cache set it is
    attached to and that set's cache device, its mode and tunables, from sysfs."""
    name = bcache_device(backing)
    folder = SYS_BLOCK / name / "bcache"
    cset = folder / "cache"
    cache_dir = cset / "cache0"
    # …/block/<cache device>/bcache: the cache set's link to its one cache device's directory.
    cache = os.path.basename(os.path.dirname(os.path.realpath(cache_dir))) if cache_dir.exists() else ""
    backing_name = os.path.basename(os.path.realpath(backing))
    settings = {key: sysfs(name, f"bcache/{key}") for key in ("writeback_percent", "sequential_cutoff", "state")}
    return {"kind": BCACHE, "target": BCACHE, "name": name, "path": f"/dev/{name}" if name else "",
            "cache_mode": bracketed(sysfs(name, "bcache/cache_mode")), "label": sysfs(name, "bcache/label"),
            "cset_uuid": os.path.basename(os.path.realpath(cset)) if cset.exists() else "",
            "bucket_size": sysfs(cache, "bcache/bucket_size") if cache else "", **settings, **io_hints(name),
            "members": [member_record(m) for m in (backing_name, cache) if m],
            "backing_members": [backing_name], "cache_members": [cache] if cache else []}


def lvm_read_back(runner: Run = run) -> dict[str, Any]:
    """The logical volume as device-mapper holds it: `dmsetup table`, the disks under it, and for
    a cache which of them is the backing device and which the cache device."""
    path = f"/dev/{VG}/{LV}"
    name = os.path.basename(os.path.realpath(path))
    table = runner(["dmsetup", "table", f"{VG}-{LV}"]).stdout.split()
    fields = dm_table_fields(table)
    record = {"kind": "lvm", "name": name, "path": path, "table": " ".join(table), **fields, **io_hints(name),
              "members": [member_record(m) for m in (leaves(name) if (SYS_BLOCK / name).is_dir() else [])]}
    for role, device in (("backing", fields.get("origin_device")), ("cache", fields.get("cache_device"))):
        if device:
            under = kernel_name(device)
            record[f"{role}_members"] = leaves(under) if under else []
    return record


# --- the suite's own layouts: which holders are its, and how they go --------------------------------


def holder_is_ours(holder: str, runner: Run = run) -> bool:
    """Whether a block device holding a member is the suite's: an md array whose superblock name
    carries the tag, or one of the logical volumes the suite makes (SUITE_DM_NAMES: device-mapper
    names them VG-LV, with LVM's `LVM-` UUID). The volume group's tag is checked on the member
    itself (ours())."""
    if holder.startswith("md"):
        detail = key_values(runner(["mdadm", "--detail", "--export", f"/dev/{holder}"]).stdout)
        return detail.get("MD_NAME", "") in SUITE_MD_NAMES
    if holder.startswith(BCACHE):
        backing = sysfs(holder, "bcache/backing_dev_name")
        return bool(backing) and ours({"type": BCACHE, **bcache_superblock(
            runner(["bcache-super-show", f"/dev/{backing}"]).stdout)})
    return sysfs(holder, "dm/uuid").startswith("LVM-") and sysfs(holder, "dm/name") in SUITE_DM_NAMES


def removal_commands(states: Sequence[dict[str, Any]], runner: Run = run) -> list[list[str]]:
    """What removes the suite's own layout from these members, whole or half-built: stop its md
    arrays, remove its volume group, then the md superblocks and LVM labels on the members. Only
    what ours() and holder_is_ours() claim is named; on blank members, nothing."""
    arrays = sorted({h for s in states for h in s["holders"] if h.startswith("md") and holder_is_ours(h, runner)})
    commands = [["mdadm", "--stop", f"/dev/{array}"] for array in arrays] + bcache_removal(states)
    if any(ours(s) and s["type"] == "LVM2_member" for s in states):
        commands.append(["vgremove", "--yes", "--force", VG])
    for state in states:
        if ours(state) and state["type"] == "linux_raid_member":
            commands.append(["mdadm", "--zero-superblock", state["member"]])
        elif ours(state) and state["type"] == "LVM2_member":
            commands.append(["pvremove", "--yes", state["member"]])
    return commands


def wipe_commands(states: Sequence[dict[str, Any]], wipe: set[str]) -> list[list[str]]:
    """What clears the members the user (wipe_device) or the device probe let go of: a plain
    pass's filesystem, a partition table, a label left in no volume group. Only those members."""
    commands = []
    for state in states:
        if state["member"] not in wipe or ours(state):
            continue
        if state["type"] == "LVM2_member" and not state.get("vg"):
            commands.append(["pvremove", "--yes", state["member"]])
        elif state["type"] not in ("linux_raid_member", "LVM2_member") and (state["type"] or state.get("partitions")):
            commands.append(["wipefs", "--all", state["member"]])
    return commands
