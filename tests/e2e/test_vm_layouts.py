"""Storage layouts end to end, on the VM host's own kernel (md, device-mapper, bcache), in one
guest (each boot costs a minute under TCG): first the guest itself (md/dm/bcache, members by serial,
NVMe SMART, Ansible without network, a disk at its throttle); then members that are someone else's,
refused; the matrix in --check mode; md-raid0 and lvm-stripe over 4 members, fileio on each, read
back from the kernel, the filesystem aligned to it, removed after its pass, with the plug pulled in
lvm-stripe's trial and a rerun that finishes it, and the report comparing mdadm with LVM; then seed
000's flash cache: random reads from a slow disk alone and behind a dm-cache on the emulated NVMe,
and the disk alone in two more runs, judged by its noise floor (OLTP the same way is
test_vm_cache_oltp.py, in a guest of its own); last, the NVMe's own count (SMART data units) of a
sequential write against what sysbench wrote, a cold dm-cache and a cold bcache.

Known answers: every layout member is throttled by QEMU to MEMBER_IOPS, so random reads over a
4-member stripe must read about 4 × one member's; the cache's disk is held to HDD_IOPS, so the cache
must read several times what the disk alone does, and the disk alone no different from itself.
Tests run in file order. TCG is slow: keep the cells few and short. The --check test is marked
long: `make test-long` runs it."""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest

from e2e_env import NEEDS_ROOT, ROOT, innomatrix, ok
from innomatrix_host.sysbench import parse_summary
from vm_host import Disk, needs_vm, vm_host
from vm_layout_knobs import MEMBER_IOPS, finished_trials
from vm_layouts import CACHE_DISKS, CACHE_SERIAL, HDD_IOPS, HDD_SERIAL, REPEATS_CACHE, Layouts

pytestmark = [*NEEDS_ROOT, needs_vm]

SERIALS = ("im-m1", "im-m2", "im-m3", "im-m4", "im-x1")


@pytest.fixture(scope="module")
def vm():
    disks = [*(Disk(serial, size=1 << 30, iops=MEMBER_IOPS) for serial in SERIALS), *CACHE_DISKS["disks"]]
    with vm_host("innomatrix-e2e-vml-", "vm-l", disks=disks, nvme=CACHE_DISKS["nvme"]) as (base, host):
        base.chmod(0o755)
        yield Layouts(base, host, members=SERIALS[:4], spare=SERIALS[4])


def refused(done, line: str) -> None:
    output = done.stdout + done.stderr
    assert done.returncode != 0 and line in output, output[-3000:]


# The VM host itself first (vm_host.py): what it exists for, each checked in one login or two.

def test_kernel_has_md_device_mapper_and_bcache(vm):
    vm.host.sh("modprobe -a md-mod raid0 raid456 dm-mod dm-cache bcache")
    personalities = vm.host.sh("cat /proc/mdstat").stdout.splitlines()[0]
    assert personalities.startswith("Personalities :") and "[raid0]" in personalities and "[raid5]" in personalities
    assert {"striped", "cache"} <= set(vm.host.sh("dmsetup targets").stdout.split())
    assert vm.host.exec(["test", "-e", "/sys/fs/bcache/register"]).returncode == 0


def test_members_have_stable_names_by_serial(vm):
    assert [disk.by_id for disk in vm.host.disks] == [
        *(f"/dev/disk/by-id/virtio-{serial}" for serial in (*SERIALS, HDD_SERIAL)),
        f"/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_{CACHE_SERIAL}"]
    # One login for all (each costs seconds under TCG); either command fails on a missing name.
    names = " ".join(disk.by_id for disk in vm.host.disks)
    lines = vm.host.sh(f"readlink -e {names} && blockdev --getsize64 {names}").stdout.split()
    kernel_names = lines[:len(vm.host.disks)]
    assert all(re.fullmatch(r"/dev/vd[b-z]", name) for name in kernel_names[:-1]), kernel_names
    assert len(set(kernel_names)) == len(kernel_names) and re.fullmatch(r"/dev/nvme\d+n1", kernel_names[-1])
    assert lines[len(vm.host.disks):] == [str(disk.disk.size) for disk in vm.host.disks]


