"""The suite's own figures, measured on the demo device (run as root, through `make bench`).

1. Fixed cost per cell = cell wall time (first to last Ansible task of the cell) − warmup −
   duration, median over the demo matrix run with force=true.
2. restore_s / load_s on XFS and on ext4, from those cells' trial.json.
3. Fidelity: median tps of an orchestrated cell ÷ median tps of the same sysbench command run by
   hand against the same my.cnf and the same pristine datadir; and by hand with the suite's
   collectors ÷ without them. Each in ABBA order, 8 pairs, with a 95 % interval; and the CPU the
   suite's own processes took while the driver ran (pidstat). `figures.py collectors` runs the
   collectors part alone, with 10 pairs.
4. Fleet (`figures.py fleet`): the fixed cost per cell of one small matrix (4 cells) run on
   localhost and on a remote host over SSH (a podman container, tests/e2e/remote_hosts.py), and
   the seconds and bytes it takes to bring one cell home (pack, fetch, check and publish); and
   the wall time of that matrix on two remote hosts at once ÷ on one of them alone.
5. Servers (`figures.py servers`): MySQL 9.7 ÷ MariaDB 11.8 median throughput per variant A-D,
   each on its own Debian 13 remote host (the trixie-mysql and trixie-bench images) with its own
   loop device, 3 interleaved repeats, one redo size on both, one host at a time so that neither
   takes the other's CPU; the ratio's interval is the report's between-runs one (trial medians,
   stats.between_runs), and the settings-drift table says why they differ.

Prints the figures; asserts nothing (speed is measured here, not tested).
"""

from __future__ import annotations

import contextlib
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
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pandas as pd
import scipy.stats
import yaml

from innomatrix_host import runtime
from innomatrix_host.sysbench import parse_output, summarize

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))  # remote_hosts.py: the remote hosts the e2e tests use

import demo_matrix  # noqa: E402  (beside this script)

DEMO = yaml.safe_load((ROOT / "inventory/demo.yml").read_text())
STATE = Path("/var/lib/innomatrix")
MOUNT = Path("/mnt/innomatrix")
RESULTS = ROOT / "results"


