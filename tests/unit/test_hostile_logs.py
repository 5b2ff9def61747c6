"""Cut, corrupted and absurd driver logs: each is a ValueError naming the line (the host records
it as the trial's reason, the report as a one-line error), or a marked trial — never a traceback,
never a clean-looking wrong number. Built from real captures, then damaged."""

from __future__ import annotations

from pathlib import Path

import pytest

from innomatrix_host import sysbench, tpcc
from innomatrix.parse.fast_sysbench import parse_output_columns

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
OLTP = (FIXTURES / "report/real-tiny/localhost/xfs/oltp/A/bp-64M/t2/r1/driver.log").read_text()
HISTOGRAM = (FIXTURES / "sysbench/fileio/1.0.20-rndrd-sync-direct-16k-t4-p99-histogram.txt").read_text()
TPCC = (FIXTURES / "tpcc/tpcc_start-2wh-4c.log").read_text()
HUGE = "1" + "0" * 400


def edited(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new, 1)


def line_of(text: str, start: str) -> int:
    return next(number for number, line in enumerate(text.splitlines(), start=1) if line.startswith(start))


def both_readers_refuse(text: str, match: str) -> None:
    """The host's parser and the report's bulk reader say the same thing."""
    with pytest.raises(ValueError, match=match):
        sysbench.parse_output(text)
    with pytest.raises(ValueError, match=match):
        parse_output_columns(text)


def test_the_clean_captures_parse() -> None:
    assert sysbench.parse_output(OLTP)["complete"] and parse_output_columns(OLTP).complete
    assert sysbench.parse_output(HISTOGRAM)["histogram"]
    assert tpcc.parse_output(TPCC)["intervals"]


def test_a_number_too_large_for_a_float_is_refused_not_read_as_inf() -> None:
    number = line_of(OLTP, "[ 2s ]")
    both_readers_refuse(edited(OLTP, "tps: 770.99", f"tps: {HUGE}"), rf"^line {number}: absurd number 1000")
    both_readers_refuse(edited(OLTP, "lat (ms,95%): 4.18", f"lat (ms,95%): {HUGE}.5"), rf"^line {number}: absurd")


def test_an_absurd_summary_figure_is_refused() -> None:
    number = line_of(OLTP, "    transactions:")
    text = OLTP.splitlines()[number - 1]
    count = text.split()[1]
    both_readers_refuse(edited(OLTP, text, text.replace(count, HUGE)), rf"^line {number}: absurd number")


def test_an_interval_line_printed_twice_names_its_line() -> None:
    second = next(line for line in OLTP.splitlines() if line.startswith("[ 2s ]"))
    number = line_of(OLTP, "[ 2s ]") + 1
    both_readers_refuse(edited(OLTP, second, second + "\n" + second),
                        rf"^line {number}: interval \[2s\] after \[2s\]: repeated or out of order")


def both_readers_note(text: str, breaks: list[str]) -> None:
    """A trial whose interval times leave their step is marked, by both readers alike."""
    assert sysbench.parse_output(text)["breaks"] == breaks
    assert parse_output_columns(text).breaks == breaks


def test_a_lost_interval_is_noted_with_the_line_after_the_gap() -> None:
    second = next(line for line in OLTP.splitlines() if line.startswith("[ 2s ]"))
    number = line_of(OLTP, "[ 2s ]")
    both_readers_note(edited(OLTP, second + "\n", ""),
                      [f"line {number}: interval [3s] after [1s]: 1 interval(s) of 1 s missing"])


def test_a_second_printed_twice_with_other_figures_is_noted() -> None:
    # sysbench's reporting thread woke late: "[ 2s ]" twice, then "[ 4s ]"; not a damaged log.
    third = next(line for line in OLTP.splitlines() if line.startswith("[ 3s ]"))
    number = line_of(OLTP, "[ 3s ]")
    both_readers_note(edited(OLTP, third, third.replace("[ 3s ]", "[ 2s ]")),
                      [f"line {number}: interval [2s] after [2s]: repeated or out of order",
                       f"line {number + 1}: interval [4s] after [2s]: 1 interval(s) of 1 s missing"])


def test_a_log_cut_before_its_summary_is_marked_incomplete() -> None:
    cut = OLTP[: OLTP.index("SQL statistics:")]
    assert not sysbench.parse_output(cut)["complete"]
    assert not parse_output_columns(cut).complete
    assert sysbench.parse_output(cut)["intervals"] == sysbench.parse_output(OLTP)["intervals"]


def test_a_histogram_cut_short_is_refused() -> None:
    start = HISTOGRAM.index("Latency histogram")
    cut = HISTOGRAM[: HISTOGRAM.index("\n", start + 400)]
    with pytest.raises(ValueError, match=r"ends inside the latency histogram"):
        sysbench.parse_histogram(cut)


def test_a_garbage_line_inside_the_histogram_names_its_line() -> None:
    rows = [line for line in HISTOGRAM.splitlines() if "|" in line and "*" in line]
    number = line_of(HISTOGRAM, rows[3])
    text = edited(HISTOGRAM, rows[3], "@@ garbage @@")
    with pytest.raises(ValueError, match=rf"^line {number}: malformed histogram row"):
        sysbench.parse_output(text)


def test_histogram_counts_that_do_not_add_up_to_the_events_are_refused() -> None:
    # One bad count used to move p95 and p99 to the top bucket without a word.
    row = next(line for line in HISTOGRAM.splitlines() if "|" in line and line.rstrip().endswith(" 3"))
    text = edited(HISTOGRAM, row, row[:-1] + "900000")
    with pytest.raises(ValueError, match=r"histogram counts \d+ events, the summary 68991"):
        sysbench.parse_output(text)


def test_tpcc_an_absurd_count_is_an_error_naming_the_line_not_an_overflow() -> None:
    number = line_of(TPCC, "  10, trx:")
    text = edited(TPCC, "  10, trx: 535,", f"  10, trx: {HUGE},")
    with pytest.raises(ValueError, match=rf"^line {number}: absurd number"):
        tpcc.parse_output(text)
    text = edited(TPCC, "  10, trx: 535, 95%: 47.907", f"  10, trx: 535, 95%: {HUGE}.1")
    with pytest.raises(ValueError, match=rf"^line {number}: absurd number"):
        tpcc.parse_output(text)


def test_tpcc_redact_hides_the_echoed_password_in_a_crlf_log() -> None:
    text = "option p with value 's3cret'\r\n       [pass]: s3cret\r\n  [server]: localhost\r\n"
    assert tpcc.redact(text, "") == "option p with value '***'\r\n       [pass]: ***\r\n  [server]: localhost\r\n"