def test_nvme_reports_smart_counters(vm):
    # smartctl's exit status is a bit mask of findings about the drive: read its report instead.
    report = vm.host.exec(["smartctl", "-a", vm.flash]).stdout
    assert re.search(r"^Data Units Written:\s+[\d,]+", report, re.MULTILINE), report
    assert re.search(r"^Serial Number:\s+" + CACHE_SERIAL + "$", report, re.MULTILINE), report


def test_ansible_reaches_the_guest_and_its_apt_needs_no_network(vm):
    def ansible(*args):
        return subprocess.run([str(ROOT / ".venv/bin/ansible"), "-i", str(vm.inventory), "vm", "-o", *args], cwd=ROOT,
                              capture_output=True, text=True, timeout=300,
                              env={**os.environ, "ANSIBLE_NOCOLOR": "1", "ANSIBLE_FORCE_COLOR": "0"})

    facts = ansible("-m", "ansible.builtin.setup", "-a", "filter=ansible_kernel")
    assert facts.returncode == 0, facts.stdout + facts.stderr
    assert f'"ansible_kernel": "{vm.host.sh("uname -r").stdout.strip()}"' in facts.stdout
    # As the roles install their packages: with lists older than a day apt would fetch and fail.
    installed = ansible("-m", "ansible.builtin.apt", "-a", "name=sysbench state=present cache_valid_time=86400")
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert '"changed": false' in installed.stdout and '"cache_updated": false' in installed.stdout


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


def test_throttled_member_reads_at_its_throttle(vm):
    seconds = 8
    done = vm.host.sh(f"python3 - {vm.hdd} {seconds}", input=RANDOM_READS, timeout=120)
    iops = float(done.stdout)
    print(f"{HDD_SERIAL}: {iops:.1f} random 16 KiB reads/s under throttling.iops-total={HDD_IOPS}")
    assert HDD_IOPS * 0.9 <= iops <= HDD_IOPS * 1.1


# Then the layouts, refusals first: on members that must come out of them unchanged.

def test_members_that_are_not_the_suites_to_use_are_refused_and_left_alone(vm):
    # Someone else's RAID1 over the 4th member and the spare, a volume group of someone else's on
    # the 3rd, the 2nd mounted (read-only: its own journal writes nothing then): each refused in the
    # one line, naming it; nothing written to any.
    m1, m2, m3, m4 = vm.members
    vm.host.sh(f"mdadm --create /dev/md/theirs --run --level=1 --raid-devices=2 --metadata=1.2 --homehost=db1 "
               f"--name=theirs {m4} {vm.spare} && vgcreate theirs {m3} && mkfs.ext4 -q {m2} "
               f"&& mkdir -p /mnt/theirs && mount -o ro,noload {m2} /mnt/theirs")
    before = vm.first_mib()
    done = vm.play(layouts=["md-raid0"], members=[4])
    refused(done, f"refusing member {m2}: {m2} (→ ")
    for member, why in ((m2, "is mounted"), (m3, "LVM2_member"), (m4, "is held by md")):
        line = next(line for line in (done.stdout + done.stderr).splitlines() if "refusing member" in line)
        assert f"member {member}: " in line and why in line.split(f"member {member}: ", 1)[1].split(" | ")[0], line
    assert f"member {m1}" not in line
    assert vm.first_mib() == before
    assert "theirs" in vm.leftovers()  # their array and volume group stand
    vm.host.sh(f"umount /mnt/theirs && wipefs -qa {m2} && vgremove -qy theirs && pvremove -qy {m3} "
               f"&& mdadm --stop /dev/md/theirs && mdadm --zero-superblock {m4} {vm.spare}")
    assert vm.leftovers() == ""


