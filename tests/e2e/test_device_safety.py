"""Never wipe the wrong disk: every unsafe device is refused in one line and left unchanged.

Each case makes a real loop device (or names a path that is no block device), runs the real
playbook against it and checks the exit code, the one-line reason and that the device's bytes
did not change. fstab and crypttab are the machine's own, so those two cases call the probe
module directly with tables of their own instead of editing /etc.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest

from e2e_env import NEEDS_ROOT, ROOT, ok

pytestmark = NEEDS_ROOT

MBR_SIGNATURE = b"\x55\xaa"


def checksum(path: Path) -> str:
    """The bytes of a backing file; for a device the kernel itself writes to while it is in use
    (mounted, active swap), its signatures instead: what mkfs or wipefs would have changed."""
    if not path.exists() or path.is_dir() or path.is_char_device():
        return "-"
    device = subprocess.run(["losetup", "-n", "-O", "NAME", "-j", str(path)], capture_output=True, text=True).stdout.split()
    if device and _in_use(device[0]):
        signature = subprocess.run(["blkid", "-p", "-o", "export", device[0]], capture_output=True, text=True).stdout
        return "signature " + hashlib.sha256(signature.encode()).hexdigest()[:16]
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:16]


def _in_use(device: str) -> bool:
    mounted = subprocess.run(["findmnt", "-S", device], capture_output=True).returncode == 0
    return mounted or device in Path("/proc/swaps").read_text()


class Loops:
    """Loop devices over files in the environment, found and detached by backing file."""

    def __init__(self, base: Path):
        self.base = base
        self.files: list[Path] = []
        self.mounts: list[Path] = []
        self.swaps: list[str] = []

    def make(self, name: str, size: str = "512M", read_only: bool = False) -> tuple[str, Path]:
        backing = self.base / f"{name}.img"
        subprocess.run(["truncate", "-s", size, str(backing)], check=True)
        flags = ["-r"] if read_only else []
        device = subprocess.run(["losetup", *flags, "--show", "-f", str(backing)], check=True,
                                capture_output=True, text=True).stdout.strip()
        self.files.append(backing)
        return device, backing

    def cleanup(self) -> None:
        for swap in self.swaps:
            subprocess.run(["swapoff", swap], capture_output=True)
        for mount in self.mounts:
            subprocess.run(["umount", str(mount)], capture_output=True)
        for backing in self.files:
            found = subprocess.run(["losetup", "-n", "-O", "NAME", "-j", str(backing)], capture_output=True, text=True)
            for device in found.stdout.split():
                subprocess.run(["losetup", "-d", device], capture_output=True)


@pytest.fixture(scope="module")
def loops(env):
    made = Loops(env.base)
    yield made
    made.cleanup()


def _case_foreign_ext4(loops):
    device, backing = loops.make("foreign-ext4")
    subprocess.run(["mkfs.ext4", "-q", "-F", "-L", "somebodys", device], check=True)
    return device, backing


def _case_partition_table(loops):
    device, backing = loops.make("mbr")
    with open(backing, "r+b") as disk:
        disk.seek(446)  # one partition entry: type 0x83 from sector 2048, 100000 sectors
        disk.write(bytes([0, 0, 0, 0, 0x83, 0, 0, 0]) + (2048).to_bytes(4, "little") + (100000).to_bytes(4, "little"))
        disk.seek(510)
        disk.write(MBR_SIGNATURE)
    return device, backing


def _case_swap_signature(loops):
    device, backing = loops.make("swap-signature")
    subprocess.run(["mkswap", device], check=True, capture_output=True)
    return device, backing


def _case_active_swap(loops):
    device, backing = loops.make("active-swap", size="64M")
    subprocess.run(["mkswap", device], check=True, capture_output=True)
    subprocess.run(["swapon", device], check=True)
    loops.swaps.append(device)
    return device, backing


def _mounted(loops, name):
    device, backing = loops.make(name)
    subprocess.run(["mkfs.ext4", "-q", "-F", device], check=True)
    mount = loops.base / f"{name}-mnt"
    mount.mkdir()
    subprocess.run(["mount", device, str(mount)], check=True)
    loops.mounts.append(mount)
    return device, backing


def _case_mounted(loops):
    return _mounted(loops, "mounted")


def _case_symlink_to_mounted(loops):
    device, backing = _mounted(loops, "linked")
    link = loops.base / "by-id-link"
    link.symlink_to(device)
    return str(link), backing


def _case_read_only(loops):
    return loops.make("read-only", read_only=True)


def _case_too_small(loops):
    return loops.make("small", size="64M")


CASES = [
    ("nonexistent", lambda loops: ("/dev/innomatrix-no-such-device", None), "does not exist"),
    ("regular file", lambda loops: (str(loops.base / "knobs.yml"), loops.base / "knobs.yml"), "is not a block device"),
    ("directory", lambda loops: (str(loops.base), None), "is not a block device"),
    ("character device", lambda loops: ("/dev/null", None), "is not a block device"),
    ("foreign ext4", _case_foreign_ext4, "holds signatures the suite did not write (ext4"),
    ("MBR partition table", _case_partition_table, "holds signatures the suite did not write (dos"),
    ("swap signature", _case_swap_signature, "holds signatures the suite did not write (swap"),
    ("active swap", _case_active_swap, "is active swap"),
    ("mounted", _case_mounted, "is mounted (/dev/loop"),
    ("symlink to a mounted device", _case_symlink_to_mounted, "by-id-link (→ /dev/loop"),
    ("read-only", _case_read_only, "is read-only"),
    ("too small", _case_too_small, "the matrix needs about"),
]


@pytest.mark.parametrize(("case", "make", "reason"), CASES, ids=[c[0] for c in CASES])
def test_unsafe_device_is_refused_and_unchanged(env, loops, case, make, reason):
    device, backing = make(loops)
    before = checksum(backing) if backing else "-"
    done = env.play("-e", f"device={device}")
    output = done.stdout + done.stderr
    refusal = [line for line in output.splitlines() if line.startswith("[ERROR]") and "refusing" in line]
    after = checksum(backing) if backing else "-"
    record = f"{case} | exit {done.returncode} | {refusal[0] if refusal else output[-300:]} | {before} → {after}"
    print(record)  # the table for the closing note: pytest -s
    assert done.returncode != 0, record
    assert len(refusal) == 1 and reason in refusal[0] and "nothing was changed" in refusal[0], record
    assert after == before
    assert not (env.run_dir / "run.json").exists()


def test_remote_host_without_device_is_refused_before_connecting(env):
    inventory = env.base / "remote.yml"
    inventory.write_text(json.dumps({"all": {"children": {"bench": {"hosts": {
        "remote-1": {"ansible_host": "127.0.0.2", "ansible_connection": "ssh"}}}}}}))
    done = env.play("-i", "inventory", "-i", str(inventory), "--limit", "remote-1", "-e", "device=")
    assert done.returncode != 0
    assert "no device given for remote-1: name the device under test with -e device=/dev/..." in done.stdout + done.stderr


def _probe(device: str, **params) -> dict:
    args = {"path": device, "mountpoint": "/nonexistent", "label": "innomatrix", "state_dir": "/nonexistent", **params}
    done = subprocess.run([str(ROOT / ".venv/bin/ansible"), "localhost", "-m", "innomatrix_device_facts",
                           "-a", json.dumps(args), "-o"], cwd=ROOT, capture_output=True, text=True)
    assert " => " in done.stdout, done.stdout + done.stderr
    return json.loads(done.stdout.split(" => ", 1)[1])["device"]


@pytest.mark.parametrize("table", ["fstab", "crypttab"])
def test_device_listed_in_fstab_or_crypttab_is_refused(env, loops, table):
    device, backing = loops.make(f"listed-{table}")
    subprocess.run(["mkfs.ext4", "-q", "-F", "-L", "innomatrix", device], check=True)
    uuid = subprocess.run(["blkid", "-p", "-s", "UUID", "-o", "value", device], capture_output=True, text=True).stdout.strip()
    line = f"UUID={uuid} /srv ext4 defaults 0 2\n" if table == "fstab" else f"secret UUID={uuid} none luks\n"
    listing = env.base / table
    listing.write_text("# a comment\n" + line)
    facts = _probe(device, **{table: str(listing)})
    assert not facts["safe"]
    assert any(f"is listed in {listing} (UUID={uuid})" in reason for reason in facts["reasons"]), facts["reasons"]


def test_device_holding_the_results_is_refused(env, loops):
    device, _ = loops.make("holds-results")
    facts = _probe(device, protected_paths=["/", str(env.base)])
    assert facts["safe"]  # a blank loop device elsewhere is fine
    mounted, _ = _mounted(loops, "results-home")
    facts = _probe(mounted, protected_paths=[str(loops.base / "results-home-mnt" / "results")])
    assert any("holds " in reason for reason in facts["reasons"]), facts["reasons"]


def test_a_member_named_twice_or_too_few_devices_is_refused(env, loops):
    # A layout's members are checked before anything is built, and these two refusals need no md
    # (layouts themselves are built in the VM test host): one loop device by two of its names,
    # and more members than the host lists.
    device, backing = loops.make("member", size="64M")
    alias = loops.base / "member-alias"
    alias.symlink_to(device)
    before = checksum(backing)
    for devices, members, reason in (([device, str(alias)], 2, "a device is listed twice, by two of its names"),
                                     ([device], 8, "members: md-raid0 over 8 members needs 8 devices; this host lists 1")):
        done = env.play("-e", json.dumps({"devices": devices, "layouts": ["md-raid0"], "members": [members]}))
        output = done.stdout + done.stderr
        assert done.returncode != 0 and reason in output, output[-3000:]
    assert checksum(backing) == before
    assert not (env.run_dir / "run.json").exists()


@pytest.mark.skipif(Path("/sys/fs/bcache").exists(), reason="this kernel has bcache: its refusal cannot be seen here")
def test_a_bcache_layout_on_a_kernel_without_bcache_is_refused_and_nothing_changes(env, loops):
    # This machine's kernel has no bcache (nor md or device-mapper: layouts themselves run in the
    # VM test host); the layout module must say so in one line before it touches a member.
    members = [loops.make(f"bcache-{role}", size="64M") for role in ("backing", "cache")]
    before = [checksum(backing) for _, backing in members]
    args = {"name": "bcache-writeback", "members": [device for device, _ in members]}
    done = subprocess.run([str(ROOT / ".venv/bin/ansible"), "localhost", "-m", "innomatrix_layout",
                           "-a", json.dumps(args), "-o"], cwd=ROOT, capture_output=True, text=True)
    said = json.loads(done.stdout.split(" => ", 1)[1]) if " => " in done.stdout else {}
    assert done.returncode != 0 and "localhost | FAILED! => " in done.stdout, done.stdout + done.stderr
    assert said["msg"].startswith("refusing layout bcache-writeback: this host's kernel has no bcache"), said["msg"]
    assert said["msg"].endswith("; nothing was changed") and "\n" not in said["msg"]
    assert [checksum(backing) for _, backing in members] == before


def test_wipe_needs_the_devices_own_name_then_wipes_and_runs(env, loops):
    device, backing = _case_foreign_ext4(loops)
    before = checksum(backing)
    refused = env.play("-e", f"device={device}", "-e", "wipe_device=yes")
    assert refused.returncode != 0 and f"wipe_device=<its serial or WWN> ({backing} here)" in refused.stdout
    check = env.play("-e", f"device={device}", "-e", f"wipe_device={backing}", "-e", "run_name=wiped",
                     "-e", "filesystems=xfs", "-e", "bp_sizes=64M", check=True)
    ok(check)
    assert "would first WIPE ext4" in check.stdout
    assert checksum(backing) == before
    done = env.play("-e", f"device={device}", "-e", f"wipe_device={backing}", "-e", "run_name=wiped",
                    "-e", "filesystems=xfs", "-e", "bp_sizes=64M")
    ok(done)
    label = subprocess.run(["blkid", "-p", "-o", "export", device], capture_output=True, text=True).stdout
    assert "TYPE=xfs" in label and "LABEL=innomatrix" in label
    trial = json.loads(next((env.results / "wiped").glob("*/xfs/oltp/A/bp-64M/t2/r1/trial.json")).read_text())
    assert trial["status"] == "ok" and trial["device"]["identity"] == f"loop:{backing}"
    assert os.path.exists(device)
