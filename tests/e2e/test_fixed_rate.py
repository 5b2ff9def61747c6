"""Fixed-rate OLTP cells end to end: real MariaDB, real sysbench --rate, a loop device.

One configuration runs closed-loop and at two rates beside it: 20 transactions a second, which
any host sustains, and 5000, far beyond what this small dataset on a loop device completes with
two threads (a few hundred a second here), yet short of filling sysbench's queue in the trial's
16 s. The high rate is saturated, with its reasons, on the host and in the report; the low one is
not; each keeps the latency histogram of its measured events only; the closed-loop tables hold the
closed-loop cell alone.
"""

from __future__ import annotations

import csv
import json
import shutil

from e2e_env import NEEDS_ROOT, ok, trials_of
from innomatrix import report
from innomatrix_host import sysbench

pytestmark = NEEDS_ROOT

BASE = "localhost/xfs/oltp/A/bp-64M"
LOW, HIGH = 20, 5000
WARMUP, DURATION = 4, 12


def test_a_rate_beyond_the_server_is_saturated_and_one_within_it_is_not(env):
    done = env.play("-e", "run_name=rate", "-e", "filesystems=xfs", "-e", "bp_sizes=64M", "-e", f"rates={LOW},{HIGH}",
                    "-e", f"warmup={WARMUP}", "-e", f"duration={DURATION}")
    ok(done)
    run = env.results / "rate"
    trials = trials_of(run)
    closed, low, high = (trials[f"{BASE}/{load}/r1"] for load in ("t2", f"t2-rate{LOW}", f"t2-rate{HIGH}"))
    assert [t["status"] for t in (closed, low, high)] == ["ok", "ok", "ok"], [t["reasons"] for t in (closed, low, high)]
    assert "rate" not in closed and "--rate" not in closed["driver"]["command"]
    assert f"--rate={HIGH}" in high["driver"]["command"] and f"--report-checkpoints={WARMUP}" in high["driver"]["command"]

    # the low rate is sustained: what arrived was done, nothing waits
    assert low["rate"]["saturated"] is False, low["rate"]
    assert abs(low["rate"]["achieved_tps"] - LOW) < 0.35 * LOW
    assert "saturated" not in {flag["flag"] for flag in low["flags"]}
    # the high one is not, and says why
    assert high["rate"]["saturated"] is True
    assert high["rate"]["achieved_tps"] < 0.5 * HIGH
    assert any(reason.startswith("completed ") for reason in high["rate"]["reasons"]), high["rate"]
    [saturated] = [flag for flag in high["flags"] if flag["flag"] == "saturated"]
    assert saturated["text"].startswith(f"saturated at {HIGH}/s: completed ")
    assert f"t2-rate{HIGH}/r1: ok, flagged: saturated" in done.stdout

    # each histogram holds the measured events only: those of the end-of-run summary, which a
    # checkpoint at the warmup restarted (give or take the two threads' events in flight)
    for trial in (low, high):
        log = sysbench.parse_output((run / f"{BASE}/t2-rate{trial['cell']['rate']}/r1/driver.log").read_text())
        assert log["checkpoints"] == [float(WARMUP)]
        counted = sum(events for _, events in trial["latency_histogram"])
        assert abs(counted - log["summary"]["events"]) <= 2
        assert counted < trial["rate"]["achieved_tps"] * (DURATION + 2)
    # latency counts time in the queue: the saturated rate's p99 is far above the sustained one's
    p99 = {rate: sysbench.histogram_percentile(trial["latency_histogram"], 99) for rate, trial in ((LOW, low), (HIGH, high))}
    assert p99[HIGH] > 10 * p99[LOW]

    # the report: a fixed-rate table from the merged histograms, and closed-loop tables of the
    # closed-loop cell alone
    with open(run / "tables" / "fixed_rate.csv", newline="") as table:
        rows = {int(row["rate"]): row for row in csv.DictReader(table)}
    assert sorted(rows) == [LOW, HIGH]
    assert float(rows[HIGH]["p99_ms"]) == p99[HIGH] and float(rows[LOW]["p99_ms"]) == p99[LOW]
    assert (rows[HIGH]["saturated"], rows[LOW]["saturated"]) == ("1", "0")
    # the capacity at the default SLA (p99 ≤ 10 ms): 5000/s saturated, never met; 20/s met if its p99 was
    assert rows[HIGH]["meets_sla"] == "False" and rows[LOW]["meets_sla"] == str(p99[LOW] <= 10)
    with open(run / "tables" / "capacity_at_sla.csv", newline="") as table:
        [capacity] = list(csv.DictReader(table))
    assert capacity["saturates_at_tps"] == str(HIGH)
    assert capacity["capacity_tps"] == (str(LOW) if p99[LOW] <= 10 else "")
    assert any(path.name.startswith("latency_by_rate_") for path in (run / "plots").glob("*.png"))
    # the report flags the saturated trial with the host's very words, and only that one
    with open(run / "summary.csv", newline="") as table:
        reported = {row["trial"]: row["flags"] for row in csv.DictReader(table)}
    assert saturated["text"] in reported[f"{BASE}/t2-rate{HIGH}/r1"].split("; ")
    assert "saturated" not in reported[f"{BASE}/t2-rate{LOW}/r1"] + reported[f"{BASE}/t2/r1"]
    with open(run / "tables" / "variant_by_bp.csv", newline="") as table:
        [row] = list(csv.DictReader(table))
    assert float(row["bp-64M"]) == closed["summary"]["throughput_median"]
    # Like hosts of a fleet: the loop device recorded as such, and a twin of this host (its very
    # trials under another name) merged with it: every event twice, and the percentiles of the
    # doubled histogram (not always the host's own: doubling the events can move the rank a bucket).
    assert low["device"]["model"] == "" and low["device"]["identity"].startswith("loop:")
    fleet = env.results / "rate-fleet"
    shutil.copytree(run / "localhost", fleet / "localhost")
    shutil.copytree(run / "localhost", fleet / "twin")
    for record in (fleet / "twin").rglob("trial.json"):
        trial = json.loads(record.read_text())
        trial["cell"]["host"] = "twin"
        record.write_text(json.dumps(trial))
    report.report(fleet)
    with open(fleet / "tables" / "fixed_rate_fleet.csv", newline="") as table:
        merged = {int(row["rate"]): row for row in csv.DictReader(table)}
    assert sorted(merged) == [LOW, HIGH] and {row["hosts"] for row in merged.values()} == {"localhost, twin"}
    assert {row["device_model"] for row in merged.values()} == {"loop device"}
    for rate, trial in ((LOW, low), (HIGH, high)):
        doubled = sysbench.merge_histograms([trial["latency_histogram"]] * 2)
        assert float(merged[rate]["p99_ms"]) == sysbench.histogram_percentile(doubled, 99)
        assert int(merged[rate]["events"]) == 2 * int(rows[rate]["events"])
    print(f"\nfixed rate: closed-loop {closed['summary']['throughput_median']:.1f} tps; {LOW}/s achieved "
          f"{low['rate']['achieved_tps']:.1f}, p99 {p99[LOW]:.2f} ms; {HIGH}/s achieved "
          f"{high['rate']['achieved_tps']:.1f}, p99 {p99[HIGH]:.1f} ms, saturated: {'; '.join(high['rate']['reasons'])}")


