"""Storage layouts end to end, on the VM host's own kernel (md, device-mapper): the matrix builds
md-raid0 over 1 and 4 members and md-raid0 beside lvm-stripe over 2, runs fileio on each, reads
the layout back from the kernel, aligns the filesystem to it, removes it after its pass, and the
report compares member counts and mdadm with LVM. (OLTP cells on a layout are not in this file
yet: each pass costs minutes under TCG.)

Known answer: every member is throttled by QEMU to MEMBER_IOPS, so random reads over a 4-member
RAID0 must reach well over 3 × one member's. Tests run in file order (the refusals first, on
members that must come out of them unchanged). TCG is slow: keep the cells few and short."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from e2e_env import NEEDS_ROOT, ok
from remote_hosts import play_matrix, project_inventory
from vm_host import Disk, needs_vm, vm_host

pytestmark = [*NEEDS_ROOT, needs_vm]

MEMBER_IOPS = 300
SERIALS = ("im-m1", "im-m2", "im-m3", "im-m4", "im-x1")
STATE_DIR = "/var/lib/innomatrix-vm"
KNOBS = {
    "workloads": ["fileio"], "filesystems": ["xfs"], "variants": ["A"], "bp_sizes": ["64M"], "threads": [2],
    "warmup": 1, "duration": 4, "report_interval": 1, "repeats": 2,
    # One random-read cell per layout: 16 KiB, 16 threads, enough to keep 4 throttled members busy.
    "fileio_tests": ["table-rndrd"], "fileio_block_sizes": ["16K"], "fileio_table_threads": [16],
    "fileio_total_size": "64M", "fileio_step_duration": 6,
    "preflight_state_dir": STATE_DIR, "preflight_mountpoint": "/mnt/innomatrix-vm",
}


class Layouts:
    def __init__(self, base: Path, host):
        self.base, self.host = base, host
        self.results = base / "results"
        members = [disk.by_id for disk in host.disks]
        self.members, self.spare = members[:4], members[4]
        self.knobs = base / "knobs.yml"
        self.inventory = project_inventory(base, {"vm": host}, host_vars={"vm": {"devices": self.members}})

    def play(self, *extra: str, **knobs) -> object:
        self.knobs.write_text(yaml.safe_dump({**KNOBS, "results_dir": str(self.results), "run_name": "layouts",
                                              "preflight_secrets_dir": str(self.base / "secrets"), **knobs}))
        done = play_matrix(self.inventory, self.knobs, *extra, log=self.base / "last-play.log")
        # Under TCG every task costs seconds: the slowest tasks of each play, in pytest's -s output.
        print("\n".join(done.stdout.splitlines()[-22:]))
        return done

    def first_mib(self) -> dict[str, str]:
        """The first MiB of every member disk, hashed in the guest: what a refusal must leave alone."""
        done = self.host.sh("for d in " + " ".join(disk.by_id for disk in self.host.disks)
                            + "; do echo $d $(head -c 1048576 $d | sha256sum | cut -c1-16); done")
        return dict(line.split() for line in done.stdout.splitlines())

    def leftovers(self) -> str:
        """md arrays, volume groups and device-mapper devices in the guest: none once a pass ends."""
        return self.host.sh("cat /proc/mdstat | grep ^md || true; vgs --noheadings 2>/dev/null || true;"
                            " dmsetup ls 2>/dev/null | grep -v 'No devices' || true").stdout.strip()


@pytest.fixture(scope="module")
def vm():
    disks = [Disk(serial, size=1 << 30, iops=MEMBER_IOPS) for serial in SERIALS]
    with vm_host("innomatrix-e2e-vml-", "vm-l", disks=disks) as (base, host):
        base.chmod(0o755)
        yield Layouts(base, host)


def refused(done, line: str) -> None:
    output = done.stdout + done.stderr
    assert done.returncode != 0 and line in output, output[-3000:]


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


def test_a_member_named_twice_or_too_few_devices_is_refused(vm):
    kernel_name = vm.host.sh(f"readlink -f {vm.members[0]}").stdout.strip()
    vm.inventory = project_inventory(vm.base, {"vm": vm.host}, name="twice.yml",
                                     host_vars={"vm": {"devices": [vm.members[0], kernel_name]}})
    refused(vm.play(layouts=["md-raid0"], members=[2]), "a device is listed twice, by two of its names")
    vm.inventory = project_inventory(vm.base, {"vm": vm.host}, host_vars={"vm": {"devices": vm.members}})
    refused(vm.play(layouts=["md-raid0"], members=[8]), "members: md-raid0 over 8 members needs 8 devices; this host lists 4")


def test_check_mode_shows_the_layouts_and_touches_nothing(vm):
    before = vm.first_mib()
    done = vm.play("--check", layouts=["md-raid0"], members=[1, 2, 4])
    ok(done)
    said = " ".join(done.stdout.split())  # the YAML callback folds long lines
    assert ("would build md-raid0 over 4 member(s) (serial:im-m1, serial:im-m2, serial:im-m3, serial:im-m4): "
            "mkfs.xfs -d su=512k,sw=4") in said
    assert "would build and format md-raid0-m1 xfs, md-raid0-m2 xfs, md-raid0-m4 xfs over " in said
    assert vm.first_mib() == before and vm.leftovers() == ""


def test_md_raid0_over_1_and_4_members(vm):
    done = vm.play(layouts=["md-raid0"], members=[1, 4])
    ok(done)
    run = vm.results / "layouts"
    for members in (1, 4):
        cells = sorted(run.glob(f"vm/md-raid0-m{members}/xfs/fileio/table-rndrd/bs-16K/t16/r*/trial.json"))
        assert len(cells) == 2, members
        trial = json.loads(cells[0].read_text())
        assert trial["status"] == "ok", trial["reasons"]
        device = trial["device"]
        read_back = device["layout"]["read_back"]
        assert (read_back["kind"], read_back["level"], read_back["chunk_kib"]) == ("md", "raid0", 512)
        assert sorted(m["serial"] for m in read_back["members"]) == sorted(SERIALS[:members])
        assert device["name"].startswith("md") and device["path"] == "/dev/md/md-raid0"
        # The filesystem was made aligned to the stripe.
        assert device["layout"]["alignment"]["mkfs_options"]["xfs"] == ("" if members == 1 else f"-d su=512k,sw={members}")
        assert device["mkfs_options"] == device["layout"]["alignment"]["mkfs_options"]["xfs"]
        # iostat watched the array and each member.
        entries = json.loads((cells[0].parent / "iostat.json").read_text())["sysstat"]["hosts"][0]["statistics"]
        watched = {disk["disk_device"] for disk in entries[-1]["disk"]}
        assert watched == {device["name"], *(m["name"] for m in read_back["members"])}
        assert trial["cell"]["layout"] == "md-raid0" and trial["cell"]["members"] == members
    assert vm.leftovers() == ""
    # The known answer: 4 throttled members read over 3.2 × one.
    iops = {m: [json.loads(p.read_text())["fileio"]["iops_median"]
                for p in run.glob(f"vm/md-raid0-m{m}/xfs/fileio/table-rndrd/bs-16K/t16/r*/trial.json")]
            for m in (1, 4)}
    print("md-raid0 read IOPS by members:", iops)
    assert min(iops[1]) == pytest.approx(MEMBER_IOPS, rel=0.1)
    assert min(iops[4]) >= 3.2 * max(iops[1])
    # … and the report's verdict says so, with the right sign: 1 member ÷ 4 members well below 1.
    rows = pd.read_csv(run / "tables" / "members_compare.csv").to_dict("records")
    [one_four] = [r for r in rows if (r["members_a"], r["members_b"], r["layout"]) == (1, 4, "md-raid0")]
    print("md-raid0 m1 / m4:", one_four["ratio"], one_four["ci_low"], one_four["ci_high"], one_four["verdict"])
    assert one_four["verdict"] == "differs" and one_four["ci_high"] < 1 / 3.2
    smart = json.loads((run / "vm" / "smart.json").read_text())
    labels = {r["label"] for r in smart["readings"]}
    assert labels >= {f"md-raid0-m4 xfs {m} {when}" for m in vm.members for when in ("before", "after")}


def test_mdadm_and_lvm_stripes_over_the_same_2_members(vm):
    # Seed 001 compared mdadm and LVM striping over the same disks. Here each member is held to
    # MEMBER_IOPS by QEMU, so both stripes read what 2 members give and the disks decide: the
    # known answer is about 2 × one member for each, and no difference between them.
    done = vm.play(layouts=["md-raid0", "lvm-stripe"], members=[2], run_name="stripes")
    ok(done)
    run = vm.results / "stripes"
    iops = {}
    for name in ("md-raid0", "lvm-stripe"):
        cells = sorted(run.glob(f"vm/{name}-m2/xfs/fileio/table-rndrd/bs-16K/t16/r*/trial.json"))
        trials = [json.loads(cell.read_text()) for cell in cells]
        assert len(trials) == 2 and {t["status"] for t in trials} == {"ok"}, [t["reasons"] for t in trials]
        iops[name] = [t["fileio"]["iops_median"] for t in trials]
        assert trials[0]["cell"]["layout"] == name and trials[0]["cell"]["members"] == 2
    lvm = json.loads(sorted(run.glob("vm/lvm-stripe-m2/xfs/fileio/*/*/*/r1/trial.json"))[0].read_text())["device"]
    read_back = lvm["layout"]["read_back"]
    assert (read_back["kind"], read_back["stripes"], read_back["stripe_kib"]) == ("lvm", 2, 64)
    assert sorted(m["serial"] for m in read_back["members"]) == sorted(SERIALS[:2])
    assert lvm["path"] == "/dev/innomatrix/bench" and lvm["name"].startswith("dm-")
    assert lvm["mkfs_options"] == "-d su=64k,sw=2"
    assert vm.leftovers() == ""
    print("read IOPS over 2 members:", iops)
    for name, values in iops.items():
        assert min(values) >= 1.6 * MEMBER_IOPS and max(values) <= 2.2 * MEMBER_IOPS, (name, values)
    rows = pd.read_csv(run / "tables" / "layout_compare.csv").to_dict("records")
    [pair] = [r for r in rows if (r["layout_a"], r["layout_b"]) == ("lvm-stripe", "md-raid0")]
    print("lvm-stripe / md-raid0 over 2:", pair["ratio"], pair["ci_low"], pair["ci_high"], pair["verdict"])
    assert pair["verdict"] == "no difference"
    table = pd.read_csv(run / "tables" / "layout_by_members.csv")
    assert set(table["layout"]) == {"md-raid0", "lvm-stripe"} and "median_m2" in table.columns
