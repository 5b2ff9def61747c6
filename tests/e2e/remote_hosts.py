"""Real remote benchmark hosts for the end-to-end tests: podman containers of a bench image
(tests/molecule/image.sh: bookworm-bench with MariaDB 10.11, trixie-bench with 11.8, trixie-mysql
with Oracle MySQL 9.7),
reached over real SSH on 127.0.0.1 as a non-root user (`bench`) with passwordless sudo, each
with its own loop device.

    host = RemoteHost(base, "bench-a")     # base: a per-test directory under /var/tmp, mode 0755
    host = RemoteHost(base, "bench-b", image="trixie-bench")
    host = RemoteHost(base, "bench-c", image="trixie-mysql")
    write_inventory(base / "hosts.yml", {"bench-a": host})
    ...                                    # ansible-playbook -i base/hosts.yml matrix.yml
    host.close()

Everything a host makes is found again by what names it, never by a number: its container by
the name innomatrix-e2e-<pid>-<name>, its loop device by its backing file <base>/<name>.disk.
close() removes exactly those two; the caller removes the base directory.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
IMAGE_SCRIPT = ROOT / "tests" / "molecule" / "image.sh"
CONTAINERS_CONF = ROOT / "tests" / "molecule" / "containers.conf"
IMAGE = "localhost/innomatrix-molecule:{}"
PREFIX = f"innomatrix-e2e-{os.getpid()}-"
USER = "bench"
PORTS = range(35000, 36000)
DISK_SIZE = 2 * 1024**3
SSH_TIMEOUT = 30.0

needs_podman = pytest.mark.skipif(
    shutil.which("podman") is None,
    reason="REMOTE-HOST TESTS SKIPPED: podman is not installed; `make test` installs it "
    "(through .make/molecule-os: podman runc catatonit debootstrap)",
)

# podman here: runc, not crun (hybrid cgroups), and rlimits under the host's hard limits.
PODMAN_ENV = dict(os.environ, CONTAINERS_CONF=str(CONTAINERS_CONF))

_images_checked = False
_ports_taken: set[int] = set()


def podman(*args: str, check: bool = True, timeout: float = 120, **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run(["podman", *args], capture_output=True, text=True, env=PODMAN_ENV,
                          timeout=timeout, **kwargs)
    if check and done.returncode != 0:
        raise RuntimeError(f"podman {shlex.join(args)} exited {done.returncode}: {done.stderr.strip()}")
    return done


def ensure_images() -> None:
    """Build the images if the script or the mirror changed (image.sh is idempotent: a few
    minutes when it builds, well under a second when they are up to date). Once per process."""
    global _images_checked
    if _images_checked:
        return
    done = subprocess.run(["bash", str(IMAGE_SCRIPT)], capture_output=True, text=True, env=PODMAN_ENV,
                          timeout=1200)
    if done.returncode != 0:
        raise RuntimeError(f"{IMAGE_SCRIPT} failed:\n{(done.stdout + done.stderr)[-4000:]}")
    _images_checked = True


def _port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def candidate_ports(ports: range, taken: set[int]):
    """`ports` in a fixed order starting from one the pid gives: the same process asks for the
    same ports every run, two test processes rarely meet, and one that is `taken` (by this
    process) or bound (by anyone) is passed over. vm_host.py draws its ports from here too."""
    start = os.getpid() % len(ports)
    for offset in range(len(ports)):
        port = ports[(start + offset) % len(ports)]
        if port not in taken and _port_is_free(port):
            yield port


def ssh_key(base: Path) -> Path:
    """The ed25519 key pair every host of one base directory accepts: made once per base dir."""
    directory = base / "ssh"
    key = directory / "id_ed25519"
    if not key.exists():
        directory.mkdir(mode=0o700, exist_ok=True)
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "innomatrix-e2e", "-f", str(key)],
                       check=True, capture_output=True)
    return key


def login_vars(port: int | None, key: Path) -> dict:
    """How Ansible reaches a test host (a container here, a VM in vm_host.py): SSH on 127.0.0.1 as
    USER with this key, become root."""
    return {
        "ansible_host": "127.0.0.1",
        "ansible_port": port,
        "ansible_user": USER,
        "ansible_ssh_private_key_file": str(key),
        "ansible_become": True,
        "ansible_python_interpreter": "/usr/bin/python3",
        # No connection sharing, hence no ControlPersist either. A master connection outlives
        # its sshd: after stop_sshd() (or a pulled plug) a persisted master (Ansible's default
        # ssh_args say ControlPersist=60s) would still carry commands, and a test of a lost host
        # would lose nothing; a master keyed on 127.0.0.1:<port> could also outlive its host and be
        # reused by the next host on that port. ssh keeps the first value it is given for an
        # option and Ansible puts ssh_args (ControlMaster=auto) before ssh_common_args, so
        # ssh_args is replaced too, else the ControlMaster=no below would lose; ControlPath=none
        # keeps ssh from even joining a master some other run left (with any ControlPersist,
        # even "no", Ansible adds a ControlPath of its own). Each task pays a new login: tens of
        # milliseconds on 127.0.0.1, nothing to a benchmark cell.
        "ansible_ssh_args": "-o ControlMaster=no -o ControlPath=none",
        "ansible_ssh_common_args": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o ControlMaster=no",
    }


def ssh_argv(port: int | None, key: Path, *command: str) -> list[str]:
    """ssh to a test host as USER, batch mode, no host keys kept, no connection sharing."""
    return ["ssh", "-i", str(key), "-p", str(port), "-o", "BatchMode=yes",
            "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",
            "-o", "ConnectTimeout=5", "-o", "ControlMaster=no", f"{USER}@127.0.0.1", *command]


class RemoteHost:
    def __init__(self, base: Path, name: str, image: str = "bookworm-bench"):
        ensure_images()
        self.base = Path(base)
        self.name = name
        self.image = IMAGE.format(image)
        self.container = PREFIX + name
        self.key = ssh_key(self.base)
        self.disk = self.base / f"{name}.disk"
        self.port: int | None = None
        self.device = ""
        try:
            self._attach_device()
            self._run_container()
            self._check_device()
            self._prepare_login()
            self.start_sshd()
        except BaseException:
            self.close()
            raise

    # --- bring-up -------------------------------------------------------------------------------

    def _attach_device(self) -> None:
        with open(self.disk, "wb") as disk:
            disk.truncate(DISK_SIZE)
        # Direct I/O as the project's own demo device (roles/preflight): a plain loop device reads
        # through the host's page cache, and O_DIRECT benchmarks on it would measure RAM.
        done = subprocess.run(["losetup", "--direct-io=on", "--show", "-f", str(self.disk)],
                              capture_output=True, text=True, check=True)
        self.device = done.stdout.strip()

    def _run_container(self) -> None:
        # A container of ours by this name can only be left by a dead process of the same pid.
        podman("rm", "-f", "-t", "0", self.container, check=False)
        last_error = "no free port in 35000-35999"
        for attempt, port in enumerate(candidate_ports(PORTS, _ports_taken)):
            if attempt == 5:
                break
            done = podman(
                "run", "-d", "--privileged", "--runtime", "runc",
                "--ulimit", "nofile=16384:16384", "--ulimit", "nproc=16384:16384",
                # catatonit as PID 1 (installed with podman by `make test`): it reaps orphans as a
                # host's init does. `sleep` would leave every daemonised process that ends (sshd,
                # a stopped mariadbd) as a zombie that processes() still lists as [mariadbd].
                "--init",
                "--name", self.container, "--hostname", self.name,
                "-p", f"127.0.0.1:{port}:22",
                self.image, "sleep", "infinity", check=False)
            if done.returncode == 0:
                self.port = port
                _ports_taken.add(port)
                return
            last_error = done.stderr.strip()
            podman("rm", "-f", "-t", "0", self.container, check=False)
            if "address already in use" not in last_error:
                break
        raise RuntimeError(f"cannot start container {self.container}: {last_error}")

    def _check_device(self) -> None:
        """A privileged container gets the host's device nodes as they were when it started; make
        the node if this one is missing, with the host's major and minor numbers."""
        if self.exec(["test", "-b", self.device]).returncode == 0:
            return
        rdev = os.stat(self.device).st_rdev
        self._sh(f"mknod {shlex.quote(self.device)} b {os.major(rdev)} {os.minor(rdev)}"
                 f" && chmod 660 {shlex.quote(self.device)} && chgrp disk {shlex.quote(self.device)}")
        if self.exec(["test", "-b", self.device]).returncode != 0:
            raise RuntimeError(f"{self.device} is not a block device inside {self.container}")

    def _prepare_login(self) -> None:
        public = Path(f"{self.key}.pub").read_text()
        self._sh(
            "set -e; ssh-keygen -A >/dev/null; mkdir -p /run/sshd;"
            # `-p '*'`: no password, but not a locked account ('!') either.
            f"useradd --create-home --shell /bin/bash --password '*' {USER};"
            f"echo '{USER} ALL=(ALL) NOPASSWD:ALL' >/etc/sudoers.d/{USER}; chmod 0440 /etc/sudoers.d/{USER};"
            f"visudo -cq -f /etc/sudoers.d/{USER};"
            f"install -d -m 0700 -o {USER} -g {USER} ~{USER}/.ssh;"
            f"cat >~{USER}/.ssh/authorized_keys; chown {USER}:{USER} ~{USER}/.ssh/authorized_keys;"
            f"chmod 0600 ~{USER}/.ssh/authorized_keys",
            input=public)

    # --- use ------------------------------------------------------------------------------------

    def inventory_vars(self) -> dict:
        return {**login_vars(self.port, self.key), "device": self.device}

    def ssh_argv(self, *command: str) -> list[str]:
        return ssh_argv(self.port, self.key, *command)

    def exec(self, argv: list[str], timeout: float = 120, **kwargs) -> subprocess.CompletedProcess:
        """Run argv in the container as root (podman exec, not SSH); never raises on failure."""
        interactive = ["-i"] if "input" in kwargs else []
        return podman("exec", *interactive, self.container, *argv, check=False, timeout=timeout, **kwargs)

    def _sh(self, script: str, **kwargs) -> subprocess.CompletedProcess:
        done = self.exec(["sh", "-c", script], **kwargs)
        if done.returncode != 0:
            raise RuntimeError(f"in {self.container}: sh -c {script!r} exited {done.returncode}: "
                               f"{(done.stdout + done.stderr).strip()}")
        return done

    def processes(self) -> list[str]:
        """`ps -e -ww -o pid,args` inside the container: one line a process, no header, not ps."""
        done = self.exec(["ps", "-e", "-ww", "-o", "pid=,args="])
        return [line for line in done.stdout.splitlines() if line.split(None, 1)[1:] != ["ps -e -ww -o pid=,args="]]

    def stop_sshd(self) -> None:
        """The host is lost to the controller: its sshd ends, and with it every open session
        (pkill runs in the container's own PID namespace: only this host's sshd processes)."""
        # The listener and each session: `sshd` on Debian 12, `sshd-session` too from OpenSSH 9.8 (Debian 13).
        self.exec(["pkill", "-KILL", "-x", "sshd|sshd-session"])
        deadline = time.monotonic() + 10
        while any(line.split(None, 1)[1].startswith(("sshd", "/usr/sbin/sshd")) for line in self.processes()):
            if time.monotonic() > deadline:
                raise RuntimeError(f"sshd still runs in {self.container}: {self.processes()}")
            time.sleep(0.1)

    def start_sshd(self) -> None:
        """Start sshd and wait, at most SSH_TIMEOUT seconds, until the bench user logs in."""
        self._sh("mkdir -p /run/sshd && /usr/sbin/sshd")
        deadline = time.monotonic() + SSH_TIMEOUT
        while True:
            done = subprocess.run(self.ssh_argv("true"), capture_output=True, text=True, timeout=30,
                                  stdin=subprocess.DEVNULL)
            if done.returncode == 0:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"no SSH login as {USER}@127.0.0.1:{self.port} ({self.container}) within {SSH_TIMEOUT:.0f} s: "
                    f"ssh exited {done.returncode}: {done.stderr.strip()}\nprocesses: {self.processes()}")
            time.sleep(0.2)

    # --- teardown -------------------------------------------------------------------------------

    def loop_devices(self) -> list[str]:
        """The loop devices backed by this host's file (normally its one device)."""
        if not self.disk.exists():
            return []
        found = subprocess.run(["losetup", "-n", "-O", "NAME", "-j", str(self.disk)], capture_output=True, text=True)
        return found.stdout.split()

    def container_exists(self) -> bool:
        return podman("container", "exists", self.container, check=False).returncode == 0

    def close(self) -> None:
        """Remove the container and detach the loop device; idempotent. The backing file and the
        key stay for the caller, who removes the base directory."""
        podman("rm", "-f", "-t", "0", self.container, check=False)
        for device in self.loop_devices():
            subprocess.run(["losetup", "-d", device], capture_output=True)
        if self.port is not None:
            _ports_taken.discard(self.port)


