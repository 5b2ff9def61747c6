"""What a layout matrix on the VM host (vm_host.py) runs, shared by test_vm_layouts.py and
bench/layouts.py: one random-read fileio cell per layout, 16 KiB, 16 threads (enough to keep 4
throttled members busy), short, as TCG makes every task cost seconds; the suite's state and mount
point in the guest. Each run adds its layouts, members, repeats and names."""

from __future__ import annotations

from pathlib import Path

# The read IOPS QEMU holds each member to, where a known answer is wanted (Disk(iops=…)).
MEMBER_IOPS = 300
STATE_DIR = "/var/lib/innomatrix-vm"
KNOBS = {
    "workloads": ["fileio"], "filesystems": ["xfs"], "variants": ["A"], "bp_sizes": ["64M"], "threads": [2],
    "warmup": 1, "duration": 4, "report_interval": 1,
    "fileio_tests": ["table-rndrd"], "fileio_block_sizes": ["16K"], "fileio_table_threads": [16],
    "fileio_total_size": "64M", "fileio_step_duration": 6,
    "preflight_state_dir": STATE_DIR, "preflight_mountpoint": "/mnt/innomatrix-vm",
}


def finished_trials(run: Path) -> dict[str, bytes]:
    """Each finished cell's trial.json on the controller, by its path under run
    (<host>/<layout>-m<N>/<fs>/oltp/<variant>/bp-*/t*/r<N>, or …/fileio/<test>/bs-*/t*/r<N>): not
    a cell still being unpacked beside it (t*/.r1.home-<pid>/r1), nor one set aside (r1.failed-<stamp>)."""
    return {str(path.parent.relative_to(run)): path.read_bytes()
            for path in sorted(run.glob("*/*/*/*/*/*/t*/r[0-9]/trial.json"))}
