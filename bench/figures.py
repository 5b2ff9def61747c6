"""The suite's own figures, measured on the demo device (run as root, through `make bench`).

1. Fixed cost per cell = cell wall time (first to last Ansible task of the cell) − warmup −
   duration, median over the demo matrix run with force=true.
2. restore_s / load_s on XFS and on ext4, from those cells' trial.json.
3. Fidelity: median tps of an orchestrated cell ÷ median tps of the same sysbench command run by
   hand against the same my.cnf and the same pristine datadir; and by hand with the suite's
   collectors ÷ without them. Each in ABBA order, 6 pairs, with a 95 % interval.

Prints the figures; asserts nothing (speed is measured here, not tested).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import scipy.stats
import yaml

from innomatrix.parse.sysbench import parse_output, summarize

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "module_utils"))
import innomatrix_runtime as runtime  # noqa: E402  (stdlib-only, as shipped to the host)

PLAYBOOK = [str(ROOT / ".venv/bin/ansible-playbook"), "matrix.yml", "-e", "@inventory/demo.yml"]
DEMO = yaml.safe_load((ROOT / "inventory/demo.yml").read_text())
STATE = Path("/var/lib/innomatrix")
MOUNT = Path("/mnt/innomatrix")
RESULTS = ROOT / "results"
SERVER_COMMANDS = {"server": "mariadbd", "client": "mariadb", "admin": "mariadb-admin"}


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


def by_hand(trial_dir: Path, pristine: Path, device: str, collect: bool = False) -> float:
    """The orchestrated cell's own my.cnf and sysbench command, run without the suite; with
    `collect`, beside the suite's own collectors (vmstat, iostat, the status sampler)."""
    trial = json.loads((trial_dir / "trial.json").read_text())
    socket = next(line.split("=", 1)[1].strip() for line in (trial_dir / "my.cnf").read_text().splitlines()
                  if line.startswith("socket"))
    subprocess.run(["mount", "-o", "noatime,nodiratime", device, str(MOUNT)], check=True)
    out = Path(tempfile.mkdtemp(prefix="bench-by-hand-"))
    try:
        datadir = MOUNT / "data"
        subprocess.run(["rm", "-rf", str(datadir)], check=True)
        subprocess.run(["cp", "-a", "--reflink=auto", str(pristine), str(datadir)], check=True)
        runtime.drop_caches()
        server = runtime.Server(SERVER_COMMANDS, trial_dir / "my.cnf", socket, out / "mysqld.out")
        collectors = runtime.Collectors(out, DEMO["report_interval"], device, server) if collect else None
        try:
            server.start()
            if collectors:
                collectors.start()
            driven = subprocess.run(shlex.split(trial["driver"]["command"]), capture_output=True, text=True, check=True)
        finally:
            if collectors:
                collectors.stop()
            server.stop()
    finally:
        subprocess.run(["umount", str(MOUNT)], check=True)
        shutil.rmtree(out, ignore_errors=True)
    parsed = parse_output(driven.stdout)
    return summarize(parsed["intervals"], DEMO["warmup"], DEMO["report_interval"])["throughput_median"]


def ratio_interval(ratios: list[float]) -> str:
    """Geometric mean of the per-pair ratios with a 95 % t interval (on logs: ratios multiply)."""
    logs = [math.log(r) for r in ratios]
    mean, half = statistics.mean(logs), scipy.stats.t.ppf(0.975, len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
    return (f"{math.exp(mean):.3f} (95 % CI {math.exp(mean - half):.3f}–{math.exp(mean + half):.3f}; "
            f"median {statistics.median(ratios):.3f}; {len(ratios)} pairs)")


def abba(pairs: int, first: Callable[[], float], second: Callable[[], float], names: tuple[str, str]) -> list[float]:
    """first ÷ second per pair, the order alternating (AB, BA, AB, ...) so that whatever drifts
    along the runs (device, heat, a neighbour) and whatever favours the earlier or later run of a
    pair fall on both sides alike."""
    ratios = []
    for pair in range(1, pairs + 1):
        if pair % 2:
            a, b = first(), second()
        else:
            b, a = second(), first()
        ratios.append(a / b)
        print(f"  pair {pair} ({'AB' if pair % 2 else 'BA'}): {names[0]} {a:.1f}, {names[1]} {b:.1f}, ratio {ratios[-1]:.3f}",
              flush=True)
    return ratios


def fidelity(pairs: int = 6) -> None:
    """Orchestrated ÷ by hand, and by hand with the collectors ÷ without them, ABBA."""
    one_cell = ["-e", "run_name=bench-fidelity", "-e", "filesystems=xfs", "-e", "variants=A",
                "-e", f"bp_sizes={DEMO['bp_sizes'][0]}", "-e", "force=true"]
    trial_dir = RESULTS / f"bench-fidelity/localhost/xfs/oltp/A/bp-{DEMO['bp_sizes'][0]}/t{DEMO['threads'][0]}/r1"
    play(*one_cell)  # loads the dataset, so that no pair pays for it
    trial = json.loads((trial_dir / "trial.json").read_text())
    device = trial["device"]["path"]
    pristine = MOUNT / "pristine" / trial["dataset"]["key"]

    def orchestrated() -> float:
        play(*one_cell)
        return json.loads((trial_dir / "trial.json").read_text())["summary"]["throughput_median"]

    print("orchestrated vs by hand:")
    suite = abba(pairs, orchestrated, lambda: by_hand(trial_dir, pristine, device), ("orchestrated", "by hand"))
    print("collectors on vs off (by hand):")
    collectors = abba(pairs, lambda: by_hand(trial_dir, pristine, device, collect=True),
                      lambda: by_hand(trial_dir, pristine, device), ("collectors on", "off"))
    print(f"fidelity (orchestrated ÷ by hand): {ratio_interval(suite)}")
    print(f"collectors on ÷ off: {ratio_interval(collectors)}")


if __name__ == "__main__":
    parts = sys.argv[1:] or ["matrix", "fidelity"]
    if "matrix" in parts:
        figures_from_matrix()
    if "fidelity" in parts:
        fidelity()