def test_someone_elses_bcache_is_refused_and_left_alone(vm):
    # A bcache made by hand over the backing device and the flash (its cache set's UUID make-bcache's
    # own, not the suite's), registered and attached by udev: both members are held by it.
    backing, flash = vm.members[0], vm.flash
    vm.host.sh(f"modprobe bcache && make-bcache --bdev {backing} --cache {flash} >/dev/null && udevadm settle && "
               f"for i in $(seq 100); do [ -e /sys/block/$(basename $(readlink -f {backing}))/bcache/cache ] && exit 0;"
               f" sleep 0.2; done; exit 1")
    before = vm.first_mib()
    # The layout module itself, not a whole play (the preflight's refusal of a member held by what
    # the suite did not make is the first test's): under TCG a play costs minutes.
    args = {"name": "bcache-writeback", "members": [backing, flash]}
    done = subprocess.run([str(ROOT / ".venv/bin/ansible"), "-i", str(vm.backing_and_flash), "vm", "--become",
                           "-m", "innomatrix_layout", "-a", json.dumps(args), "-o"], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    said = done.stdout + done.stderr
    assert done.returncode != 0 and "refusing layout bcache-writeback: " in said, said[-3000:]
    assert "is held by bcache0, which the suite did not make" in said and "nothing was changed" in said, said[-3000:]
    assert vm.first_mib() == before
    assert "bcache0" in vm.leftovers()  # theirs stands
    vm.host.sh(f"echo 1 > /sys/block/bcache0/bcache/stop; for s in /sys/fs/bcache/*-*; do echo 1 > $s/unregister; done;"
               f" for i in $(seq 100); do ls /sys/fs/bcache | grep -q -- - || [ -e /sys/block/bcache0 ] || break; sleep 0.2;"
               f" done; wipefs -qa {backing} {flash}")
    assert vm.leftovers() == ""


# Long (make test-long): a play of minutes under TCG; the plan's layout lines are unit-tested
# (tests/unit/test_plan_layouts.py) and --check touching nothing is test_matrix's and the fleet's.
@pytest.mark.long
def test_check_mode_shows_the_layouts_and_touches_nothing(vm):
    before = vm.first_mib()
    done = vm.play("--check", layouts=["md-raid0"], members=[1, 2, 4])
    ok(done)
    said = " ".join(done.stdout.split())  # the YAML callback folds long lines
    assert ("would build md-raid0 over 4 member(s) (serial:im-m1, serial:im-m2, serial:im-m3, serial:im-m4): "
            "mkfs.xfs -d su=512k,sw=4") in said
    assert "would build and format md-raid0-m1 xfs, md-raid0-m2 xfs, md-raid0-m4 xfs over " in said
    assert vm.first_mib() == before and vm.leftovers() == ""


def lvm_trial_running(log: Path) -> bool:
    """An lvm-stripe trial's module is running, as the play's log says: an async poll of it, not
    finished, after its progress line."""
    _, found, after = log.read_text(errors="replace").rpartition("Trial | progress | lvm-stripe-m4/")
    return bool(found) and "finished=False" in after


def test_md_raid0_and_lvm_stripe_over_4_members_through_a_pulled_plug(vm):
    # Seed 001 compared mdadm and LVM striping over the same disks. Every member is held to
    # MEMBER_IOPS by QEMU, so the disks decide: the known answer is 4 × one member's reads for either
    # layout, and the layouts within a few per cent of each other. (Passes over 2 members too, for
    # the report's member-count verdict, cost CI 8 minutes: bench/layouts.py runs them.)
    # The same play loses its host (issue #30's power loss, which had a VM, a play and an OLTP load of
    # its own and cost CI 20 minutes): once md-raid0's trials are home and lvm-stripe's driver runs,
    # qemu is SIGKILLed; the play names the host unreachable and ends, the finished trials are kept
    # byte for byte, the cut one never comes home. After the boot (the guest's LVM activates the
    # suite's volume group again from the members), a plain rerun says what it found and removed,
    # builds lvm-stripe anew and runs only the cells that were not finished.
    members = 4
    run, lost_log = vm.results / "layouts", vm.base / "lost-play.log"
    playing = vm.start(layouts=["md-raid0", "lvm-stripe"], members=[members],
                       # How long past warmup + duration a trial may take over SSH before its host counts
                       # as lost: the cut trial's end.
                       reconnect_grace=60, log=lost_log)
    md_cells = {f"vm/md-raid0-m{members}/xfs/fileio/table-rndrd/bs-16K/t16/r{r}" for r in (1, 2)}
    try:
        deadline = time.monotonic() + 1800
        while not md_cells <= set(finished_trials(run)):
            assert playing.poll() is None and time.monotonic() < deadline, \
                "md-raid0's cells never came home:\n" + lost_log.read_text()[-3000:]
            time.sleep(0.5)
        # Mid-trial: lvm-stripe's trial module running in the guest, as the play's own log says (an
        # async poll of it not finished). A look into the guest takes a login of seconds under TCG,
        # longer than a fileio run of 5 s lasts: in a CI-like run looks for its sysbench missed.
        while not lvm_trial_running(lost_log):
            assert playing.poll() is None and time.monotonic() < deadline, \
                "lvm-stripe's trial never ran:\n" + lost_log.read_text()[-3000:]
            time.sleep(0.5)
        home = finished_trials(run)
        vm.host.pull_plug()
        playing.wait(timeout=1800)
    finally:
        if playing.poll() is None:
            playing.kill()
            playing.wait()
    out = lost_log.read_text()
    # The host named lost. (Its only host gone, Ansible runs no later play: the outcome play that
    # names a lost host's unfinished cells in a fleet does not run for a host alone.)
    assert playing.returncode == 4 and "fatal: [vm]: UNREACHABLE!" in out, out[-3000:]
    # md-raid0's two, and lvm-stripe's first if its run was over before a look found it: never all 4.
    assert md_cells <= set(home) and len(home) < 4, list(home)
    assert {json.loads(data)["status"] for data in home.values()} == {"ok"}
    assert finished_trials(run) == home  # the cut trial never came home; the finished ones as they were

    vm.host.boot()
    done = vm.play(layouts=["md-raid0", "lvm-stripe"], members=[members], reconnect_grace=60)
    ok(done)
    # The YAML callback may quote the message: match words without the apostrophe.
    assert "earlier layout from the members" in done.stdout, done.stdout[-3000:]
    assert f"4 cells: {4 - len(home)} to run, {len(home)} already finished" in done.stdout, done.stdout[-3000:]
    final = finished_trials(run)
    assert len(final) == 4 and all(final[cell] == data for cell, data in home.items())
    iops = {}
    for name in ("md-raid0", "lvm-stripe"):
        cells = sorted(run.glob(f"vm/{name}-m{members}/xfs/fileio/table-rndrd/bs-16K/t16/r*/trial.json"))
        trials = [json.loads(cell.read_text()) for cell in cells]
        assert len(trials) == 2 and {t["status"] for t in trials} == {"ok"}, [t["reasons"] for t in trials]
        iops[name] = [t["fileio"]["iops_median"] for t in trials]
        trial = trials[0]
        assert trial["cell"]["layout"] == name and trial["cell"]["members"] == members
        device = trial["device"]
        read_back = device["layout"]["read_back"]
        assert sorted(m["serial"] for m in read_back["members"]) == sorted(SERIALS[:members])
        if name == "md-raid0":
            assert (read_back["kind"], read_back["level"], read_back["chunk_kib"]) == ("md", "raid0", 512)
            assert device["name"].startswith("md") and device["path"] == "/dev/md/md-raid0"
            stripe_unit = "512k"
        else:
            assert (read_back["kind"], read_back["stripes"], read_back["stripe_kib"]) == ("lvm", members, 64)
            assert device["name"].startswith("dm-") and device["path"] == "/dev/innomatrix/bench"
            stripe_unit = "64k"
        # The filesystem was made aligned to the stripe.
        assert device["mkfs_options"] == device["layout"]["alignment"]["mkfs_options"]["xfs"] \
            == f"-d su={stripe_unit},sw={members}"
        # … which is the stripe the kernel advertises for the array (md and dm-stripe alike).
        unit_bytes = int(stripe_unit[:-1]) << 10
        assert (read_back["io_min_bytes"], read_back["io_opt_bytes"]) == (unit_bytes, members * unit_bytes)
        # iostat watched the layout's device and each member.
        entries = json.loads((cells[0].parent / "iostat.json").read_text())["sysstat"]["hosts"][0]["statistics"]
        watched = {disk["disk_device"] for disk in entries[-1]["disk"]}
        assert watched == {device["name"], *(m["name"] for m in read_back["members"])}
    assert vm.leftovers() == ""
    print("random read IOPS by layout over 4 members:", iops)
    for name, values in iops.items():
        assert 0.8 * members * MEMBER_IOPS <= min(values) <= max(values) <= 1.1 * members * MEMBER_IOPS, (name, values)

    # … and LVM beside mdadm over the same members: the disks decide, so within 6 % of each other.
    # Not held to "no difference": each layout is a pass of its own, its trials back to back, and the
    # throttle makes them agree within 0.2 %; one CI run put mdadm's pass 0.7 % above LVM's (603.5
    # and 599.0 IOPS over 2 members) and the trials' interval, 0.986-0.999, rightly excluded 1. A
    # "differs" here may claim only a small difference: its whole interval within the 6 %. Not 3 %:
    # under TCG on two shared cores one trial of a pass can read 5 % under its sibling (a CI run:
    # md-raid0 over 4 read 1185.6 and 1127.0, LVM 1187.8 and 1193.9, a ratio of 1.030, "no difference").
    rows = pd.read_csv(run / "tables" / "layout_compare.csv").to_dict("records")
    for row in rows:
        print(f"{row['layout_a']} / {row['layout_b']} over {row['members']}:", row["ratio"], row["ci_low"], row["ci_high"],
              row["verdict"])
    [pair] = [r for r in rows if (r["layout_a"], r["layout_b"], r["members"]) == ("lvm-stripe", "md-raid0", members)]
    assert pair["verdict"] in ("no difference", "differs") and 0.94 <= pair["ratio"] <= 1.06, pair
    if pair["verdict"] == "differs":
        assert 0.94 <= pair["ci_low"] <= pair["ci_high"] <= 1.06, pair
    table = pd.read_csv(run / "tables" / "layout_by_members.csv")
    assert set(table["layout"]) == {"md-raid0", "lvm-stripe"} and "median_m4" in set(table.columns)
    # SMART is read from each member before and after each pass (md and dm have none of their own).
    smart = json.loads((run / "vm" / "smart.json").read_text())
    labels = {r["label"] for r in smart["readings"]}
    assert labels >= {f"{name}-m4 xfs {m} {when}" for name in ("md-raid0", "lvm-stripe")
                      for m in vm.members for when in ("before", "after")}


# The emulated NVMe is unthrottled: QEMU reads and writes it with O_DIRECT on this machine's disk,
# thousands of reads a second here and gigabytes of seqwr in the nvme play, beside lane 1's loop
# devices on the same disk; the verdicts' known answer, which a CI-like run had beside them and saw
# fail, runs alone after both lanes (tests/e2e/lanes.sh).
def test_a_writeback_cache_in_front_of_a_slow_disk_reads_several_times_the_disk_alone(vm):
    # Seed 000's question at the block layer: random 16 KiB O_DIRECT reads over 64 MiB of files (no
    # page cache to hold them), beyond what the disk alone can serve and within the cache. The
    # backing device is held to HDD_IOPS, the cache device the unthrottled NVMe; the pass's prepare
    # wrote the files through the cache in whole blocks (dm-cache promotes those while it has room):
    # warm. Known answer: the disk alone reads HDD_IOPS; the cache at least 3 × that, "differs" with
    # the right sign, and it answers at least 80 % of the reads. (Reads cost the TCG guest little CPU,
    # so this holds beside the other lane, where OLTP's did not: test_vm_cache_oltp.py.)
    vm.measure("cache-fileio", inventory=vm.backing_and_flash, layouts=["lvm-backing-only", "lvm-cache-writeback"],
               repeats=REPEATS_CACHE)
    run = vm.results / "cache-fileio"
    iops, hits = {}, []
    for name in ("lvm-backing-only", "lvm-cache-writeback"):
        cells = sorted(run.glob(f"vm/{name}-m2/xfs/fileio/table-rndrd/bs-16K/t16/r[0-9]/trial.json"))
        trials = [json.loads(cell.read_text()) for cell in cells]
        assert len(trials) == REPEATS_CACHE and {t["status"] for t in trials} == {"ok"}, [t["reasons"] for t in trials]
        iops[name] = [t["fileio"]["iops_median"] for t in trials]
        if name == "lvm-cache-writeback":
            assert all(t["cache_start"]["state"] == "warm" for t in trials)
            hits = [t["cache"]["read_hit_ratio"] for t in trials]
        else:
            assert all("cache" not in t for t in trials)
    print("random 16 KiB reads/s, the disk alone and behind a writeback cache:", iops, "read hit ratios", hits)
    assert 0.8 * HDD_IOPS <= statistics.median(iops["lvm-backing-only"]) <= 1.1 * HDD_IOPS, iops
    assert statistics.median(iops["lvm-cache-writeback"]) >= 3 * statistics.median(iops["lvm-backing-only"]), iops
    assert min(hits) >= 0.8, hits
    rows = pd.read_csv(run / "tables" / "layout_compare.csv").to_dict("records")
    [pair] = [r for r in rows if (r["layout_a"], r["layout_b"]) == ("lvm-backing-only", "lvm-cache-writeback")]
    print("backing only / writeback cache:", pair["ratio"], pair["ci_low"], pair["ci_high"], pair["verdict"])
    assert pair["verdict"] == "differs" and pair["ratio"] <= 1 / 3 and pair["ci_high"] < 1, pair
    table = pd.read_csv(run / "tables" / "cache_layouts.csv").set_index("layout")
    assert table.loc["lvm-cache-writeback", "cache_read_hit_ratio"] >= 0.8
    assert vm.leftovers() == ""


def test_the_disk_alone_twice_is_no_different(vm):
    # The A/A beside the known answer above (issue #31): the disk alone, as in cache-fileio, in two
    # more runs. Each run builds the layout anew and moves as a whole, so two runs are judged only
    # with the layout's noise floor (`innomatrix noise`), here from those three runs (two degrees of
    # freedom); by it the two new runs must show no difference. (Within one run the two layouts are
    # passes of their own and the table says a pass's drift is not in their interval; the same layout
    # twice in a run is one cell.)
    runs = [vm.results / "cache-fileio"]
    for run_name in ("backing-again", "backing-third"):
        vm.measure(run_name, inventory=vm.backing_and_flash, layouts=["lvm-backing-only"], repeats=REPEATS_CACHE)
        runs.append(vm.results / run_name)
    recorded = innomatrix("noise", *map(str, runs))
    print(recorded)
    # One floor: cache-fileio's writeback cache ran in one run only, too few for a floor of its own.
    [floor] = json.loads((runs[1] / "vm" / "host.json").read_text())["noise_floors"]
    assert (floor["layout"], floor["workload"], floor["df"]) == ("lvm-backing-only", "fileio", 2), floor
    printed = innomatrix("compare", str(runs[1]), str(runs[2]))
    rows = pd.read_csv(runs[1] / f"compare-{runs[2].name}" / "compare.csv").to_dict("records")
    [row] = rows
    print(f"A/A, the disk alone in two runs: {row['a_median']:.3f} ÷ {row['b_median']:.3f} {row['unit']} = {row['ratio']:.4f} "
          f"({row['ci_low']:.4f}–{row['ci_high']:.4f}), {row['verdict']} ({row['interval_from']})")
    assert (row["layout"], row["verdict"], row["interval_from"]) == (
        "lvm-backing-only", "no difference", "trials + run drift (host noise floor)"), (row, printed)
    assert vm.leftovers() == ""


def test_the_nvme_counts_what_sysbench_wrote_and_a_cold_cache_starts_every_trial_empty(vm):
    # Three known answers in one play (each play costs minutes of Ansible under TCG).
    # 1. The flash's own count (issue #31): fileio seqwr (1 MiB O_DIRECT requests, one thread) on the
    #    NVMe alone, in a linear volume on it. What sysbench says it wrote (its writes a second × its
    #    run's time, in MiB requests) must be what the NVMe counted in data units over the driver's
    #    run, within 5 % (XFS adds its log and the files' extents); a unit read as a sector is a
    #    thousandfold off. (iostat is no referee here: at a GiB a second its one-second edges miss
    #    more than 5 %.)
    # 2. A cold cache: dm-cache writeback made anew before each trial holds no block when the trial
    #    begins, though the pass's fileio prepare wrote its files through it; the warm one of the cache
    #    test held the load's. (One cell a pass: a second, table-rndrd, cost CI three trials.)
    # 3. bcache (writeback) over the same two members, cold: built with the suite's tag, its cache
    #    set made anew before the trial (its buckets outlive a detach), its counters read from sysfs
    #    each second, removed after its pass.
    vm.measure("nvme", inventory=vm.backing_and_flash,
               layouts=["lvm-cache-device-only", "lvm-cache-writeback-cold", "bcache-writeback-cold"],
               # 3 s a cell: at a GiB a second under TCG, seqwr still writes gigabytes.
               fileio_tests=["seqwr"], fileio_step_duration=3, repeats=1)
    run = vm.results / "nvme"
    trial_dir = run / "vm/lvm-cache-device-only-m2/xfs/fileio/seqwr/bs-1M/t1/r1"
    trial = json.loads((trial_dir / "trial.json").read_text())
    assert trial["status"] == "ok", trial["reasons"]
    summary = parse_summary((trial_dir / "driver.log").read_text())
    wrote = summary["write_iops"] * summary["total_time_s"] * 2**20
    read_back = trial["device"]["layout"]["read_back"]
    nvme = next(m["name"] for m in read_back["members"] if m["serial"] == CACHE_SERIAL)
    counted = next(disk for disk in trial["flash"]["disks"] if disk["device"] == f"/dev/{nvme}")
    assert counted["unit_bytes"] == 512_000, counted
    print(f"seqwr: sysbench wrote {wrote / 2**20:.1f} MiB, {nvme} counted {counted['written_bytes'] / 2**20:.1f} MiB")
    assert wrote > 20 * 2**20, summary  # enough data units that one unit's rounding is far below 5 %
    assert abs(counted["written_bytes"] - wrote) <= 0.05 * wrote, (counted, wrote)
    # The kernel's own count of what it sent that disk, read at the same moments: the figure the
    # report puts beside the flash's (smart.kernel_span).
    print(f"seqwr: the kernel sent {nvme} {counted['sent_bytes'] / 2**20:.1f} MiB")
    assert abs(counted["written_bytes"] - counted["sent_bytes"]) <= 0.05 * counted["sent_bytes"] + 512_000, counted
    assert "cache_start" not in trial  # no cache on the NVMe alone

    [path] = run.glob("vm/lvm-cache-writeback-cold-m2/xfs/fileio/*/bs-*/t*/r1/trial.json")
    trial = json.loads(path.read_text())
    assert trial["status"] == "ok", trial["reasons"]
    began, ended = trial["cache_start"], trial["cache"]["at_end"]
    print(f"cold seqwr: made anew in {began['made_s']} s; blocks cached at start {began['counters']['used_blocks']}"
          f" of {began['counters']['total_blocks']}, at the end {ended['used_blocks']}")
    assert began["state"] == "cold" and began["made_s"] > 0 and began["counters"]["target"] == "cache", began
    assert began["counters"]["used_blocks"] <= began["counters"]["total_blocks"] // 100, began
    assert ended["used_blocks"] > 0  # the trial filled what it found emptied
    table = pd.read_csv(run / "tables" / "cache_layouts.csv").set_index(["layout", "subtest"])
    assert table.loc[("lvm-cache-writeback-cold", "seqwr"), "cache_start"] == "cold"

    [path] = run.glob("vm/bcache-writeback-cold-m2/xfs/fileio/seqwr/bs-*/t*/r1/trial.json")
    trial = json.loads(path.read_text())
    assert trial["status"] == "ok", trial["reasons"]
    read_back = trial["device"]["layout"]["read_back"]
    names = {m["serial"]: m["name"] for m in read_back["members"]}
    assert (read_back["target"], read_back["cache_mode"], read_back["label"]) == ("bcache", "writeback",
                                                                                "innomatrix:bcache-writeback")
    assert read_back["cset_uuid"].startswith("696e6e6f-6d61-7472-6978-") and trial["device"]["path"] == "/dev/bcache0"
    assert (read_back["backing_members"], read_back["cache_members"]) == ([names[HDD_SERIAL]], [names[CACHE_SERIAL]])
    assert (read_back["writeback_percent"], read_back["sequential_cutoff"]) == ("10", "0.0k")
    log = (path.parent / "cache.log").read_text()
    print(f"bcache seqwr cache.log:\n{log}")
    summary = trial["cache"]
    print(f"bcache seqwr: read hit ratio {summary['read_hit_ratio']}, dirty at end {summary['dirty_bytes_end']} "
          f"bytes, start {trial['cache_start']}")
    # bcache counts no write hits; its read counts move every 13.6 s, so a 3-s cell may hold no
    # step of them (bench/layouts.py bcache has trials long enough for its hit ratio).
    assert summary["target"] == "bcache" and summary["write_hit_ratio"] is None
    # Cold: the pass's prepare wrote seqwr's files through the cache; the set made anew holds none of them.
    began = trial["cache_start"]
    print(f"cold bcache: made anew in {began['made_s']} s; buckets in use at start {began['counters']['used_blocks']} "
          f"of {began['counters']['total_blocks']}, at the end {summary['at_end']['used_blocks']}")
    assert began["state"] == "cold" and began["made_s"] > 0 and began["counters"]["target"] == "bcache", began
    assert began["counters"]["total_blocks"] == (1 << 29) // (512 << 10)  # 512K buckets
    assert began["counters"]["used_blocks"] <= began["counters"]["total_blocks"] // 100, began
    assert summary["at_end"]["used_blocks"] > began["counters"]["used_blocks"]
    # Writeback, every write through the cache (sequential_cutoff 0), the disk behind held to
    # HDD_IOPS: what seqwr wrote is still dirty in the cache when the trial ends.
    assert summary["dirty_bytes_end"] > 1 << 20, summary
    assert table.loc[("bcache-writeback-cold", "seqwr"), "cache_dirty_mib_end"] > 1
    assert vm.leftovers() == ""
