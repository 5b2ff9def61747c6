"""The suite's own figures, measured on the demo device (run as root, through `make bench`).

1. Fixed cost per cell = cell wall time (first to last Ansible task of the cell) − warmup −
   duration, median over the demo matrix run with force=true.
2. restore_s / load_s on XFS and on ext4, from those cells' trial.json.
3. Fidelity: median tps of an orchestrated cell ÷ median tps of the same sysbench command run by
   hand against the same my.cnf and the same pristine datadir, interleaved, 3 pairs.

Prints the figures; asserts nothing (speed is measured here, not tested).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

import yaml

from innomatrix.parse.sysbench import parse_output, summarize

ROOT = Path(__file__).resolve().parents[1]
PLAYBOOK = [str(ROOT / ".venv/bin/ansible-playbook"), "matrix.yml", "-e", "@inventory/demo.yml"]
DEMO = yaml.safe_load((ROOT / "inventory/demo.yml").read_text())
STATE = Path("/var/lib/innomatrix")
MOUNT = Path("/mnt/innomatrix")
RESULTS = ROOT / "results"


def play(*extra: str) -> list[dict]:
    """Run the playbook with the JSON callback; return its task records."""
    env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK="ansible.posix.json")
    done = subprocess.run([*PLAYBOOK, *extra], cwd=ROOT, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        sys.exit(f"playbook failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}")
    # The JSON document, whatever other callbacks (profile_tasks) print around it.
    document, _ = json.JSONDecoder().raw_decode(done.stdout[done.stdout.index("{"):])
    (RESULTS / "bench-ansible.json").write_text(json.dumps(document))
    return [task for play_ in document["plays"] for task in play_["tasks"]]


def _moment(text: str) -> float:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def fixed_costs(tasks: list[dict], warmup: int, duration: int) -> list[float]:
    """Per cell: from its progress line to its last task (the cell's tasks run in that order),
    minus warmup and duration. Task names in the JSON record are the unrendered templates."""
    spans, start = [], None
    for task in tasks:
        # "role : name", the name unrendered.
        name, times = task["task"]["name"].split(" : ", 1)[-1], task["task"]["duration"]
        if name.startswith("Trial | progress"):
            start = _moment(times["start"])
        elif name.startswith("Trial | count it") and start is not None:
            spans.append(_moment(times["end"]) - start - warmup - duration)
            start = None
    return spans


def figures_from_matrix() -> None:
    tasks = play("-e", "run_name=bench", "-e", "force=true")
    costs = fixed_costs(tasks, DEMO["warmup"], DEMO["duration"])
    print(f"fixed cost per cell: median {statistics.median(costs):.2f} s over {len(costs)} cells "
          f"(min {min(costs):.2f}, max {max(costs):.2f})")
    for fs in ("xfs", "ext4"):
        trials = [json.loads(p.read_text()) for p in (RESULTS / "bench/localhost" / fs).glob("oltp/*/bp-*/t*/r1/trial.json")]
        ratios = [t["dataset"]["restore_s"] / t["dataset"]["load_s"] for t in trials]
        restore = statistics.median(t["dataset"]["restore_s"] for t in trials)
        print(f"{fs}: restore_s / load_s median {statistics.median(ratios):.4f} "
              f"(restore {restore:.3f} s by {trials[0]['dataset']['restored_by']}, load {trials[0]['dataset']['load_s']:.1f} s)")


def by_hand(trial_dir: Path, pristine: Path, device: str) -> float:
    """The orchestrated cell's own my.cnf and sysbench command, run without the suite."""
    trial = json.loads((trial_dir / "trial.json").read_text())
    subprocess.run(["mount", "-o", "noatime,nodiratime", device, str(MOUNT)], check=True)
    try:
        datadir = MOUNT / "data"
        subprocess.run(["rm", "-rf", str(datadir)], check=True)
        subprocess.run(["cp", "-a", "--reflink=auto", str(pristine), str(datadir)], check=True)
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        socket = next(line.split("=", 1)[1].strip() for line in (trial_dir / "my.cnf").read_text().splitlines()
                      if line.startswith("socket"))
        server = subprocess.Popen(["mariadbd", f"--defaults-file={trial_dir / 'my.cnf'}"], start_new_session=True,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            while subprocess.run(["mariadb-admin", f"--socket={socket}", "--user=root", "ping"],
                                 capture_output=True).returncode != 0:
                time.sleep(0.1)
            out = subprocess.run(shlex.split(trial["driver"]["command"]), capture_output=True, text=True, check=True).stdout
        finally:
            subprocess.run(["mariadb-admin", f"--socket={socket}", "--user=root", "shutdown"], capture_output=True)
            server.wait(timeout=300)
    finally:
        subprocess.run(["umount", str(MOUNT)], check=True)
    parsed = parse_output(out)
    return summarize(parsed["intervals"], DEMO["warmup"], DEMO["report_interval"])["throughput_median"]


def fidelity(pairs: int = 3) -> None:
    one_cell = ["-e", "run_name=bench-fidelity", "-e", "filesystems=xfs", "-e", "variants=A",
                "-e", "bp_sizes=64M", "-e", "force=true"]
    ratios = []
    for pair in range(1, pairs + 1):
        play(*one_cell)
        trial_dir = RESULTS / "bench-fidelity/localhost/xfs/oltp/A/bp-64M/t4/r1"
        trial = json.loads((trial_dir / "trial.json").read_text())
        orchestrated = trial["summary"]["throughput_median"]
        device = json.loads((RESULTS / "bench-fidelity/localhost/host.json").read_text())["sessions"][-1]["device"]["path"]
        pristine = MOUNT / "pristine" / trial["dataset"]["key"]
        hand = by_hand(trial_dir, pristine, device)
        ratios.append(orchestrated / hand)
        print(f"pair {pair}: orchestrated {orchestrated:.1f} tps, by hand {hand:.1f} tps, ratio {ratios[-1]:.3f}")
    print(f"fidelity: median ratio {statistics.median(ratios):.3f} over {pairs} interleaved pairs")


if __name__ == "__main__":
    parts = sys.argv[1:] or ["matrix", "fidelity"]
    if "matrix" in parts:
        figures_from_matrix()
    if "fidelity" in parts:
        fidelity()
