"""OLTP on md-raid5 and md-raid10, and the plug pulled in the middle of it (issue #30,
items 1 and 6), on the VM host's own kernel: MariaDB and sysbench OLTP on each layout in turn over
4 members, one trial each. Once the first layout's trial is home and the second layout's trial
runs (its load home, its driver running), the VM's qemu is killed (SIGKILL: the guest's page
cache and every write not yet on the member files are gone). The play names the host unreachable
and ends; the cut trial never comes home; the finished one is kept byte for byte. After the VM
boots again (its udev may reassemble the suite's array from the members' superblocks), a plain
rerun says what it found and removed, builds the array again, loads again and runs only the
cells that were not finished; each trial's layout is read back from the kernel, with the stripe
the kernel advertises (its queue's I/O sizes) equal to the one the filesystem was aligned to;
nothing is left in the guest after it.

No trial runs on the crashed datadir: every trial restores the pristine copy first, and the rerun
rebuilds the layout under it, so there is no crash recovery for a trial to record (README says
why). One VM, 4 unthrottled members: the CPU under TCG, not the disks, sets the pace. (OLTP on
LVM runs in test_vm_layouts' cache test; an lvm-stripe pass here, never cut, cost CI 2.5 minutes.)"""

from __future__ import annotations

import json
import time

import yaml

from e2e_env import NEEDS_ROOT, ok
from remote_hosts import play_matrix, project_inventory, start_matrix
from vm_host import Disk, needs_vm, vm_host
from vm_layout_knobs import STATE_DIR, finished_trials

pytestmark = [*NEEDS_ROOT, needs_vm]

SERIALS = ("im-r1", "im-r2", "im-r3", "im-r4")
CELL = "{}-m4/xfs/oltp/A/bp-64M/t4/r{}"
# Each layout as the kernel reads it back, its stripe unit and the data members of a stripe: a
# RAID5 over 4 has 3, a RAID10 (two copies) over 4 has 2.
SHAPES = {"md-raid5": ({"kind": "md", "level": "raid5", "chunk_kib": 512}, 512, 3),
          "md-raid10": ({"kind": "md", "level": "raid10", "chunk_kib": 512}, 512, 2)}
KNOBS = {
    "layouts": list(SHAPES), "members": [4], "workloads": ["oltp"], "filesystems": ["xfs"], "variants": ["A"],
    # One trial a layout: the cut falls in the second layout's pass, whose array the rerun finds
    # again; a second trial of each (as before) cost CI two more trials under TCG and showed nothing more.
    "bp_sizes": ["64M"], "threads": [4], "repeats": 1, "warmup": 3, "duration": 12, "report_interval": 1,
    "oltp_tables": 2, "oltp_table_size": 10000,
    # A 1 GiB member holds the pristine copy and the datadir: a small redo log leaves room.
    "mycnf_overrides": {"innodb_log_file_size": "48M"},
    # How long past warmup + duration a trial may take over SSH (restore, the server's start and
    # stop under TCG, a lost connection) before its host counts as lost: the cut trial's end.
    "reconnect_grace": 60,
    "preflight_state_dir": STATE_DIR, "preflight_mountpoint": "/mnt/innomatrix-vm",
}


def test_oltp_on_md_raid5_loses_the_plug_mid_trial_and_a_rerun_finishes():
    disks = [Disk(serial, size=1 << 30) for serial in SERIALS]
    with vm_host("innomatrix-e2e-vmp-", "vm-p", disks=disks) as (base, host):
        base.chmod(0o755)
        inventory = project_inventory(base, {"vm": host}, host_vars={"vm": {"devices": [d.by_id for d in host.disks]}})
        knobs = base / "knobs.yml"
        knobs.write_text(yaml.safe_dump({**KNOBS, "results_dir": str(base / "results"), "run_name": "loss",
                                         "preflight_secrets_dir": str(base / "secrets")}))
        run, lost_log = base / "results" / "loss", base / "lost-play.log"

        playing = start_matrix(inventory, knobs, log=lost_log)
        try:
            deadline = time.monotonic() + 1800
            while not finished_trials(run):
                assert playing.poll() is None and time.monotonic() < deadline, \
                    "no cell came home:\n" + lost_log.read_text()[-3000:]
                time.sleep(0.5)
            # Mid-trial: the second layout's load home (its sysbench prepare is over), then its
            # trial's driver running in the guest (TCG takes seconds a task).
            while not list(run.glob("vm/md-raid10-m4/xfs/oltp/dataset-*/dataset.json")) \
                    or host.exec(["pgrep", "-x", "sysbench"]).returncode != 0:
                assert playing.poll() is None and time.monotonic() < deadline, \
                    "the second trial's driver never ran:\n" + lost_log.read_text()[-3000:]
                time.sleep(0.5)
            home = finished_trials(run)
            host.pull_plug()
            playing.wait(timeout=1800)
        finally:
            if playing.poll() is None:
                playing.kill()
                playing.wait()
        out = lost_log.read_text()
        # The host named lost. (Its only host gone, Ansible runs no later play: the outcome play
        # that names a lost host's unfinished cells in a fleet does not run for a host alone.)
        assert playing.returncode == 4 and "fatal: [vm]: UNREACHABLE!" in out, out[-3000:]
        first = "vm/" + CELL.format("md-raid5", 1)
        assert list(home) == [first] and json.loads(home[first])["status"] == "ok"
        # The trial the plug cut never came home; the finished one is as it was.
        assert finished_trials(run) == home

        host.boot()
        done = play_matrix(inventory, knobs, log=base / "rerun-play.log")
        ok(done)
        # It says what it found of its own layout, and what it removed (the YAML callback may
        # quote the message: match words without the apostrophe).
        assert "earlier layout from the members" in done.stdout, done.stdout[-3000:]
        assert "2 cells: 1 to run, 1 already finished" in done.stdout, done.stdout[-3000:]
        final = finished_trials(run)
        assert sorted(final) == sorted("vm/" + CELL.format(name, 1) for name in SHAPES)
        assert final[first] == home[first]
        for name, (shape, unit_kib, data_members) in SHAPES.items():
            trial = json.loads(final["vm/" + CELL.format(name, 1)])
            assert trial["status"] == "ok", trial.get("reasons")
            assert trial["summary"]["throughput_median"] > 0
            device, read_back = trial["device"], trial["device"]["layout"]["read_back"]
            assert {key: read_back[key] for key in shape} == shape
            assert sorted(m["serial"] for m in read_back["members"]) == sorted(SERIALS)
            assert device["mkfs_options"] == f"-d su={unit_kib}k,sw={data_members}"
            # The kernel's own stripe: a unit at least, a unit on every data member at best.
            assert (read_back["io_min_bytes"], read_back["io_opt_bytes"]) == (unit_kib << 10, data_members * unit_kib << 10)
        leftovers = host.sh("grep ^md /proc/mdstat || true; vgs --noheadings 2>/dev/null || true;"
                            " dmsetup ls 2>/dev/null | grep -v 'No devices' || true").stdout.strip()
        assert leftovers == ""
