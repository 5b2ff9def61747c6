"""The virtual-machine host itself (vm_host.py): one Debian 12 guest with its own kernel, two
virtio members (one throttled by QEMU) and one emulated NVMe, reached over real SSH. Each test
checks one thing the VM exists for: md and device-mapper, stable member names, NVMe SMART,
Ansible, a disk of known speed, a pulled plug. TCG is slow: the module boots the guest twice
(the second time after the pulled plug, last), about a minute and a half in all."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from e2e_env import NEEDS_ROOT, ROOT
from remote_hosts import write_inventory
from vm_host import Disk, needs_vm, vm_host

pytestmark = [*NEEDS_ROOT, needs_vm]

ANSIBLE = ROOT / ".venv" / "bin" / "ansible"
THROTTLE_IOPS = 150
FAST, SLOW, NVME = "fast0", "slow0", "nvme0"

# Random 16 KiB O_DIRECT reads from a raw block device by 8 threads for SECONDS, printing reads
# per second: sysbench fileio reads files only (it refuses a device's 0-byte size), and the guest
# has no fio. mmap gives the page-aligned buffers O_DIRECT needs; pread releases the GIL.
RANDOM_READS = """
import mmap, os, random, sys, threading, time
device, seconds = sys.argv[1], float(sys.argv[2])
block = 16384
fd = os.open(device, os.O_RDONLY | os.O_DIRECT)
blocks = os.lseek(fd, 0, os.SEEK_END) // block
reads = []
def reader():
    buffer, count, end = mmap.mmap(-1, block), 0, time.monotonic() + seconds
    while time.monotonic() < end:
        os.preadv(fd, [buffer], random.randrange(blocks) * block)
        count += 1
    reads.append(count)
started = time.monotonic()
threads = [threading.Thread(target=reader) for _ in range(8)]
for thread in threads: thread.start()
for thread in threads: thread.join()
print(sum(reads) / (time.monotonic() - started))
"""


@pytest.fixture(scope="module")
def vm():
    with vm_host("innomatrix-e2e-vm-", "vm-a", disks=[Disk(FAST), Disk(SLOW, iops=THROTTLE_IOPS)],
                 nvme=[Disk(NVME)]) as (_, host):
        print(f"{host.name} up in {host.boot_seconds:.1f} s on port {host.port} ({host.stalled_boots} stalled boots before)")
        yield host


def member(vm, serial):
    return next(disk for disk in vm.disks if disk.serial == serial)


def test_kernel_has_md_and_device_mapper(vm):
    vm.sh("modprobe -a md-mod raid0 raid456 dm-mod")
    personalities = vm.sh("cat /proc/mdstat").stdout.splitlines()[0]
    assert personalities.startswith("Personalities :") and "[raid0]" in personalities and "[raid5]" in personalities
    assert "striped" in vm.sh("dmsetup targets").stdout.split()


def test_members_have_stable_names_by_serial(vm):
    assert [disk.by_id for disk in vm.disks] == [f"/dev/disk/by-id/virtio-{FAST}", f"/dev/disk/by-id/virtio-{SLOW}",
                                                f"/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_{NVME}"]
    # One login for all (each costs about a second under TCG); either command fails on a missing name.
    names = " ".join(disk.by_id for disk in vm.disks)
    lines = vm.sh(f"readlink -e {names} && blockdev --getsize64 {names}").stdout.split()
    kernel_names = dict(zip([disk.serial for disk in vm.disks], lines[:len(vm.disks)]))
    assert re.fullmatch(r"/dev/vd[b-z]", kernel_names[FAST]) and re.fullmatch(r"/dev/vd[b-z]", kernel_names[SLOW])
    assert kernel_names[FAST] != kernel_names[SLOW]
    assert re.fullmatch(r"/dev/nvme\d+n1", kernel_names[NVME])
    assert lines[len(vm.disks):] == [str(disk.disk.size) for disk in vm.disks]


def test_nvme_reports_smart_counters(vm):
    # smartctl's exit status is a bit mask of findings about the drive: read its report instead.
    report = vm.exec(["smartctl", "-a", member(vm, NVME).by_id]).stdout
    assert re.search(r"^Data Units Written:\s+[\d,]+", report, re.MULTILINE), report
    assert re.search(r"^Serial Number:\s+" + NVME + "$", report, re.MULTILINE), report


def test_ansible_reaches_the_guest_and_its_apt_needs_no_network(vm, tmp_path):
    inventory = tmp_path / "hosts.yml"
    write_inventory(inventory, {"vm-a": vm})

    def ansible(*args):
        return subprocess.run([str(ANSIBLE), "-i", str(inventory), "bench", "-o", *args], cwd=ROOT,
                              capture_output=True, text=True, timeout=300,
                              env={**os.environ, "ANSIBLE_NOCOLOR": "1", "ANSIBLE_FORCE_COLOR": "0"})

    facts = ansible("-m", "ansible.builtin.setup", "-a", "filter=ansible_kernel")
    assert facts.returncode == 0, facts.stdout + facts.stderr
    assert f'"ansible_kernel": "{vm.sh("uname -r").stdout.strip()}"' in facts.stdout
    # As the roles install their packages: with lists older than a day apt would fetch and fail.
    installed = ansible("-m", "ansible.builtin.apt", "-a", "name=sysbench state=present cache_valid_time=86400")
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert '"changed": false' in installed.stdout and '"cache_updated": false' in installed.stdout


def test_throttled_member_reads_at_its_throttle(vm):
    seconds = 8
    done = vm.sh(f"python3 - {member(vm, SLOW).by_id} {seconds}", input=RANDOM_READS, timeout=120)
    iops = float(done.stdout)
    print(f"{SLOW}: {iops:.1f} random 16 KiB reads/s under throttling.iops-total={THROTTLE_IOPS}")
    assert THROTTLE_IOPS * 0.9 <= iops <= THROTTLE_IOPS * 1.1


def test_a_pulled_plug_keeps_what_was_synced(vm):
    """Last: it reboots the guest."""
    disk = member(vm, FAST).by_id
    vm.sh(f"mkfs.ext4 -q -F {disk} && mkdir -p /mnt/plug && mount {disk} /mnt/plug")
    # The file and its directory entry, as a careful writer does.
    vm.sh("head -c 4M /dev/urandom >/mnt/plug/synced && sync /mnt/plug/synced /mnt/plug")
    synced = vm.sh("sha256sum /mnt/plug/synced").stdout.split()[0]
    vm.sh("head -c 4M /dev/urandom >/mnt/plug/unsynced")
    vm.pull_plug()
    assert not vm.running()
    vm.boot()
    print(f"up again in {vm.boot_seconds:.1f} s")
    vm.sh(f"mkdir -p /mnt/plug && mount {disk} /mnt/plug")
    # What the unsynced file kept depends on when the guest wrote it back: nothing is asserted.
    assert vm.sh("sha256sum /mnt/plug/synced").stdout.split()[0] == synced
