"""A QEMU virtual machine as one more remote benchmark host, for what neither this machine's
kernel nor a container can give: md RAID, device-mapper (LVM), emulated NVMe with SMART, and
pulled plugs. The guest is Debian 12 with its own kernel, booted from tests/vm/image.sh's cached
image, and reached over real SSH on 127.0.0.1 as `bench` with passwordless sudo, like
remote_hosts.RemoteHost (so remote_hosts.write_inventory takes it too).

    host = VmHost(base, "vm-a", disks=[Disk("fast0"), Disk("slow0", iops=150)], nvme=[Disk("nvme0")])
    host.disks          # each member's serial and stable name in the guest:
                        # /dev/disk/by-id/virtio-fast0, /dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_nvme0
    write_inventory(base / "hosts.yml", {"vm-a": host})
    host.sh("mdadm --create ...")           # as root, over SSH
    host.pull_plug(); host.boot()           # a power loss, then the same disks again
    host.close()

or `with vm_host("innomatrix-e2e-vm-", "vm-a", disks=...) as (base, host):`.

The guest runs under TCG, not KVM (a KVM guest hung right after its kernel loaded on this
machine), so it is slow: about half a minute from start to SSH, and a CPU-bound workload runs
an order of magnitude below the host's. Keep VM tests few and small.

Everything a host makes is in base (which must be on /var/tmp's filesystem: the image is hard
linked), named after the host: <name>.image/ (its copy of the image), <name>.root.qcow2 (the
root disk, an overlay, so the cached image is never written), <name>.<serial>.img (a member),
<name>.console.log (the guest's serial console, across boots), <name>.qemu.log (QEMU's own
errors). Its qemu process is the one it started, known by that process's PID and named
innomatrix-vm-<pid>-<name> on its command line; close() kills that process only, and the
caller removes base.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from remote_hosts import USER, candidate_ports, login_vars, ssh_argv

ROOT = Path(__file__).resolve().parents[2]
IMAGE_SCRIPT = ROOT / "tests" / "vm" / "image.sh"
IMAGE_DIR = Path("/var/tmp/innomatrix-vm")
IMAGE_LOCK = Path("/var/tmp/innomatrix-vm.lock")
IMAGE_FILES = ("root.img", "vmlinuz", "initrd.img", "cmdline", "id_ed25519", "id_ed25519.pub")
PREFIX = f"innomatrix-vm-{os.getpid()}-"
# remote_hosts.py's containers take 35000-35999.
PORTS = range(36000, 37000)
# Boot to SSH took 21-37 s here under TCG; a loaded machine may take several times that.
SSH_TIMEOUT = 180.0
# Once in a while a TCG guest stops for good early in its kernel's boot (CI saw one whose console
# ended at 1.16 s of guest time, after "IP idents hash table entries", with no login in 180 s; six
# boots of the same guest here did not). A booting guest writes to its console every few seconds; one silent this long
# without letting the bench user in is stalled: it is killed and booted again, at most
# STALLED_BOOTS times, each said on stderr and in the console log.
CONSOLE_SILENCE = 60.0
STALLED_BOOTS = 2
DISK_SIZE = 2 * 1024**3
# What QEMU's emulated NVMe controller calls itself; udev names its disk nvme-<model>_<serial>.
NVME_MODEL = "QEMU NVMe Ctrl"
# virtio-blk and NVMe both carry at most 20 bytes of serial; udev keeps these characters as they are.
SERIAL = re.compile(r"[A-Za-z0-9_-]{1,20}")

needs_vm = pytest.mark.skipif(
    not all(shutil.which(tool) for tool in ("qemu-system-x86_64", "qemu-img", "debootstrap")),
    reason="VM TESTS SKIPPED: qemu-system-x86_64, qemu-img or debootstrap is missing; `make test` installs them "
    "(through .make/vm-os: qemu-system-x86 qemu-utils debootstrap)",
)

_image_checked = False
_ports_taken: set[int] = set()


def ensure_image() -> None:
    """Build the image if the script or the mirror changed (a few minutes when it builds, well
    under a second when it is up to date). Once per process."""
    global _image_checked
    if _image_checked:
        return
    done = subprocess.run(["bash", str(IMAGE_SCRIPT)], capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"{IMAGE_SCRIPT} failed:\n{(done.stdout + done.stderr)[-4000:]}")
    _image_checked = True


def _die_with_parent() -> None:
    """In the child, before exec: the kernel kills qemu when the test process ends, however it
    ends, so that no VM outlives its test and keeps burning this shared machine's CPUs."""
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class PortTaken(RuntimeError):
    """QEMU could not listen on the SSH forward's port (someone took it after the probe)."""


