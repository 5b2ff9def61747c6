"""innomatrix_host.tpcc: tpcc_start output, the trial summary and redaction.

The fixtures are real tpcc-mysql outputs and two handmade ones (tests/fixtures/tpcc/README.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from innomatrix_host import flags, tpcc

# Stalls as the trial module judges them on the host: sysbench's rule, handed over.
summarize = tpcc.summarize

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tpcc"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


CLEAN = fixture("tpcc_start-2wh-4c.log")


def edited(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new)


# --- parse_output on real output ------------------------------------------------


def test_parameters_are_read_and_the_password_is_not() -> None:
    parsed = tpcc.parse_output(CLEAN)
    assert parsed["parameters"] == {
        "server": "localhost", "port": 3306, "database": "tpcc", "user": "tpcc",
        "warehouses": 2, "connections": 4, "rampup_s": 5, "measure_s": 30,
    }
    assert "***" not in repr(parsed)


def test_interval_lines() -> None:
    parsed = tpcc.parse_output(CLEAN)
    assert parsed["interval_s"] == 5 and parsed["measured_s"] == 30
    assert [interval["t"] for interval in parsed["intervals"]] == [5, 10, 15, 20, 25, 30]
    assert parsed["intervals"][0] == {
        "t": 5, "new_order_count": 731, "p95_ms": 33.21, "p99_ms": 58.197, "max_rt_ms": 121.098,
        "payment_count": 731, "payment_max_rt_ms": 100.197,
        "order_status_count": 73, "order_status_max_rt_ms": 54.376,
        "delivery_count": 73, "delivery_max_rt_ms": 119.423,
        "stock_level_count": 73, "stock_level_max_rt_ms": 123.681,
    }


def test_result_tables() -> None:
    parsed = tpcc.parse_output(CLEAN)
    assert list(parsed["final"]) == list(tpcc.TRANSACTIONS)
    assert parsed["final"]["new_order"] == {
        "success": 159, "late": 3412, "retry": 0, "failure": 0, "avg_rt_ms": 21.5, "rt_limit_ms": 5}
    assert parsed["final"]["delivery"]["rt_limit_ms"] == 80
    assert parsed["final_by_thread"]["stock_level"] == {"success": 35, "late": 323, "retry": 0, "failure": 0}
    assert parsed["tpmc"] == 7142.0


def test_constraint_checks_name_their_group() -> None:
    checks = tpcc.parse_output(CLEAN)["constraint_checks"]
    assert checks[0] == {"group": "transaction_mix", "transaction": "payment", "percent": 43.49,
                         "minimum_percent": 43.0, "ok": True}
    assert checks[4] == {"group": "response_time", "transaction": "new_order", "percent": 4.45,
                         "minimum_percent": 90.0, "ok": False}
    assert [(c["transaction"], c["ok"]) for c in checks if c["group"] == "response_time"] == [
        ("new_order", False), ("payment", False), ("order_status", False), ("delivery", True), ("stock_level", False)]


def test_sql_errors_are_grouped_and_counted_per_transaction() -> None:
    parsed = tpcc.parse_output(fixture("tpcc_start-2wh-4c-killed-queries.log"))
    assert parsed["errors"] == [{"errno": 1317, "sqlstate": "70100", "message": "Query execution was interrupted",
                                 "count": 4, "first_line": 31}]
    assert parsed["transaction_errors"] == {"new_order": 3, "payment": 0, "order_status": 0, "delivery": 1,
                                            "stock_level": 0}
    assert len(parsed["intervals"]) == 6 and parsed["final"]["new_order"]["retry"] == 3
    assert parsed["fatal"] == []


def test_a_connection_that_gave_up_is_fatal() -> None:
    parsed = tpcc.parse_output(fixture("tpcc_start-2wh-4c-connection-refused.log"))
    assert parsed["fatal"] == [{"line": 27, "text": "error at thread_main"}]
    assert parsed["errors"][0]["errno"] == 1226


def test_errors_after_the_stopping_dots_are_found() -> None:
    parsed = tpcc.parse_output(fixture("handmade-tpcc_start-failures.log"))
    assert parsed["fatal"] == [{"line": 57, "text": "STOPPING THREADSerror at thread_main"}]
    assert {error["errno"]: error["count"] for error in parsed["errors"]} == {1317: 4, 2013: 1, 2006: 6}
    assert parsed["final"]["new_order"]["failure"] == 2


def test_nan_figures_become_none() -> None:
    text = edited(CLEAN, "  [4] sc:35 lt:323  rt:0  fl:0 avg_rt: 59.2 (20)", "  [4] sc:0 lt:0  rt:0  fl:0 avg_rt: -nan (20)")
    text = edited(text, "    Stock-Level: 9.78%  [NG] *", "    Stock-Level: -nan%  [NG] *")
    parsed = tpcc.parse_output(text)
    assert parsed["final"]["stock_level"]["avg_rt_ms"] is None
    assert parsed["constraint_checks"][-1]["percent"] is None


def test_a_run_shorter_than_one_interval_parses_and_is_invalid() -> None:
    head = CLEAN[: CLEAN.index("   5, trx:")]
    tail = CLEAN[CLEAN.index("\nSTOPPING THREADS"):]
    text = edited(edited(head + tail, " in 30 sec.", " in 0 sec."), "7142.000 TpmC", "inf TpmC")
    parsed = tpcc.parse_output(text)
    assert parsed["intervals"] == [] and parsed["interval_s"] is None and parsed["tpmc"] is None
    summary = summarize(parsed, warmup_s=0, interval_s=5)
    assert summary["status"] == "invalid"
    assert any("no TpmC" in reason for reason in summary["reasons"])


# --- parse_output on broken output ---------------------------------------------


@pytest.mark.parametrize("cut_before", ["   5, trx:", "  20, trx:", "<Raw Results>", "<Raw Results2",
                                        "<Constraint Check>", "<TpmC>", "                 7142.000 TpmC"])
def test_a_truncated_output_is_an_error_naming_its_last_line(cut_before: str) -> None:
    text = CLEAN[: CLEAN.index(cut_before)]
    with pytest.raises(ValueError, match=rf"^line {len(text.splitlines())}: .*did not finish"):
        tpcc.parse_output(text)


def test_a_table_cut_short_is_an_error() -> None:
    text = CLEAN.replace("  [4] sc:35  lt:323  rt:0  fl:0 \n", "")
    with pytest.raises(ValueError, match="one row per transaction"):
        tpcc.parse_output(text)


def test_a_malformed_interval_line_is_an_error_with_its_line_number() -> None:
    text = edited(CLEAN, "  15, trx: 588, 95%: 42.692,", "  15, trx: 588, 95%: 42.6#2,")
    with pytest.raises(ValueError, match=r"^line 31: malformed interval line"):
        tpcc.parse_output(text)


def test_a_missing_interval_line_is_an_error() -> None:
    line = next(line for line in CLEAN.splitlines() if line.startswith("  15, trx:"))
    with pytest.raises(ValueError, match=r"^line 31: interval at 20 s where 15 s was due"):
        tpcc.parse_output(CLEAN.replace(line + "\n", ""))


def test_sections_out_of_order_are_an_error() -> None:
    text = edited(CLEAN, "<Raw Results>\n", "<TpmC>\n")
    with pytest.raises(ValueError, match="section out of order"):
        tpcc.parse_output(text)


def test_a_malformed_constraint_check_is_an_error() -> None:
    text = edited(CLEAN, "       Delivery: 4.35% (>= 4.0%) [OK]", "       Delivery: 4.35% (>= 4.0%) [??]")
    with pytest.raises(ValueError, match=r"^line 57: malformed <Constraint Check> line"):
        tpcc.parse_output(text)


def test_intervals_that_do_not_cover_the_measured_time_are_an_error() -> None:
    with pytest.raises(ValueError, match="cover 30 s but the tool measured 40 s"):
        tpcc.parse_output(edited(CLEAN, " in 30 sec.", " in 40 sec."))


# --- summarize ------------------------------------------------------------------


def test_a_clean_run_is_ok_with_the_response_time_checks_as_a_flag() -> None:
    summary = summarize(tpcc.parse_output(CLEAN), warmup_s=0, interval_s=5)
    assert summary["status"] == "ok" and summary["reasons"] == []
    assert summary["flags"] == ["response_time_ng"]
    # 3571 New-Orders in 30 s.
    assert summary["tpmc_tool"] == summary["tpmc_whole_run"] == summary["tpmc_measured"] == 7142.0
    assert summary["tpmc_tool_beyond_intervals"] == 0
    assert summary["new_orders_measured"] == 3571 and summary["intervals_measured"] == 6
    assert summary["throughput_unit"] == "tpmC"
    assert summary["throughput_median"] == pytest.approx((588 + 594) / 2 * 12)
    assert summary["latency_p95_ms_median"] == pytest.approx((42.692 + 44.559) / 2)
    assert summary["stall_intervals"] == 0 and summary["sql_errors"] == 0


@pytest.mark.parametrize(("warmup_s", "measured", "new_orders"), [
    (0, 6, 3571), (4.9, 5, 3571 - 731), (5, 5, 3571 - 731), (10, 4, 2305), (30, 0, 0),
])
def test_the_warmup_is_left_out_by_interval_start(warmup_s: float, measured: int, new_orders: int) -> None:
    summary = summarize(tpcc.parse_output(CLEAN), warmup_s=warmup_s, interval_s=5)
    assert summary["intervals_measured"] == measured
    assert summary["new_orders_measured"] == new_orders
    assert summary["tpmc_whole_run"] == 7142.0
    if measured:
        assert summary["tpmc_measured"] == pytest.approx(new_orders * 60 / (measured * 5))
    else:
        assert summary["tpmc_measured"] is None and summary["status"] == "invalid"


def test_sql_errors_that_were_retried_are_only_a_flag() -> None:
    summary = summarize(tpcc.parse_output(fixture("tpcc_start-2wh-4c-killed-queries.log")), 0, 5)
    assert summary["status"] == "ok"
    assert summary["flags"] == ["response_time_ng", "sql_errors"] and summary["sql_errors"] == 4
    assert summary["tpmc_tool"] == summary["tpmc_whole_run"] == 7998.0


def test_failures_make_the_trial_invalid() -> None:
    summary = summarize(tpcc.parse_output(fixture("handmade-tpcc_start-failures.log")), 0, 5)
    assert summary["status"] == "invalid"
    assert summary["reasons"][:2] == ["2 new_order transaction(s) failed (gave up after retrying)",
                                      "1 payment transaction(s) failed (gave up after retrying)"]
    assert "error at thread_main" in summary["reasons"][2]


def test_failures_in_either_table_count() -> None:
    text = edited(CLEAN, "  [3] sc:337  lt:20  rt:0  fl:0 ", "  [3] sc:337  lt:20  rt:0  fl:1 ")
    summary = summarize(tpcc.parse_output(text), 0, 5)
    assert summary["reasons"] == ["1 delivery transaction(s) failed (gave up after retrying)"]


def test_a_transaction_mix_ng_makes_the_trial_invalid() -> None:
    summary = summarize(tpcc.parse_output(fixture("handmade-tpcc_start-mix-ng.log")), 0, 5)
    assert summary["status"] == "invalid"
    assert summary["reasons"] == ["transaction-mix check [NG]: payment 42.98% (at least 43.0% required)"]
    assert summary["flags"] == ["response_time_ng"]


def test_a_connection_that_gave_up_makes_the_trial_invalid() -> None:
    summary = summarize(tpcc.parse_output(fixture("tpcc_start-2wh-4c-connection-refused.log")), 0, 5)
    assert summary["status"] == "invalid"
    assert summary["reasons"] == ["a connection or the driver gave up: 'error at thread_main' (line(s) 27)"]


def test_a_tool_figure_that_the_intervals_do_not_explain_makes_the_trial_invalid() -> None:
    summary = summarize(tpcc.parse_output(edited(CLEAN, "7142.000 TpmC", "7140.000 TpmC")), 0, 5)
    assert summary["status"] == "invalid"
    assert summary["reasons"] == ["tpmC recomputed from the interval lines (7142.000) does not match the tool's (7140.000)"]
    assert summary["tpmc_tool_beyond_intervals"] is None


@pytest.mark.parametrize(("tool", "beyond", "status"), [
    ("7142.000", 0, "ok"), ("7144.000", 1, "ok"), ("7150.000", 4, "ok"), ("7152.000", None, "invalid"),
])
def test_the_tool_may_count_one_new_order_per_connection_after_the_last_interval(
        tool: str, beyond: int | None, status: str) -> None:
    # 4 connections, 30 s: one New-Order more is 2 tpmC more.
    summary = summarize(tpcc.parse_output(edited(CLEAN, "7142.000 TpmC", f"{tool} TpmC")), 0, 5)
    assert (summary["tpmc_tool_beyond_intervals"], summary["status"]) == (beyond, status)
    assert ("new_orders_after_last_interval" in summary["flags"]) == bool(beyond)


def test_the_tools_float_rounding_is_within_the_slack() -> None:
    # 1234567 New-Orders in 3600 s: the tool's float prints 20576.117, the exact value is 20576.1166…
    intervals = "".join(f"{t:4d}, trx: {1234567 // 360 + (t // 10 <= 1234567 % 360)}, 95%: 1.000, 99%: 2.000, "
                        "max_rt: 3.000, 1|1.000, 1|1.000, 1|1.000, 1|1.000\n" for t in range(10, 3601, 10))
    head = edited(CLEAN[: CLEAN.index("   5, trx:")], "[measure]: 30", "[measure]: 3600")
    tail = edited(CLEAN[CLEAN.index("\nSTOPPING THREADS"):], " in 30 sec.", " in 3600 sec.")
    text = edited(head + intervals + tail, "7142.000 TpmC", "20576.117 TpmC")
    parsed = tpcc.parse_output(text)
    assert sum(interval["new_order_count"] for interval in parsed["intervals"]) == 1234567
    summary = summarize(parsed, 0, 10)
    assert summary["status"] == "ok" and summary["tpmc_tool_beyond_intervals"] == 0
    assert summary["tpmc_whole_run"] == pytest.approx(20576.1166667)


def test_a_stalled_interval_is_flagged_and_left_out_of_the_latency_median() -> None:
    text = edited(CLEAN, "  20, trx: 527, 95%: 49.793, 99%: 85.625, max_rt: 203.780,",
                  "  20, trx: 0, 95%: 0.000, 99%: 0.000, max_rt: 0.000,")
    text = edited(text, "7142.000 TpmC", "6088.000 TpmC")
    summary = summarize(tpcc.parse_output(text), 0, 5)
    assert summary["stall_intervals"] == 1 and "stall_intervals" in summary["flags"]
    assert summary["latency_p95_ms_median"] == pytest.approx(42.692)
    assert summary["status"] == "ok"
    # The trial's stalls flag reads the same intervals (the fourth of the measured ones).
    stalled = tpcc.measured_stalls(tpcc.parse_output(text), 0, 5)
    assert stalled.index(True) == 3 and sum(stalled) == 1
    assert flags.stalls(stalled, 5)["text"] == "stalls: 1 intervals in 1 episodes (longest 5 s)"
    assert tpcc.measured_stalls(tpcc.parse_output(text), 20, 5) == stalled[4:]


def test_summarize_checks_the_interval() -> None:
    parsed = tpcc.parse_output(CLEAN)
    with pytest.raises(ValueError, match="every 5 s, not every 10 s"):
        summarize(parsed, 0, 10)
    with pytest.raises(ValueError, match="interval_s must be positive"):
        summarize(parsed, 0, 0)


# --- redact ---------------------------------------------------------------------

ECHO = "option p with value 's3cr3t'\n<Parameters>\n       [pass]: s3cr3t\n"


def test_redact_replaces_the_echoes_and_the_secret_anywhere() -> None:
    text = ECHO + "1045, 28000, Access denied; tried s3cr3t\n"
    assert tpcc.redact(text, "s3cr3t") == (
        "option p with value '***'\n<Parameters>\n       [pass]: ***\n1045, 28000, Access denied; tried ***\n")


def test_redact_covers_a_password_the_tool_echoed_cut_short() -> None:
    secret = "x" * 60
    echoed = f"option p with value '{secret}'\n       [pass]: {secret[:50]}\n"
    assert secret[:50] not in tpcc.redact(echoed, secret)


def test_redact_with_no_secret_still_hides_the_echoes() -> None:
    assert tpcc.redact(ECHO, "") == "option p with value '***'\n<Parameters>\n       [pass]: ***\n"
    assert tpcc.redact("option p with value ''\n", "") == "option p with value '***'\n"


@pytest.mark.parametrize("name", sorted(path.name for path in FIXTURES.glob("*.log")))
def test_every_fixture_is_already_redacted(name: str) -> None:
    text = fixture(name)
    assert tpcc.redact(text, "") == text
    assert "option p with value '***'" in text and "[pass]: ***" in text


# --- stopped by the trial (duration=auto) ---------------------------------------------------------

def stopped_after(text: str, t: int) -> str:
    """The real log cut right after its interval line at t, as when the trial stops tpcc_start."""
    lines = text.splitlines(keepends=True)
    cut = next(index for index, line in enumerate(lines) if tpcc.interval_rate(line) and tpcc.interval_rate(line)[0] == t)
    return "".join(lines[:cut + 1])


def test_a_stopped_log_reads_its_intervals_and_says_it_has_no_final_tables() -> None:
    whole = tpcc.parse_output(CLEAN)
    cut = stopped_after(CLEAN, 20)
    with pytest.raises(ValueError, match="before the TpmC figure: tpcc_start did not finish"):
        tpcc.parse_output(cut)  # not stopped by the trial: a cut log, as before
    parsed = tpcc.parse_output(cut, stopped=True)
    assert parsed["final_tables"] is False and whole["final_tables"] is True
    assert parsed["intervals"] == whole["intervals"][:4]
    summary = summarize(parsed, 5, 5)
    assert summary["status"] == "ok" and summary["reasons"] == []
    assert summary["intervals_measured"] == 3 and summary["final_tables"] is False
    assert summary["tpmc_tool"] is None and summary["tpmc_tool_beyond_intervals"] is None
    assert summary["tpmc_measured"] == (535 + 588 + 527) * 60 / 15


def test_stopped_still_refuses_a_damaged_log() -> None:
    cut = stopped_after(CLEAN, 20)
    with pytest.raises(ValueError, match="line 32: interval at 25 s where 20 s was due"):
        tpcc.parse_output(edited(cut, "  20, trx:", "  25, trx:"), stopped=True)


def test_a_log_that_finished_is_checked_in_full_even_when_stopped_is_said() -> None:
    assert tpcc.parse_output(CLEAN, stopped=True)["final_tables"] is True
    with pytest.raises(ValueError, match="intervals cover"):
        tpcc.parse_output(edited(CLEAN, " in 30 sec.", " in 35 sec."), stopped=True)


def test_interval_rate_reads_only_interval_lines() -> None:
    assert tpcc.interval_rate("  10, trx: 535, 95%: 47.907, 99%: 85.933, max_rt: 117.915, 536|93.558, 54|9.620, "
                              "53|114.117, 55|165.272") == (10, 535)
    assert tpcc.interval_rate("MEASURING START.") is None