def test_the_capacity_search_runs_a_rate_a_step_and_resumes_from_its_finished_steps(env):
    """rates=auto on the same configuration: one step, then a second asked for (a search stopped
    half way): the first and the closed-loop cell are read from the tree, not run again, and the
    second is the rate the search's rules give from the first's histogram."""
    knobs = ["-e", "run_name=rate", "-e", "filesystems=xfs", "-e", "bp_sizes=64M", "-e", "rates=auto",
             "-e", f"warmup={WARMUP}", "-e", f"duration={DURATION}"]
    ok(done := env.play(*knobs, "-e", "search_steps=1"))
    run = env.results / "rate"
    before = trials_of(run)
    closed = before[f"{BASE}/t2/r1"]["summary"]["throughput_median"]
    first = max(1, round(closed * 0.5))
    searched = sorted(path for path in before if "-rate" in path and f"-rate{LOW}/" not in path and f"-rate{HIGH}/" not in path)
    assert searched == [f"{BASE}/t2-rate{first}/r1"] and before[searched[0]]["status"] == "ok"
    said = " ".join(done.stdout.split())  # the play's lines, however its output wraps them
    assert f"capacity search localhost/xfs/oltp/A/bp-64M/t2: closed-loop {closed:.1f} tps; {first}/s " in said, said[-3000:]
    assert "stopped: 1 step(s) run, as many as search_steps allows" in said

    # Asked for a second step: only it runs, at half or twice the first rate as the first met the SLA.
    ok(done := env.play(*knobs, "-e", "search_steps=2"))
    after = trials_of(run)
    assert {path: after[path]["times"]["started"] for path in before} == {
        path: trial["times"]["started"] for path, trial in before.items()}
    step = before[searched[0]]
    met = not step["rate"]["saturated"] and sysbench.histogram_percentile(step["latency_histogram"], 99) <= 10
    second = min(2 * first, round(closed)) if met else first // 2
    assert sorted(set(after) - set(before)) == [f"{BASE}/t2-rate{second}/r1"]
    assert after[f"{BASE}/t2-rate{second}/r1"]["status"] == "ok"
    said = " ".join(done.stdout.split())
    assert f"{first}/s {'met' if met else 'missed'} (p99 " in said and "stopped: 2 step(s) run" in said, said[-3000:]
    # The report's fixed-rate table holds every rate run, searched or listed.
    with open(run / "tables" / "fixed_rate.csv", newline="") as table:
        rates = {int(row["rate"]) for row in csv.DictReader(table)}
    assert rates >= {first, second}
    print("\n" + said[said.index("capacity search localhost"):][:400])