def our_containers() -> list[str]:
    """Every container this process started (they all carry PREFIX)."""
    done = podman("ps", "-a", "--filter", f"name=^{PREFIX}", "--format", "{{.Names}}", check=False)
    return [name for name in done.stdout.split() if name.startswith(PREFIX)]


def write_inventory(path: Path, hosts: dict[str, RemoteHost], host_vars: dict[str, dict] | None = None) -> None:
    """A YAML inventory with every host in group `bench`, the group matrix.yml plays on; host_vars
    adds a host's own knobs (mysql_flavor, say), which win over the project's group_vars."""
    entries = {name: {**host.inventory_vars(), **(host_vars or {}).get(name, {})} for name, host in hosts.items()}
    Path(path).write_text(yaml.safe_dump({"all": {"children": {"bench": {"hosts": entries}}}}, sort_keys=False))


def project_inventory(base: Path, hosts: dict[str, RemoteHost], name: str = "hosts.yml",
                      host_vars: dict[str, dict] | None = None) -> Path:
    """base/inventory/<name> for these hosts, beside a link to the project's group_vars: the knob
    defaults inventory/ gives any inventory in it. Each host's device is its own host variable
    (-e device= would set one for all)."""
    directory = base / "inventory"
    if not directory.exists():
        directory.mkdir()
        (directory / "group_vars").symlink_to(ROOT / "inventory" / "group_vars")
    path = directory / name
    write_inventory(path, hosts, host_vars)
    return path


