"""Storage layouts on the VM test host (issue #30's figures; run as root, after `make test` has
built the VM image once).

    .venv/bin/python bench/layouts.py known      # boot time; throttled members 1, 2, 4: md-raid0 and lvm-stripe
    .venv/bin/python bench/layouts.py powerloss  # the plug pulled mid-trial on a layout, then the rerun
    .venv/bin/python bench/layouts.py oltp       # MariaDB and sysbench OLTP on md-raid0 and lvm-stripe
    .venv/bin/python bench/layouts.py cache      # seed 000: a flash cache in front of a slow disk (issue #31)
    .venv/bin/python bench/layouts.py bcache     # the same with bcache (writeback, writethrough) beside dm-cache
    .venv/bin/python bench/layouts.py cache-aa   # cache's disk alone, run five times unchanged: A/A
    .venv/bin/python bench/layouts.py cold       # every cold cache layout, each trial's cache as found

known: a VM (tests/e2e/vm_host.py) whose 4 member disks QEMU holds to MEMBER_IOPS each; one
matrix of fileio random reads (16 KiB, 16 threads) on md-raid0 and lvm-stripe over 1, 2 and 4
members, 3 repeats. Prints the VM's boot time, the play's wall time and time per pass, read IOPS
per layout and member count with the ratio to one member (the report's layout_by_members), and
LVM ÷ mdadm per member count with the report's between-trials interval and verdict
(layout_compare). The known answer: each layout reads about N × MEMBER_IOPS over N members, and
mdadm and LVM do not differ (the disks, not the layout, decide).

powerloss: md-raid0 over 2 members, fileio at 2 block sizes × 2 repeats; once the first cell is
home, the VM's qemu is killed (SIGKILL: the guest's page cache is gone). Prints what the play
said of the host, which cells were home and whether any changed, what the guest's kernel made
of the members after it booted again (udev reassembles the suite's array), what the rerun said
it removed and ran, and its cells' statuses. (No OLTP here: the server's crash recovery is not
in this figure.)

oltp: MariaDB with sysbench OLTP (read/write, 2 tables of 20k rows, 64M buffer pool) on
md-raid0 and lvm-stripe over 1 and 2 unthrottled members: what item 1 asks (everything works on
a layout as on a plain device), shown end to end. Prints the play's wall time, each cell's
status with the layout its trial.json read back and the filesystem's alignment, and the median
tps per layout and member count (layout_by_members). Under TCG the CPU, not the disks, decides
this tps: it is no figure of the layouts' speed.

cache: seed 000's table. The backing disk held to BACKING_IOPS (HDD-like), the cache device an
unthrottled emulated NVMe; OLTP with a 16M buffer pool over about 25 MB of data (the working set
beyond the pool, within the cache) on the disk alone, the flash alone, and dm-cache writeback,
dm-cache writethrough and dm-writecache in front of the disk, and dm-cache writeback made anew
before each trial (cold), 3 repeats. Prints the report's cache_layouts table (median tps, how the
trials found the cache and the blocks it held, the cache's read and write hit ratios and those of
each half of the window, dirty data at the end, the trials flagged),
every layout ÷ layout ratio with its interval and verdict (layout_compare), and each trial's bytes
per transaction from InnoDB down to the NVMe's own count (bytes_to_flash).

bcache: the same table, trials and VM with bcache: the disk alone, dm-cache writeback, and bcache
writeback (warm, and cold: its cache set made anew before each trial) and writethrough in front of
the disk (bcache counts read hits only: its write hit ratio is none).

cache-aa: the A/A beside cache's known answer. The same VM and trials; the disk alone, run five
times unchanged. Prints each run's trial medians, `innomatrix noise` of the first three (the
host's run-to-run floor for this layout, which a verdict between runs needs), and `innomatrix
compare` of the last two: the ratio should be near 1 with "no difference".

cold: every cache layout's cold twin (dm-cache writeback and writethrough, dm-writecache, bcache
writeback and writethrough) over the same two disks, fileio seqwr and table-rndrd, 3 s a cell, 2 repeats (a trial finds what the
one before it left, and must find the cache empty). Prints each trial's status, how long making
its cache anew took, the blocks cached when it began and when it ended.

Prints the figures; asserts nothing (speed is measured here, not tested).
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import yaml

from innomatrix import report
from innomatrix_host import layouts as host_layouts

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))  # the VM host and the inventories the e2e tests use

from remote_hosts import play_matrix, project_inventory, start_matrix  # noqa: E402
from vm_host import Disk, vm_host  # noqa: E402
from vm_layout_knobs import KNOBS, MEMBER_IOPS, finished_trials as trials  # noqa: E402

SERIALS = ("im-m1", "im-m2", "im-m3", "im-m4")


def inventory_and_knobs(base: Path, host, run_name: str, **knobs) -> tuple[Path, Path]:
    """The inventory (the VM, its disks as `devices`) and the knobs file of one run, in base."""
    inventory = project_inventory(base, {"vm": host}, host_vars={"vm": {"devices": [d.by_id for d in host.disks]}})
    path = base / f"{run_name}.yml"
    path.write_text(yaml.safe_dump({**KNOBS, "results_dir": str(base / "results"), "run_name": run_name,
                                    "preflight_secrets_dir": str(base / "secrets"), **knobs}))
    return inventory, path


def matrix(base: Path, host, run_name: str, **knobs) -> tuple[subprocess.CompletedProcess, float]:
    inventory, path = inventory_and_knobs(base, host, run_name, **knobs)
    started = time.monotonic()
    # Beside base, which goes when the host does: the play's own account stays to be read.
    done = play_matrix(inventory, path, log=base.parent / f"{base.name}-{run_name}.log", timeout=7200)
    return done, time.monotonic() - started


def exit_if_failed(done: subprocess.CompletedProcess) -> None:
    if done.returncode != 0:
        sys.exit(f"the matrix failed ({done.returncode}): {(done.stdout + done.stderr)[-3000:]}")


def known() -> None:
    disks = [Disk(serial, size=1 << 30, iops=MEMBER_IOPS) for serial in SERIALS]
    with vm_host("innomatrix-bench-vml-", "vm-k", disks=disks) as (base, host):
        base.chmod(0o755)
        print(f"VM boot to SSH: {host.boot_seconds:.1f} s")
        layouts, members = ["md-raid0", "lvm-stripe"], [1, 2, 4]
        done, wall = matrix(base, host, "known", layouts=layouts, members=members, repeats=3)
        exit_if_failed(done)
        passes = len(layouts) * len(members)
        print(f"matrix: {wall:.0f} s for {passes} passes ({wall / passes:.0f} s a pass, 3 cells of 6 s each)")
        tables = base / "results" / "known" / "tables"
        by_members = pd.read_csv(tables / "layout_by_members.csv")
        print(f"random read 16 KiB, 16 threads, each member held to {MEMBER_IOPS} IOPS: median read IOPS "
              "(× one member)")
        for _, row in by_members.iterrows():
            print(f"  {row['layout']:<11}" + "".join(
                f"  m{m}: {row[f'iops_m{m}']:7.1f} (×{row[f'ratio_m{m}']:.2f})" for m in members))
        compared = pd.read_csv(tables / "layout_compare.csv")
        for _, row in compared.iterrows():
            print(f"  {row['layout_a']} ÷ {row['layout_b']} over {row['members']}: {row['ratio']:.3f} "
                  f"(95 % CI {row['ci_low']:.3f}–{row['ci_high']:.3f}) {row['verdict']}")
        # The member-count verdict (m2 ÷ m4 about one half, "differs"): make test's VM play runs 4
        # members only, so this is where the report's members_compare meets its known answer.
        for _, row in pd.read_csv(tables / "members_compare.csv").iterrows():
            print(f"  {row['layout']} m{row['members_a']} ÷ m{row['members_b']}: {row['ratio']:.3f} "
                  f"(95 % CI {row['ci_low']:.3f}–{row['ci_high']:.3f}) {row['verdict']}")


def powerloss() -> None:
    disks = [Disk(serial, size=1 << 30) for serial in SERIALS[:2]]
    with vm_host("innomatrix-bench-vmp-", "vm-p", disks=disks) as (base, host):
        base.chmod(0o755)
        knobs = {"layouts": ["md-raid0"], "members": [2], "fileio_block_sizes": ["16K", "64K"], "repeats": 2,
                 "fileio_step_duration": 10, "reconnect_grace": 60}
        inventory, path = inventory_and_knobs(base, host, "loss", **knobs)
        run = base / "results" / "loss"
        # Beside base, which goes when the host does: the play's own account stays to be read.
        lost_log = base.parent / f"{base.name}-lost.log"
        playing = start_matrix(inventory, path, log=lost_log)
        while not trials(run):
            if playing.poll() is not None:
                sys.exit(f"the play ended before a cell came home: {lost_log.read_text()[-2000:]}")
            time.sleep(0.5)
        time.sleep(8)  # into the next cell's trial
        home = trials(run)
        host.pull_plug()
        pulled = time.monotonic()
        playing.wait(timeout=1800)
        out = lost_log.read_text()
        print(f"plug pulled with {len(home)} cell(s) home: {', '.join(home)}")
        print(f"the play ended {time.monotonic() - pulled:.0f} s later, exit {playing.returncode}; it said: "
              + " | ".join(line.strip() for line in out.splitlines() if "did not finish" in line or "UNREACHABLE" in line))
        after = trials(run)
        print(f"cells home after the loss: {len(after)}; changed or lost of those home before: "
              f"{[name for name in home if after.get(name) != home[name]] or 'none'}")
        host.boot()
        print(f"booted again in {host.boot_seconds:.1f} s; the guest's md: "
              + (host.sh("grep ^md /proc/mdstat || echo none").stdout.strip().replace("\n", "; ")))
        done, wall = matrix(base, host, "loss", **knobs)
        # The YAML callback may quote the message ("suite''s"): match words without the apostrophe.
        said = [line.strip() for line in done.stdout.splitlines()
                if "earlier layout from the members" in line or "cells:" in line and "to run" in line]
        print(f"rerun: exit {done.returncode} in {wall:.0f} s; it said: {' | '.join(said)}")
        final = trials(run)
        statuses = {name: json.loads(data)["status"] for name, data in final.items()}
        print(f"cells: {len(final)}, statuses {sorted(set(statuses.values()))}; the ones home before the loss "
              f"unchanged: {all(final[name] == data for name, data in home.items())}; leftovers in the guest: "
              + (host.sh("grep ^md /proc/mdstat; vgs --noheadings 2>/dev/null; dmsetup ls | grep -v 'No devices'"
                         " || true").stdout.strip() or "none"))


def oltp() -> None:
    disks = [Disk(serial, size=1 << 30) for serial in SERIALS[:2]]
    with vm_host("innomatrix-bench-vmo-", "vm-o", disks=disks) as (base, host):
        base.chmod(0o755)
        print(f"VM boot to SSH: {host.boot_seconds:.1f} s")
        layouts, members = ["md-raid0", "lvm-stripe"], [1, 2]
        # A 1 GiB member holds the pristine copy and the datadir: a small redo log leaves room.
        done, wall = matrix(base, host, "oltp", layouts=layouts, members=members, workloads=["oltp"],
                            oltp_tables=2, oltp_table_size=20000, threads=[4], warmup=5, duration=20,
                            mycnf_overrides={"innodb_log_file_size": "48M"})
        print(f"matrix: exit {done.returncode} in {wall:.0f} s for {len(layouts) * len(members)} passes")
        for name, data in trials(base / "results" / "oltp").items():
            trial = json.loads(data)
            layout = (trial.get("device") or {}).get("layout") or {}
            kernel = layout.get("read_back") or {}
            shape = (f"{kernel.get('level')} chunk {kernel.get('chunk_kib')} KiB" if kernel.get("kind") == "md"
                     else f"{kernel.get('stripes')} stripes of {kernel.get('stripe_kib')} KiB" if kernel.get("stripes")
                     # lvcreate makes one member's "stripe" a linear target: dmsetup says so.
                     else " ".join(str(kernel.get("table", "")).split()[2:3]) or "no dm table")
            print(f"  {name}: {trial['status']}{' (' + '; '.join(trial['reasons']) + ')' if trial.get('reasons') else ''}; "
                  f"read back: {kernel.get('name')} {shape} over {[m.get('name') for m in kernel.get('members', [])]}, "
                  f"xfs {(layout.get('alignment') or {}).get('mkfs_options', {}).get('xfs') or '(no stripe)'}")
        exit_if_failed(done)
        by_members = pd.read_csv(base / "results" / "oltp" / "tables" / "layout_by_members.csv")
        for _, row in by_members.iterrows():
            print(f"  {row['layout']:<11} {row['unit']}" + "".join(
                f"  m{m}: {row[f'median_m{m}']:7.1f}" for m in members if f"median_m{m}" in row))


# Seed 000's flash cache: the backing disk held to HDD-like IOPS, the flash an unthrottled NVMe.
BACKING_IOPS = 150
CACHE_LAYOUTS = ["lvm-backing-only", "lvm-cache-device-only", "lvm-cache-writeback", "lvm-cache-writeback-cold",
                 "lvm-cache-writethrough", "lvm-writecache"]
# bcache beside the disk alone and dm-cache (writeback), over the same two disks.
BCACHE_LAYOUTS = ["lvm-backing-only", "lvm-cache-writeback", "bcache-writeback", "bcache-writeback-cold",
                  "bcache-writethrough"]
# The disk alone, the side every cache is judged against, run unchanged five times.
AA_LAYOUTS = ["lvm-backing-only"]


# Seed 000's trials, shrunk for TCG: the working set (2 × 50k rows, about 25 MB) beyond the 16M pool
# and within the cache.
CACHE_OLTP = {"workloads": ["oltp"], "bp_sizes": ["16M"], "threads": [4], "warmup": 5, "duration": 15, "repeats": 3,
              "oltp_tables": 2, "oltp_table_size": 50000, "mycnf_overrides": {"innodb_log_file_size": "48M"}}


@contextlib.contextmanager
def cache_host(name: str):
    """A VM with the slow backing disk (a virtio disk held to BACKING_IOPS) and the flash (an
    unthrottled emulated NVMe); yields its base directory and the host."""
    with vm_host(f"innomatrix-bench-{name}-", name, disks=[Disk("im-hdd", size=1 << 30, iops=BACKING_IOPS)],
                 nvme=[Disk("im-flash", size=1 << 30)]) as (base, host):
        base.chmod(0o755)
        print(f"VM boot to SSH: {host.boot_seconds:.1f} s")
        yield base, host


def cache_matrix(base: Path, host, run_name: str, layouts: list[str]) -> None:
    done, wall = matrix(base, host, run_name, layouts=layouts, **CACHE_OLTP)
    print(f"matrix {run_name}: exit {done.returncode} in {wall:.0f} s for {len(layouts)} passes")
    exit_if_failed(done)


def cache() -> None:
    cache_table("cache", CACHE_LAYOUTS)


def bcache() -> None:
    cache_table("bcache", BCACHE_LAYOUTS)


def cache_table(run_name: str, layouts: list[str]) -> None:
    with cache_host(f"vm-{run_name}") as (base, host):
        cache_matrix(base, host, run_name, layouts)
        tables = base / "results" / run_name / "tables"
        print(f"backing device held to {BACKING_IOPS} IOPS, cache device unthrottled; 16M pool, 2 × 50k rows, "
              "4 threads, 3 repeats:")
        for _, row in pd.read_csv(tables / "cache_layouts.csv").iterrows():
            print(f"  {row['layout']:<24} median {row['throughput_median']:8.1f} {row['unit']}  start "
                  f"{row['cache_start'] if isinstance(row['cache_start'], str) else '-'} "
                  f"({row['cache_blocks_at_start']:.0f} blocks)  read hit ratio {row['cache_read_hit_ratio']:.3f}  "
                  f"write hit ratio {row['cache_write_hit_ratio']:.3f}  dirty at end "
                  f"{row['cache_dirty_mib_end']:.1f} MiB{'  flagged' if row['flagged'] else ''}")
        cold = sorted((base / "results" / run_name).glob("*/*-cold-m2/*/*/*/*/*/r*/trial.json"))
        if cold:
            print("cold trials: the cache as each found it, its read hit ratio in each half of the window, its flags:")
        for path in cold:
            trial = json.loads(path.read_text())
            began, halves = trial["cache_start"], (trial.get("cache") or {}).get("read_hit_ratio_halves")
            print(f"  {path.parents[6].name} {path.parent.name}: {began.get('counters', {}).get('used_blocks')} blocks "
                  f"at start, made anew in {began['made_s']} s; read hit ratio by half {halves}; flags "
                  f"{[flag.get('text', flag) if isinstance(flag, dict) else flag for flag in trial.get('flags', [])]}")
        print("layout ÷ layout (median tps ratio, 95 % interval between trials, verdict):")
        for _, row in pd.read_csv(tables / "layout_compare.csv").iterrows():
            print(f"  {row['layout_a']} ÷ {row['layout_b']}: {row['ratio']:.3f} ({row['ci_low']:.3f}–"
                  f"{row['ci_high']:.3f}) {row['verdict']}")
        print("bytes written per transaction: InnoDB and block layer (measured window), the NVMe's own count "
              "(SMART data units, the driver's whole run):")
        for _, row in pd.read_csv(tables / "bytes_to_flash.csv").iterrows():
            print(f"  {row['trial']}: InnoDB {row['innodb_bytes_per_trx']:,.0f}  block layer "
                  f"{row['device_bytes_per_trx']:,.0f}  flash {row['flash_bytes_per_trx']:,.0f}  "
                  f"({row['flash_mib_written']:.1f} MiB to {row['flash_disks']}; the kernel sent "
                  f"{row['flash_mib_sent']:.1f} MiB)")


def cache_aa() -> None:
    runs = [f"cache-aa-{index}" for index in range(1, 6)]
    with cache_host("vm-aa") as (base, host):
        for run_name in runs:
            cache_matrix(base, host, run_name, AA_LAYOUTS)
        results = base / "results"
        for run_name in runs:
            medians = [json.loads(trial)["summary"]["throughput_median"]
                       for trial in trials(results / run_name).values()]
            print(f"{run_name}: trial medians {medians} tps")
        print(f"`innomatrix noise` of {', '.join(runs[:3])}:")
        print("\n".join(report.noise(*(results / run_name for run_name in runs[:3])).lines))
        print(f"`innomatrix compare {runs[3]} {runs[4]}` (the same configuration, unchanged; backing device held "
              f"to {BACKING_IOPS} IOPS):")
        print("\n".join(report.compare(results / runs[3], results / runs[4]).lines))


COLD_LAYOUTS = [name for name in host_layouts.LAYOUTS if host_layouts.cache_start(name) == "cold"]


def cold() -> None:
    with cache_host("vm-cold") as (base, host):
        done, wall = matrix(base, host, "cold", layouts=COLD_LAYOUTS, fileio_tests=["seqwr", "table-rndrd"],
                            fileio_step_duration=3, repeats=2)
        print(f"matrix: exit {done.returncode} in {wall:.0f} s for {len(COLD_LAYOUTS)} passes")
        for cell, found in trials(base / "results" / "cold").items():
            trial = json.loads(found)
            began, at_end = trial.get("cache_start") or {}, (trial.get("cache") or {}).get("at_end") or {}
            counters = began.get("counters") or {}
            print(f"  {cell}: {trial['status']} {trial.get('reasons') or ''}; made anew in {began.get('made_s')} s, "
                  f"{counters.get('used_blocks')} of {counters.get('total_blocks')} blocks cached at start "
                  f"({counters.get('target')}), {at_end.get('used_blocks')} at the end")
        exit_if_failed(done)  # after the trials it did finish are shown


PARTS = {"known": known, "powerloss": powerloss, "oltp": oltp, "cache": cache, "bcache": bcache, "cache-aa": cache_aa,
         "cold": cold}

if __name__ == "__main__":
    parts = sys.argv[1:] or list(PARTS)
    if parts[0] in ("-h", "--help"):
        print(__doc__.strip())
        sys.exit(0)
    if set(parts) - set(PARTS):
        sys.exit(f"unknown part(s) {', '.join(sorted(set(parts) - set(PARTS)))}; the parts: {', '.join(PARTS)}")
    for part in parts:
        PARTS[part]()