def play(*extra: str, playbook: list[str] = demo_matrix.PLAYBOOK) -> list[dict]:
    """Run the playbook with the JSON callback; return its task records."""
    env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK="ansible.posix.json")
    done = subprocess.run([*playbook, *extra], cwd=ROOT, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        sys.exit(f"playbook failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}")
    # The JSON document, whatever other callbacks (profile_tasks) print around it.
    document, _ = json.JSONDecoder().raw_decode(done.stdout[done.stdout.index("{"):])
    RESULTS.mkdir(exist_ok=True)
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
        server = runtime.Server(demo_matrix.MARIADB_COMMANDS, trial_dir / "my.cnf", socket, out / "mysqld.out")
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


def fidelity(pairs: int = 8, suite_part: bool = True) -> None:
    """Orchestrated ÷ by hand, and by hand with the collectors ÷ without them, ABBA; without
    `suite_part`, only the collectors."""
    one_cell = ["-e", "run_name=bench-fidelity", "-e", "filesystems=xfs", "-e", "variants=A",
                "-e", f"bp_sizes={DEMO['bp_sizes'][0]}", "-e", "force=true"]
    trial_dir = RESULTS / f"bench-fidelity/localhost/xfs/oltp/A/bp-{DEMO['bp_sizes'][0]}/t{DEMO['threads'][0]}/r1"
    play(*one_cell)  # loads the dataset, so that no pair pays for it
    trial = json.loads((trial_dir / "trial.json").read_text())
    device = trial["device"]["path"]
    pristine = MOUNT / "pristine" / trial["dataset"]["key"]

    shares: list[dict[str, float]] = []

    def orchestrated() -> float:
        with cpu_shares() as seen:
            play(*one_cell)
        shares.append(seen)
        return json.loads((trial_dir / "trial.json").read_text())["summary"]["throughput_median"]

    if suite_part:
        print("orchestrated vs by hand:")
        suite = abba(pairs, orchestrated, lambda: by_hand(trial_dir, pristine, device), ("orchestrated", "by hand"))
    print("collectors on vs off (by hand):")
    collectors = abba(pairs, lambda: by_hand(trial_dir, pristine, device, collect=True),
                      lambda: by_hand(trial_dir, pristine, device), ("collectors on", "off"))
    print(f"collectors on ÷ off: {ratio_interval(collectors)}")
    if not suite_part:
        return
    print(f"fidelity (orchestrated ÷ by hand): {ratio_interval(suite)}")
    print("CPU while the driver ran (orchestrated trials, median over them; % of one core, the host has "
          f"{os.cpu_count()}):")
    for command in sorted({c for seen in shares for c in seen}, key=lambda c: -statistics.median(s.get(c, 0.0) for s in shares)):
        share = statistics.median(seen.get(command, 0.0) for seen in shares)
        if share >= 0.05:
            print(f"  {command:24s} {share:6.2f} %{'  (the suite)' if command in SUITE_PROCESSES else ''}")
    suite_total = statistics.median(sum(v for c, v in seen.items() if c in SUITE_PROCESSES) for seen in shares)
    print(f"  the suite's own processes together: {suite_total:.2f} % of one core")


# What the suite itself runs beside the server and the driver during a trial (pidstat's names,
# cut at 15 characters): the controller, the trial module, the status client, the collectors.
SUITE_PROCESSES = {"ansible-playboo", "python3", "mariadb", "mysql", "iostat", "vmstat"}


@contextlib.contextmanager
def cpu_shares() -> Iterator[dict[str, float]]:
    """Mean CPU (% of one core) per command over the seconds the driver (sysbench) was running,
    from `pidstat -u 1`. Processes that live less than a second are missed: the suite starts
    none during a trial (the status client is one session)."""
    seen: dict[str, float] = {}
    with tempfile.TemporaryFile("w+") as out:
        sampler = subprocess.Popen(["pidstat", "-u", "-h", "1"], stdout=out, stderr=subprocess.DEVNULL,
                                   env=dict(os.environ, LC_ALL="C"))
        try:
            yield seen
        finally:
            sampler.terminate()
            sampler.wait()
        out.seek(0)
        by_second: dict[str, list[tuple[str, float]]] = {}
        for line in out:
            fields = line.split()
            # Time UID PID %usr %system %guest %wait %CPU CPU Command
            if len(fields) >= 10 and fields[2].isdigit():
                by_second.setdefault(fields[0], []).append((fields[9], float(fields[7])))
    driven = [rows for rows in by_second.values() if any(command == "sysbench" for command, _ in rows)]
    for rows in driven:
        for command, cpu in rows:
            seen[command] = seen.get(command, 0.0) + cpu / len(driven)


FLEET_KNOBS = {
    "filesystems": ["xfs"], "variants": ["A"], "bp_sizes": ["64M", "128M"], "threads": [2], "repeats": 2,
    "warmup": 2, "duration": 4, "report_interval": 1, "oltp_tables": 2, "oltp_table_size": 5000,
    "mycnf_overrides": {"innodb_log_file_size": "48M"}, "report": False,
}


def homecoming(tasks: list[dict]) -> tuple[list[float], list[int]]:
    """Per cell brought home: seconds of its one Results home task (pack, fetch, publish, drop),
    and the archive's bytes."""
    seconds, sizes = [], []
    for task in tasks:
        name, times = task["task"]["name"].split(" : ", 1)[-1], task["task"]["duration"]
        if name.startswith("Results home | "):
            seconds.append(_moment(times["end"]) - _moment(times["start"]))
            sizes.extend(result["bytes"] for result in task["hosts"].values() if "bytes" in result)
    return seconds, sizes


@contextlib.contextmanager
def remote_bench(prefix: str, images: dict[str, str], knobs: dict) -> Iterator[tuple[Path, dict]]:
    """tests/e2e/remote_hosts.py's hosts in a base directory (all removed afterwards), and in it a
    knobs.yml that sends the results and secrets there too."""
    from remote_hosts import remote_hosts

    with remote_hosts(prefix, images) as (base, hosts):
        (base / "knobs.yml").write_text(yaml.safe_dump({**knobs, "results_dir": str(base / "results"),
                                                        "preflight_secrets_dir": str(base / "secrets")}))
        yield base, hosts


def fleet() -> None:
    from remote_hosts import project_inventory

    with remote_bench("innomatrix-bench-fleet-", {"bench-one": "bookworm-bench", "bench-two": "bookworm-bench"},
                      FLEET_KNOBS) as (base, remotes):
        try:
            one = project_inventory(base, {"bench-one": remotes["bench-one"]}, "one.yml")
            two = project_inventory(base, remotes, "two.yml")
            local_extra = ["-e", f"preflight_state_dir={base}/state", "-e", f"preflight_mountpoint={base}/mnt",
                           "-e", f"preflight_demo_file={base}/disk.img", "-e", "preflight_demo_size=2G",
                           "-e", "preflight_port=3399"]
            plays = {
                "localhost": ["-e", "run_name=local", *local_extra],
                "one remote host over SSH": ["-i", str(one), "-e", "run_name=one"],
                "two remote hosts at once": ["-i", str(two), "-e", "run_name=two"],
            }
            walls = {}
            for name, extra in plays.items():
                started = time.monotonic()
                tasks = play(*extra, "-e", f"@{base / 'knobs.yml'}", playbook=demo_matrix.PLAYBOOK[:2])
                walls[name] = time.monotonic() - started
                if name == "two remote hosts at once":
                    break  # two hosts' tasks share the records: their per-cell spans would mix
                costs = fixed_costs(tasks, FLEET_KNOBS["warmup"], FLEET_KNOBS["duration"])
                seconds, sizes = homecoming(tasks)
                print(f"{name}: fixed cost per cell median {statistics.median(costs):.2f} s over {len(costs)} cells "
                      f"(min {min(costs):.2f}, max {max(costs):.2f}); bringing a cell home: median "
                      f"{statistics.median(seconds):.2f} s, {statistics.median(sizes) / 1024:.0f} KiB packed")
            for name, wall in walls.items():
                print(f"{name}: whole playbook {wall:.0f} s")
            print(f"two hosts at once ÷ one host, wall time: "
                  f"{walls['two remote hosts at once'] / walls['one remote host over SSH']:.2f}")
        finally:
            # The localhost play's demo device lives in base: unmounted and detached before base goes.
            subprocess.run(["umount", str(base / "mnt")], capture_output=True)
            found = subprocess.run(["losetup", "-n", "-O", "NAME", "-j", str(base / "disk.img")],
                                   capture_output=True, text=True)
            for device in found.stdout.split():
                subprocess.run(["losetup", "-d", device], capture_output=True)


SERVERS_KNOBS = {
    "filesystems": ["xfs"], "variants": ["A", "B", "C", "D"], "bp_sizes": ["64M"], "threads": [4], "repeats": 3,
    "warmup": 10, "duration": 30, "report_interval": 1, "oltp_tables": 4, "oltp_table_size": 100000,
    "reconnect_grace": 600, "run_name": "servers",
}
# Host names sort MySQL first, so that the host-vs-host ratio reads MySQL ÷ MariaDB.
SERVER_HOSTS = {"db1-mysql": ("trixie-mysql", "mysql"), "db2-mariadb": ("trixie-bench", "mariadb")}


def servers() -> None:
    from remote_hosts import play_matrix, project_inventory

    images = {name: image for name, (image, _) in SERVER_HOSTS.items()}
    with remote_bench("innomatrix-bench-servers-", images, SERVERS_KNOBS) as (base, remotes):
        # One redo size on both (the seed's 2 × 1G does not fit the 2 GiB device): MySQL's capacity,
        # MariaDB's one file (10.5+ writes a single redo file), 96M each.
        host_vars = {name: {"mysql_flavor": flavor, "mycnf_overrides": {"innodb_redo_log_capacity": "96M"}
                            if flavor == "mysql" else {"innodb_log_file_size": "96M"}}
                     for name, (_, flavor) in SERVER_HOSTS.items()}
        inventory = project_inventory(base, remotes, host_vars=host_vars)
        for name in SERVER_HOSTS:
            started = time.monotonic()
            log = base.parent / f"{base.name}-{name}.log"
            done = play_matrix(inventory, base / "knobs.yml", "--limit", name, "-e", "report=false", log=log,
                               timeout=7200)
            if done.returncode != 0:
                sys.exit(f"{name}: playbook failed ({done.returncode}), its log: {log}")
            log.unlink()
            print(f"{name}: {time.monotonic() - started:.0f} s")
        run_dir = base / "results" / SERVERS_KNOBS["run_name"]
        subprocess.run([str(ROOT / ".venv/bin/innomatrix"), "report", str(run_dir)], check=True, capture_output=True)
        compared = pd.read_csv(run_dir / "tables" / "host_compare.csv")
        for _, row in compared.iterrows():
            print(f"variant {row['variant']}: {row['host_a']} ÷ {row['host_b']} = {row['ratio']:.3f} "
                  f"(95 % CI {row['ci_low']:.3f}–{row['ci_high']:.3f}, {row['verdict']}; "
                  f"medians {row['a_median']:.1f} / {row['b_median']:.1f} {row['unit']}, "
                  f"{row['a_trials']}+{row['b_trials']} trials)")
        drift = pd.read_csv(run_dir / "tables" / "settings_drift.csv")
        print("settings drift (effective values that differ between the hosts):")
        print(drift.to_string(index=False))


PARTS = ("matrix", "fidelity", "collectors", "fleet", "servers")

if __name__ == "__main__":
    parts = sys.argv[1:] or ["matrix", "fidelity"]
    if parts[0] in ("-h", "--help"):
        print(__doc__.strip())
        sys.exit(0)
    if set(parts) - set(PARTS):
        sys.exit(f"unknown part(s) {', '.join(sorted(set(parts) - set(PARTS)))}; the parts: {', '.join(PARTS)}")
    if "matrix" in parts:
        figures_from_matrix()
    if "fidelity" in parts:
        fidelity()
    if "collectors" in parts:
        fidelity(pairs=10, suite_part=False)
    if "fleet" in parts:
        fleet()
    if "servers" in parts:
        servers()
