"""A layout matrix played on a VM host (vm_host.py), shared by the VM test modules: the guest's
inventories (its layout members; the cache's slow disk and flash), the knobs of a run, the play,
and what a pass must leave behind (nothing). Seed 000's cache disks are named here: the slow disk
held to HDD_IOPS and the unthrottled emulated NVMe in front of it."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from pathlib import Path

import yaml

from e2e_env import ok
from remote_hosts import play_matrix, project_inventory, start_matrix
from vm_host import Disk
from vm_layout_knobs import KNOBS

# The flash of the cache tests: an emulated NVMe device, unthrottled (and 512 MiB: it holds the
# dataset with room to spare, as the seed's cache did).
CACHE_SERIAL = "im-flash"
# The slow disk behind the caches, HDD-like as issue #31 asks ("e.g. 150"). Under TCG a cache
# trial is bound by the guest's CPU, not the flash: 22.5-23.5 tps on a quiet machine here, where a
# 300-IOPS member alone read 7 tps and this one 3.5-4.0.
HDD_SERIAL, HDD_IOPS = "im-hdd", 150
REPEATS_CACHE = 3
CACHE_DISKS = {"disks": [Disk(HDD_SERIAL, size=1 << 30, iops=HDD_IOPS)], "nvme": [Disk(CACHE_SERIAL, size=1 << 29)]}


class Layouts:
    """The VM host as the tests play the matrix on it: `members` and `spare` are serials of its
    layout members (none in a guest of the cache disks alone)."""

    def __init__(self, base: Path, host, members: Sequence[str] = (), spare: str | None = None):
        self.base, self.host = base, host
        self.results = base / "results"
        by_serial = {disk.serial: disk.by_id for disk in host.disks}
        self.members = [by_serial[serial] for serial in members]
        self.spare = by_serial[spare] if spare else None
        self.hdd, self.flash = by_serial[HDD_SERIAL], by_serial[CACHE_SERIAL]
        self.knobs = base / "knobs.yml"
        self.inventory = project_inventory(base, {"vm": host}, host_vars={"vm": {"devices": self.members}})
        # A cache layout's two members: the backing device (the HDD-like disk) first, the flash second.
        self.backing_and_flash = project_inventory(base, {"vm": host}, name="cache.yml",
                                                   host_vars={"vm": {"devices": [self.hdd, self.flash]}})

    def write_knobs(self, **knobs) -> Path:
        self.knobs.write_text(yaml.safe_dump({**KNOBS, "repeats": 2, "results_dir": str(self.results),
                                              "run_name": "layouts",
                                              "preflight_secrets_dir": str(self.base / "secrets"), **knobs}))
        return self.knobs

    def start(self, log: Path, **knobs) -> subprocess.Popen:
        """The matrix on the layouts' members, started and left running (its host is to be lost)."""
        return start_matrix(self.inventory, self.write_knobs(**knobs), log=log)

    def play(self, *extra: str, inventory: Path | None = None, **knobs) -> object:
        done = play_matrix(inventory or self.inventory, self.write_knobs(**knobs), *extra, log=self.base / "last-play.log")
        # Under TCG every task costs seconds: the slowest tasks of each play, in pytest's -s output.
        print("\n".join(done.stdout.splitlines()[-22:]))
        return done

    def measure(self, run_name: str, inventory: Path | None = None, **knobs) -> None:
        """A play that must measure every cell: as play(), and where the only cells it did not
        finish are trials made invalid by sysbench's reporting thread waking late (a second
        skipped: the guest starved of CPU by the other lane, as in a CI run), played once more, as a
        user would; the rerun measures just those cells again and sets the invalid ones aside."""
        done = self.play(inventory=inventory, run_name=run_name, **knobs)
        if done.returncode != 0:
            trials = {str(path.parent.relative_to(self.results / run_name)): json.loads(path.read_text())
                      for path in sorted((self.results / run_name).glob("*/*/*/*/*/*/t*/r[0-9]/trial.json"))}
            unfinished = {cell: trial for cell, trial in trials.items() if trial["status"] != "ok"}
            late = {cell: trial["reasons"] for cell, trial in unfinished.items() if trial["status"] == "invalid" and
                    all(reason.startswith("driver.log intervals out of step: ") for reason in trial["reasons"])}
            if unfinished and late.keys() == unfinished.keys():
                print(f"measured again, sysbench's reporting thread late: {late}")
                done = self.play(inventory=inventory, run_name=run_name, **knobs)
        ok(done)

    def first_mib(self) -> dict[str, str]:
        """The first MiB of every member disk, hashed in the guest: what a refusal must leave alone."""
        done = self.host.sh("for d in " + " ".join(disk.by_id for disk in self.host.disks)
                            + "; do echo $d $(head -c 1048576 $d | sha256sum | cut -c1-16); done")
        return dict(line.split() for line in done.stdout.splitlines())

    def leftovers(self) -> str:
        """md arrays, volume groups, device-mapper devices, bcache devices and cache sets in the
        guest: none once a pass ends."""
        return self.host.sh("cat /proc/mdstat | grep ^md || true; vgs --noheadings 2>/dev/null || true;"
                            " dmsetup ls 2>/dev/null | grep -v 'No devices' || true;"
                            " ls /sys/block | grep ^bcache || true; ls /sys/fs/bcache 2>/dev/null | grep -- - || true"
                            ).stdout.strip()
