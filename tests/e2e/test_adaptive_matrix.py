"""warmup=auto and duration=auto end to end: real MariaDB, real sysbench, a loop device.

One cell decides its own warmup and duration within caps small enough for CI; trial.json says
where and why it started and stopped, and the report agrees with the host on where the throughput
settled. A rerun finds it finished; the same cell asked with fixed times is another cell (its key
differs) and is refused in the same run; a driver killed while the trial watches it is a failed
cell with its reason.
"""

from __future__ import annotations

import csv
import datetime as dt
import os
import signal
import subprocess
import time

from e2e_env import NEEDS_ROOT, PLAY_ENV, PS, ROOT, ok, trials_of
from innomatrix_host import flags, steady
from innomatrix_host.sysbench import parse_output

pytestmark = NEEDS_ROOT

CELL = "localhost/xfs/oltp/A/bp-64M/t2/r1"
AUTO = ["-e", "filesystems=xfs", "-e", "bp_sizes=64M", "-e", "warmup=auto", "-e", "warmup_max=30",
        "-e", "duration=auto", "-e", "duration_min=10", "-e", "duration_max=40", "-e", "precision=0.5"]
# Caps small enough for CI. The precision rule claims nothing from fewer than ten batches of three
# times the series' correlation reach (innomatrix_host.steady), and a real loop-device series
# reaches 2 to 400 intervals (bench/adaptive.py's recording), so within 40 s the cell usually ends
# at its cap; which way it ended, the host must have decided exactly what the rules decide offline
# on the log it kept. Whether precision stops keep their promise is tests/unit/test_adaptive.py's.


def seconds(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_an_adaptive_cell_decides_and_says_why(env):
    done = env.play(*AUTO, "-e", "run_name=auto")
    ok(done)
    trial = trials_of(env.results / "auto")[CELL]
    assert trial["status"] == "ok", trial["reasons"]
    decided = trial["durations"]["adaptive"]
    assert decided["rules"]["warmup_auto"] and decided["rules"]["duration_auto"]
    assert decided["warmup_decided_by"] in ("steady", "max") and decided["ended_by"] in ("precision", "max")
    log = (env.results / "auto" / CELL / "driver.log").read_text()

    # the host's live decisions are the rules' decisions on the intervals it kept, to the second
    intervals = [i for i in parse_output(log, check_intervals=False)["intervals"] if i["kind"] == "oltp"]
    expected = steady.replay([float(i["t"]) for i in intervals], [float(i["tps"]) for i in intervals],
                             steady.Rules(**decided["rules"])).record()
    if expected["ended_by"] is None:  # sysbench reached its --time and left its last interval unprinted
        expected.update(end_s=decided["measure_start_s"] + 40, ended_by="max")
    assert {key: decided[key] for key in expected} == expected
    if decided["ended_by"] == "precision":
        assert decided["precision_reached"] <= 0.5 and decided["precision_checks"] >= 1

    warmup, measured = trial["durations"]["warmup_s"], trial["durations"]["measured_s"]
    assert warmup == decided["measure_start_s"] <= 30
    assert measured == decided["end_s"] - warmup and 10 <= measured <= 40
    if decided["warmup_decided_by"] == "steady":
        assert decided["windows_tested"] >= 1 and warmup % decided["round_s"] == 0
    assert decided["planned_s"] == 70
    # times agree with the decision, and the summary measured what was decided
    started = seconds(trial["times"]["started"])
    assert (seconds(trial["times"]["measure_start"]) - started).total_seconds() == warmup
    assert trial["summary"]["intervals_measured"] == measured
    assert "[ 1s ]" in log and f"[ {int(warmup + measured)}s ]" in log
    if warmup + measured < 70:
        # ended before sysbench's --time: the trial stopped it right after the interval that
        # settled it, so every line it printed is whole and kept, and there is no summary
        assert decided["stopped_driver"], decided
        assert f"[ {int(warmup + measured) + 1}s ]" not in log and "General statistics" not in log
    print(f"\nadaptive cell: warmup {warmup:g} s ({decided['warmup_decided_by']}), measured {measured:g} s "
          f"({decided['ended_by']}, ±{decided['precision_reached'] or float('nan'):.2%}) of 30 + 40 s given; "
          f"{trial['summary']['throughput_median']:.1f} tps")

    # the report: per trial fixed vs decided, the run's time saved, and the host's steady window
    with open(env.results / "auto" / "tables" / "steady_state.csv", newline="") as table:
        row = next(csv.DictReader(table))
    assert row["warmup_decided_by"] == decided["warmup_decided_by"] and row["ended_by"] == decided["ended_by"]
    assert float(row["planned_s"]) == 70
    if decided["warmup_decided_by"] == "steady":
        assert float(row["ss_first_s"]) + 5 * decided["round_s"] == warmup, "the report finds the host's window"
    saved = [line for line in done.stdout.splitlines() if "adaptive: " in line]
    assert saved and f"{(70 - warmup - measured) / 60:.1f} min saved of 1.2 min (" in saved[0], done.stdout[-2000:]
    # the cell's outcome line says how its time was decided (the YAML callback may wrap it), after
    # the flags its trial raised, if any (a loaded host can stall an interval)
    flat = " ".join(done.stdout.split())
    status = ", ".join(["ok", *([flags.labels(trial["flags"])] if trial["flags"] else [])])
    assert (f"xfs/oltp/A/bp-64M/t2/r1 {trial['summary']['throughput_median']:.1f} tps" in flat
            and f"{status} warmup {warmup:g} s ({decided['warmup_decided_by']}), measured {measured:g} s "
                f"({decided['ended_by']})" in flat), (status, flat[-3000:])


def test_rerun_finds_it_finished_and_fixed_times_are_another_cell(env):
    done = env.play(*AUTO, "-e", "run_name=auto")
    ok(done)
    assert "1 cells: 0 to run, 1 already finished" in done.stdout
    fixed = env.play("-e", "filesystems=xfs", "-e", "bp_sizes=64M", "-e", "run_name=auto")
    assert fixed.returncode != 0
    assert "measured with other inputs" in fixed.stdout + fixed.stderr


def test_a_driver_killed_while_watched_is_a_failed_cell(env):
    play = subprocess.Popen(env.play_argv(*AUTO, "-e", "run_name=auto-killed", "-e", "duration_min=40"), cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=PLAY_ENV)
    killed = None
    deadline = time.monotonic() + 900
    while killed is None and play.poll() is None and time.monotonic() < deadline:
        for line in subprocess.run(PS, capture_output=True, text=True).stdout.splitlines():
            pid, _, args = line.strip().partition(" ")
            if args.startswith("sysbench") and str(env.base) in args and args.endswith(" run"):
                time.sleep(8)  # well inside the warmup or the measured part: the trial is watching it
                os.kill(int(pid), signal.SIGKILL)
                killed = pid
                break
        time.sleep(0.5)
    output, _ = play.communicate(timeout=900)
    assert killed, output[-3000:]
    assert play.returncode != 0
    trial = trials_of(env.results / "auto-killed")[CELL]
    assert trial["status"] == "failed"
    assert any("sysbench was killed by signal 9" in reason for reason in trial["reasons"]), trial["reasons"]
    decided = trial["durations"]["adaptive"]
    assert decided["stopped_driver"] is False and decided["ended_by"] == "driver"
    assert decided["end_s"] < 30 + 40 - 1  # what it measured before it died, not the time it was given
    assert env.stray_processes() == []
