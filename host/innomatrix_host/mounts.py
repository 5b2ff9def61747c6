"""Who holds a mount point, and an unmount that says so instead of "target is busy".

Part of innomatrix_host: the standard library only.
Holders are found from /proc (working directory, root, executable, open files, mapped files),
never guessed from process names. Only processes the suite itself started — they carry
STARTED_BY in their environment, set by mark_started_processes below — are
stopped, by pid; anyone else's process is named and left alone.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import NamedTuple

STARTED_BY = "INNOMATRIX_STARTED_BY"


def mark_started_processes(what: str) -> None:
    """Mark every process this module starts from now on (and their children) as the suite's own.

    /proc/PID/environ shows a process's environment as it was started, so the module's own
    process stays unmarked while the servers, drivers and collectors it starts carry the mark:
    an unmount can then stop the suite's leftovers by pid even when the module that started
    them died.
    """
    os.environ[STARTED_BY] = f"{what}:{os.getpid()}"


class Holder(NamedTuple):
    pid: int
    name: str
    ours: bool

    def __str__(self) -> str:
        return f"{self.name} (pid {self.pid})"


def _under(path: str, mountpoint: str) -> bool:
    path = path.removesuffix(" (deleted)")
    return path == mountpoint or path.startswith(mountpoint.rstrip("/") + "/")


def _paths_of(proc: Path) -> list[str]:
    """Every path a process keeps open: what /proc shows of it (it may vanish meanwhile)."""
    paths = []
    for link in ("cwd", "root", "exe"):
        try:
            paths.append(os.readlink(proc / link))
        except OSError:
            pass
    try:
        for fd in os.scandir(proc / "fd"):
            try:
                paths.append(os.readlink(fd.path))
            except OSError:
                pass
    except OSError:
        pass
    try:
        with open(proc / "maps", errors="replace") as maps:
            paths.extend(line.split(None, 5)[5].strip() for line in maps if len(line.split(None, 5)) == 6)
    except OSError:
        pass
    return paths


def _started_by_suite(proc: Path) -> bool:
    try:
        environ = (proc / "environ").read_bytes()
    except OSError:
        return False
    return any(entry.startswith(STARTED_BY.encode() + b"=") for entry in environ.split(b"\0"))


def _name(proc: Path) -> str:
    try:
        return (proc / "comm").read_text().strip() or "?"
    except OSError:
        return "?"


def holders(mountpoint: str, proc_root: Path = Path("/proc")) -> list[Holder]:
    """The processes that keep `mountpoint` busy, in pid order (this process excluded)."""
    mountpoint = os.path.realpath(mountpoint)
    found = []
    for entry in proc_root.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        if any(_under(path, mountpoint) for path in _paths_of(entry)):
            found.append(Holder(int(entry.name), _name(entry), _started_by_suite(entry)))
    return sorted(found, key=lambda holder: holder.pid)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie holds nothing, and its parent may never reap it.
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def stop_ours(found: list[Holder], grace: float = 30.0) -> list[Holder]:
    """SIGTERM the suite's own holders (a server shuts down cleanly on it), SIGKILL after `grace`."""
    ours = [holder for holder in found if holder.ours]
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
        # Still there and still ours: a pid freed meanwhile may belong to someone else now.
        left = [holder for holder in ours if _alive(holder.pid) and _started_by_suite(Path(f"/proc/{holder.pid}"))]
        for holder in left:
            try:
                os.kill(holder.pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + wait
        while any(_alive(holder.pid) for holder in left) and time.monotonic() < deadline:
            time.sleep(0.1)
    return ours


def is_mounted(mountpoint: str) -> bool:
    target = os.path.realpath(mountpoint)
    with open("/proc/self/mountinfo") as mountinfo:
        return any(line.split()[4].replace("\\040", " ") == target for line in mountinfo)


def unmount(mountpoint: str, grace: float = 30.0) -> dict:
    """Stop what the suite left holding the mount, then unmount; say who holds it if that fails.

    Returns {changed, stopped: [..], error: str | None}; the error is one line.
    """
    if not is_mounted(mountpoint):
        return {"changed": False, "stopped": [], "error": None}
    stopped = [str(holder) for holder in stop_ours(holders(mountpoint), grace)]
    done = subprocess.run(["umount", mountpoint], capture_output=True, text=True)
    if done.returncode == 0:
        return {"changed": True, "stopped": stopped, "error": None}
    held = holders(mountpoint)
    if held:
        why = "held by " + ", ".join(str(holder) for holder in held)
    else:
        detail = (done.stderr or done.stdout).strip().splitlines()[-1:] or [f"umount exited {done.returncode}"]
        why = f"{detail[0]} (no process holds it: a mount below it or a loop device backed by a file on it?)"
    return {"changed": bool(stopped), "stopped": stopped, "error": f"cannot unmount {mountpoint}: {why}"}