def _matrix_argv(inventory: Path, knobs: Path, *extra: str) -> list[str]:
    return [str(ROOT / ".venv" / "bin" / "ansible-playbook"), "-i", str(inventory), "matrix.yml", "-e", f"@{knobs}", *extra]


def _plain_output() -> dict[str, str]:
    """This process's environment as it is now, with Ansible's colours off."""
    return dict(os.environ, ANSIBLE_FORCE_COLOR="0", ANSIBLE_NOCOLOR="1")


def play_matrix(inventory: Path, knobs: Path, *extra: str, log: Path, timeout: float = 1800) -> subprocess.CompletedProcess:
    """ansible-playbook matrix.yml against the inventory with the knobs file; its output goes to log."""
    done = subprocess.run(_matrix_argv(inventory, knobs, *extra), cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env=_plain_output())
    log.write_text(done.stdout + done.stderr)
    return done


def start_matrix(inventory: Path, knobs: Path, *extra: str, log: Path) -> subprocess.Popen:
    """play_matrix, started and left running (a host is to be lost under it). Its output, stderr
    and stdout together, goes straight to log: a pipe nobody reads until the play ends would fill
    (64 KiB) and stop the play mid-task."""
    with open(log, "w") as out:
        return subprocess.Popen(_matrix_argv(inventory, knobs, *extra), cwd=ROOT, stdout=out,
                                stderr=subprocess.STDOUT, env=_plain_output())


@contextlib.contextmanager
def remote_hosts(prefix: str, images: dict[str, str]) -> Iterator[tuple[Path, dict[str, RemoteHost]]]:
    """A fresh base directory under /var/tmp (mode 0755: mysqld must reach its socket) and one
    RemoteHost per name in it, of its image ({name: "trixie-bench"}); every host closed and the
    directory removed afterwards."""
    base = Path(tempfile.mkdtemp(prefix=prefix, dir="/var/tmp"))
    base.chmod(0o755)
    hosts: dict[str, RemoteHost] = {}
    try:
        for name, image in images.items():
            hosts[name] = RemoteHost(base, name, image)
        yield base, hosts
    finally:
        for host in hosts.values():
            host.close()
        shutil.rmtree(base, ignore_errors=True)