@dataclass(frozen=True)
class Disk:
    """A member disk as asked for: a sparse raw file of size bytes that the guest sees with this
    serial; iops and bps cap it with QEMU's throttling.iops-total and throttling.bps-total,
    which QEMU keeps exactly: a disk of known speed makes a known answer. host_flushes=False:
    QEMU acknowledges the guest's cache flushes without an fdatasync of the file on this machine
    (cache.no-flush), so what this machine's own disk is doing for other tests is not part of the
    disk's speed; QEMU still writes past its page cache and keeps no cache of its own, so killing
    QEMU still loses only what the guest had not written yet."""
    serial: str
    size: int = DISK_SIZE
    iops: int | None = None
    bps: int | None = None
    host_flushes: bool = True


@dataclass(frozen=True)
class Member:
    """A member disk as attached: its bus (virtio or nvme), its serial, the name udev gives it in
    the guest, and its file on this machine."""
    bus: str
    serial: str
    by_id: str
    file: Path
    disk: Disk


class BootStalled(RuntimeError):
    """The guest's console said nothing for CONSOLE_SILENCE seconds and SSH does not answer."""


class VmHost:
    def __init__(self, base: Path, name: str, disks: Sequence[Disk] = (Disk("disk0"),), nvme: Sequence[Disk] = (),
                 memory_mib: int = 3072, cpus: int = 2):
        ensure_image()
        self.base = Path(base)
        self.name = name
        self.memory_mib = memory_mib
        self.cpus = cpus
        self.image = self.base / f"{name}.image"
        self.key = self.image / "id_ed25519"
        self.overlay = self.base / f"{name}.root.qcow2"
        self.console_log = self.base / f"{name}.console.log"
        self.qemu_log = self.base / f"{name}.qemu.log"
        self.disks = [self._member("virtio", disk) for disk in disks] + [self._member("nvme", disk) for disk in nvme]
        serials = [member.serial for member in self.disks]
        if len(set(serials)) != len(serials):
            raise ValueError(f"member serials repeat: {serials}")
        self.port: int | None = None
        self.process: subprocess.Popen | None = None
        self.boot_seconds: float | None = None
        self.stalled_boots = 0
        self._snapshot_image()
        self._make_disks()
        try:
            self.boot()
        except BaseException:
            self.close()
            raise

    def _member(self, bus: str, disk: Disk) -> Member:
        if not SERIAL.fullmatch(disk.serial):
            raise ValueError(f"serial {disk.serial!r}: 1-20 of A-Z a-z 0-9 _ -")
        by_id = f"virtio-{disk.serial}" if bus == "virtio" else f"nvme-{NVME_MODEL.replace(' ', '_')}_{disk.serial}"
        return Member(bus, disk.serial, f"/dev/disk/by-id/{by_id}", self.base / f"{self.name}.{disk.serial}.img", disk)

    # --- bring-up -------------------------------------------------------------------------------

    def _snapshot_image(self) -> None:
        """Hard links to the cached image's files, made under image.sh's lock: this host boots the
        image it was made from to the end, its kernel matching its root filesystem's modules, even
        if image.sh replaces the cache meanwhile."""
        self.image.mkdir()
        with open(IMAGE_LOCK, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_SH)
            for file in IMAGE_FILES:
                os.link(IMAGE_DIR / file, self.image / file)
        subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", "-F", "raw", "-b", str(self.image / "root.img"),
                        str(self.overlay)], check=True, capture_output=True)

    def _make_disks(self) -> None:
        for member in self.disks:
            with open(member.file, "wb") as disk:
                disk.truncate(member.disk.size)

    def _qemu_argv(self, port: int) -> list[str]:
        cmdline = (self.image / "cmdline").read_text().strip()
        argv = [
            "qemu-system-x86_64", "-name", PREFIX + self.name,
            "-accel", "tcg,thread=multi", "-smp", str(self.cpus), "-m", str(self.memory_mib),
            # No VGA, floppy, CD-ROM or parallel port: less to probe at boot and no stray disks.
            "-nodefaults", "-display", "none",
            # A crashed or rebooting guest ends QEMU, which the SSH wait sees at once.
            "-no-reboot",
            "-chardev", f"file,id=console,path={self.console_log},append=on", "-serial", "chardev:console",
            "-kernel", str(self.image / "vmlinuz"), "-initrd", str(self.image / "initrd.img"),
            "-append", f"{cmdline} console=ttyS0",
            "-drive", f"file={self.overlay},if=none,id=root,format=qcow2,cache=none",
            "-device", "virtio-blk-pci,drive=root,serial=innomatrix-root",
            # restrict=on: the guest reaches nothing but this one forward; it has every package already.
            "-netdev", f"user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:{port}-:22",
            "-device", "virtio-net-pci,netdev=n0",
            # The host's entropy for the guest's: without it a guest whose saved random seed is not
            # credited gathers its own by timer jitter, which under TCG once held a getrandom() at
            # boot for minutes and no SSH login came (CI, power-loss test's first boot).
            "-object", "rng-random,id=rng0,filename=/dev/urandom", "-device", "virtio-rng-pci,rng=rng0",
        ]
        for member in self.disks:
            # cache.direct=on (cache=none, with no-flush as the disk asks): QEMU writes to the file
            # with O_DIRECT, past this machine's page cache, and keeps no write cache of its own for
            # a raw file: killing QEMU loses what the guest had not written to its disk yet, never
            # what it had. A pulled plug.
            drive = f"file={member.file},if=none,id=d-{member.serial},format=raw,cache.direct=on"
            drive += ",cache.no-flush=off" if member.disk.host_flushes else ",cache.no-flush=on"
            if member.disk.iops is not None:
                drive += f",throttling.iops-total={member.disk.iops}"
            if member.disk.bps is not None:
                drive += f",throttling.bps-total={member.disk.bps}"
            device = "virtio-blk-pci" if member.bus == "virtio" else "nvme"
            argv += ["-drive", drive, "-device", f"{device},drive=d-{member.serial},serial={member.serial}"]
        return argv

    def boot(self) -> None:
        """Start QEMU on this host's disks as they are (the first boot, or the next one after a
        pulled plug), wait until the bench user logs in over SSH, and mark the apt lists fresh.
        A later boot keeps the port, which the inventory names. A stalled boot (BootStalled) is
        killed and started again, at most STALLED_BOOTS times."""
        for stalled in range(STALLED_BOOTS + 1):
            try:
                self._boot_once()
                return
            except BootStalled as stall:
                self.close()
                self.stalled_boots += 1
                if stalled == STALLED_BOOTS:
                    raise
                note = f"--- innomatrix vm_host: {stall.args[0].splitlines()[0]}; killed, booting again ---"
                with open(self.console_log, "a") as console:
                    console.write(f"\n{note}\n")
                print(note, file=sys.stderr, flush=True)

    def _boot_once(self) -> None:
        if self.running():
            raise RuntimeError(f"{PREFIX + self.name} is running already (pid {self.process.pid})")
        ports = [self.port] if self.port is not None else candidate_ports(PORTS, _ports_taken)
        last_error = "no free port in 36000-36999"
        for attempt, port in enumerate(ports):
            if attempt == 5:
                break
            started = time.monotonic()
            with open(self.qemu_log, "a") as qemu_log:
                log_start = qemu_log.tell()
                self.process = subprocess.Popen(self._qemu_argv(port), stdin=subprocess.DEVNULL, stdout=qemu_log,
                                                stderr=qemu_log, preexec_fn=_die_with_parent)
            self.port = port
            _ports_taken.add(port)
            try:
                self._wait_for_ssh(log_start)
            except PortTaken as taken:
                last_error = str(taken)
                _ports_taken.discard(port)
                self.port = None
                continue
            self.boot_seconds = time.monotonic() - started
            self._mark_apt_lists_fresh()
            return
        raise RuntimeError(f"cannot start {PREFIX + self.name}: {last_error}")

    def _console_size(self) -> int:
        try:
            return self.console_log.stat().st_size
        except FileNotFoundError:
            return 0

    def _wait_for_ssh(self, log_start: int) -> None:
        """Until the bench user logs in; raises at once if this boot's qemu (whose messages start
        at log_start in the QEMU log) ends, and BootStalled if its console falls silent."""
        deadline = time.monotonic() + SSH_TIMEOUT
        console_size, console_moved = self._console_size(), time.monotonic()
        while True:
            if self.process.poll() is not None:
                with open(self.qemu_log) as qemu_log:
                    qemu_log.seek(log_start)
                    errors = qemu_log.read()[-2000:]
                if "host forwarding rule" in errors.lower():
                    raise PortTaken(f"port {self.port}: {errors.strip()}")
                raise RuntimeError(f"qemu of {PREFIX + self.name} exited {self.process.returncode}: {errors.strip()}\n"
                                   f"console:\n{self.console_tail()}")
            done = subprocess.run(self.ssh_argv("true"), capture_output=True, text=True, timeout=30,
                                  stdin=subprocess.DEVNULL)
            if done.returncode == 0:
                return
            now, size = time.monotonic(), self._console_size()
            if size != console_size:
                console_size, console_moved = size, now
            elif now - console_moved > CONSOLE_SILENCE:
                raise BootStalled(
                    f"boot of {PREFIX + self.name} stalled: its console silent for {now - console_moved:.0f} s, "
                    f"no SSH login (ssh exited {done.returncode}: {done.stderr.strip()})\n"
                    f"console:\n{self.console_tail()}")
            if now > deadline:
                raise RuntimeError(
                    f"no SSH login as {USER}@127.0.0.1:{self.port} ({PREFIX + self.name}) within {SSH_TIMEOUT:.0f} s: "
                    f"ssh exited {done.returncode}: {done.stderr.strip()}\nconsole:\n{self.console_tail()}")
            time.sleep(1)

    def _mark_apt_lists_fresh(self) -> None:
        # A test-only setting: this guest is offline on purpose (restrict=on) and its image holds
        # every package the roles install, with package lists; but the roles' apt tasks refresh
        # lists older than a day (cache_valid_time: 86400), which cannot work here. Ansible's apt
        # module dates the lists by /var/lib/apt/periodic/update-success-stamp (else by
        # /var/lib/apt/lists): touched at each boot, the image's lists count as just fetched.
        self.sh("mkdir -p /var/lib/apt/periodic && touch /var/lib/apt/periodic/update-success-stamp")

    # --- use ------------------------------------------------------------------------------------

    def inventory_vars(self) -> dict:
        # A login to this host costs a second of emulated CPU (sshd's key exchange under TCG), which
        # every Ansible task paid: one master connection carries them instead, its socket in base
        # (one host's: the path is keyed on port and key). Unlike a container's sshd, it cannot
        # outlive the host: when qemu ends (close(), a pulled plug) its port forward goes, and the
        # master's connection with it, so a lost host is lost to Ansible too.
        shared = {"ansible_ssh_args": f"-o ControlMaster=auto -o ControlPersist=60s -o ControlPath={self.base}/ssh-%C",
                  "ansible_ssh_common_args": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"}
        # The matrix's device under test, as RemoteHost gives its loop device: the first member.
        return {**login_vars(self.port, self.key), **shared, "device": self.disks[0].by_id if self.disks else ""}

    def ssh_argv(self, *command: str) -> list[str]:
        return ssh_argv(self.port, self.key, *command)

    def exec(self, argv: list[str], timeout: float = 120, **kwargs) -> subprocess.CompletedProcess:
        """Run argv in the guest as root (sudo, over SSH); never raises on failure."""
        if "input" not in kwargs:
            kwargs["stdin"] = subprocess.DEVNULL
        # ssh hands the remote shell one string: quote each argument for it.
        return subprocess.run(self.ssh_argv(shlex.join(["sudo", "-n", "--", *argv])), capture_output=True,
                              text=True, timeout=timeout, **kwargs)

    def sh(self, script: str, **kwargs) -> subprocess.CompletedProcess:
        """Run a shell script in the guest as root; raises if it fails."""
        done = self.exec(["sh", "-c", script], **kwargs)
        if done.returncode != 0:
            raise RuntimeError(f"in {PREFIX + self.name}: sh -c {script!r} exited {done.returncode}: "
                               f"{(done.stdout + done.stderr).strip()}")
        return done

    def console_tail(self, lines: int = 40) -> str:
        if not self.console_log.exists():
            return "(no console output)"
        return "\n".join(self.console_log.read_text(errors="replace").splitlines()[-lines:])

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    # --- power loss and teardown ----------------------------------------------------------------

    def pull_plug(self) -> None:
        """SIGKILL to this host's qemu, then wait until it is gone: the guest's page cache and
        the disks' unflushed writes are lost, what reached the disk files stays. boot() brings
        the host back on the same disks."""
        if not self.running():
            raise RuntimeError(f"{PREFIX + self.name} is not running")
        self.process.kill()
        self.process.wait(timeout=30)

    def close(self) -> None:
        """Kill this host's qemu (the process it started, by that process's PID), idempotent. The
        files stay for the caller, who removes base."""
        if self.running():
            self.process.kill()
            self.process.wait(timeout=30)
        if self.port is not None:
            _ports_taken.discard(self.port)


@contextlib.contextmanager
def vm_host(prefix: str, name: str, **options) -> Iterator[tuple[Path, VmHost]]:
    """A fresh base directory under /var/tmp (where the image is, to be hard linked) and one
    VmHost in it; the host closed and the directory removed afterwards."""
    base = Path(tempfile.mkdtemp(prefix=prefix, dir="/var/tmp"))
    host = None
    try:
        host = VmHost(base, name, **options)
        yield base, host
    finally:
        if host is not None:
            host.close()
        shutil.rmtree(base, ignore_errors=True)
