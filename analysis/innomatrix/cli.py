"""Command line: parse arguments, call the package, print. No logic lives here."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from innomatrix import plan, search, tree
from innomatrix_host import mycnf
from innomatrix.plan import KnobError, parse_size

ROOT = Path(__file__).resolve().parents[2]


def _extra_vars(pairs: list[str]) -> dict:
    """-e key=value (the value read as YAML, like ansible-playbook) or -e @file.yml."""
    knobs: dict = {}
    for pair in pairs:
        if pair.startswith("@"):
            knobs.update(yaml.safe_load(Path(pair[1:]).read_text()) or {})
            continue
        key, sep, value = pair.partition("=")
        if not sep:
            raise SystemExit(f"innomatrix: -e {pair!r}: expected key=value or @file.yml")
        knobs[key] = yaml.safe_load(value) if value else ""
    return knobs


def _memory_bytes() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    raise SystemExit("innomatrix: cannot read MemTotal from /proc/meminfo; pass --memory")


def cmd_plan(args: argparse.Namespace) -> int:
    knobs = yaml.safe_load(Path(args.defaults).read_text()) or {}
    knobs.update(_extra_vars(args.extra_vars))
    run_dir = Path(args.results or knobs.get("results_dir", "results")) / str(knobs.get("run_name", "main"))
    try:
        facts = {
            "host": args.host,
            "memory_bytes": parse_size("--memory", args.memory) if args.memory else _memory_bytes(),
            "device_id": args.device_id,
            "server_flavor": knobs.get("mysql_flavor", "mariadb"),
            "server_version": args.server_version,
            "driver_version": args.driver_version,
        }
        ctx = plan.context(facts, args.cnf_dir)
        the_plan = search.expand(knobs, ctx, run_dir)
    except (KnobError, plan.PlanError, mycnf.MyCnfError, tree.TreeError) as exc:  # a damaged run: one line
        return _usage(str(exc))
    print("\n".join(plan.describe(the_plan)))
    return 0


def _say(message: str) -> None:
    print(f"innomatrix: {_printable(message)}", file=sys.stderr, flush=True)


def _run_report(work: Callable[[], Any]) -> int:
    """Print what the command made, or its error in one line (exit 2)."""
    from innomatrix.frame import FrameError
    from innomatrix.parse import ParseError
    from innomatrix.report import ReportError

    try:
        written = work()
    except (FrameError, ParseError, ReportError, OSError) as exc:
        return _usage(str(exc))
    print("\n".join(written.lines))
    return 0


def _sla(args: argparse.Namespace) -> tuple[Any, str | None]:
    """The report's thresholds with the SLA given on the command line, and what is wrong with it."""
    from innomatrix import stats

    given = {name: value for name, value in (("sla_percentile", args.sla_percentile), ("sla_ms", args.sla_ms))
             if value is not None}
    # What is not given: the SLA the runs' capacity searches aimed at (rates=auto), where they had one.
    runs = [run for run in (getattr(args, "run", None), getattr(args, "run_a", None), getattr(args, "run_b", None)) if run]
    if len(given) < 2 and runs:
        recorded = [search.recorded_sla(run) for run in runs]
        aimed = {sla for sla, _ in recorded}
        for note in dict.fromkeys(note for _, note in recorded if note):
            _say(f"SLA: {note}; the report's defaults stand where no --sla-* is given")
        if len(aimed) > 1:  # one run searched at an SLA the other did not: neither is taken
            _say("SLA: the runs' capacity searches aimed at different SLAs (" + ", ".join(
                f"{run}: " + (f"p{sla[0]:g} ≤ {sla[1]:g} ms" if sla else "none") for run, (sla, _) in zip(runs, recorded))
                + "); the report's defaults stand where no --sla-* is given")
        if len(aimed) == 1 and (sla := aimed.pop()):
            taken = [word for name, word in (("sla_percentile", "percentile"), ("sla_ms", "limit")) if name not in given]
            given = {"sla_percentile": sla[0], "sla_ms": sla[1], **given}
            _say(f"SLA: p{given['sla_percentile']:g} ≤ {given['sla_ms']:g} ms ({' and '.join(taken)} as the capacity "
                 "search aimed at, from plan.json)")
    thresholds = stats.Thresholds(**given)
    if not 0 < thresholds.sla_percentile <= 100 or not thresholds.sla_ms > 0:
        return thresholds, (f"--sla-percentile {thresholds.sla_percentile:g} --sla-ms {thresholds.sla_ms:g}: give a "
                            "percentile in (0, 100] and a positive number of milliseconds")
    return thresholds, None


def cmd_report(args: argparse.Namespace) -> int:
    from innomatrix import report

    thresholds, wrong = _sla(args)
    if wrong:
        return _usage(wrong)
    return _run_report(lambda: report.report(args.run, args.out, say=_say, thresholds=thresholds))


def cmd_compare(args: argparse.Namespace) -> int:
    from innomatrix import report

    thresholds, wrong = _sla(args)
    if wrong:
        return _usage(wrong)
    if args.by == "host":
        if args.run_b is not None:
            return _usage(f"compare --by host takes one run, not {args.run_a} and {args.run_b}")
        return _run_report(lambda: report.compare_hosts(args.run_a, args.out, say=_say, thresholds=thresholds))
    if args.run_b is None:
        return _usage("compare needs RUN_A and RUN_B (or one run with --by host)")
    return _run_report(lambda: report.compare(args.run_a, args.run_b, args.out, say=_say, thresholds=thresholds))


def cmd_noise(args: argparse.Namespace) -> int:
    from innomatrix import report

    return _run_report(lambda: report.noise(*args.runs, say=_say))


def _usage(message: str) -> int:
    """The one line of an error (exit 2): a path or a line of a damaged file could hold a line break
    or a terminal's escape codes, which would make it two lines or rewrite the screen."""
    print(f"innomatrix: {_printable(message)}", file=sys.stderr)
    return 2


def _printable(text: str) -> str:
    return "".join(character if character.isprintable() else repr(character)[1:-1] for character in text)


def _sla_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sla-percentile", type=float, metavar="P",
                        help="fixed-rate trials: the latency percentile of the SLA (default: the one the capacity search aimed at, else p99)")
    parser.add_argument("--sla-ms", type=float, metavar="MS", help="fixed-rate trials: the SLA's limit (default: the capacity search's, else 10 ms)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="innomatrix", description="Plan and analyse InnoDB storage benchmark matrices.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("plan", help="print the cells a matrix expands to, with their keys and state")
    p.add_argument("-e", "--extra-vars", action="append", default=[], metavar="KEY=VALUE|@FILE",
                   help="a knob, as for ansible-playbook (repeatable)")
    p.add_argument("--defaults", default=str(ROOT / "inventory/group_vars/all.yml"),
                   help="the knobs' defaults (default: inventory/group_vars/all.yml)")
    p.add_argument("--cnf-dir", default=str(ROOT / "my.cnf.d"), help="directory of my.cnf variants")
    p.add_argument("--results", help="results directory (default: the results_dir knob)")
    p.add_argument("--host", default="localhost", help="host name the cells belong to")
    p.add_argument("--memory", help="host memory, e.g. 24G (default: this machine's)")
    p.add_argument("--device-id", default="unknown", help="identity of the device under test, as in keys")
    p.add_argument("--server-version", default="not installed", help="server version, as in keys")
    p.add_argument("--driver-version", default="not installed", help="sysbench --version, as in keys")
    p.set_defaults(func=cmd_plan)
    r = sub.add_parser("report", help="tables, plots and report.html for a results run")
    r.add_argument("run", metavar="RUN", help="a run directory, e.g. results/main")
    r.add_argument("--out", metavar="DIR", help="where to write (default: RUN itself)")
    _sla_options(r)
    r.set_defaults(func=cmd_report)
    c = sub.add_parser("compare", help="ratio A/B of median throughput per matching cell, and of capacity at the "
                                       "SLA per fixed-rate configuration, with 95 %% CIs")
    c.add_argument("run_a", metavar="RUN_A", help="run directory A (the numerator); with --by host, the run")
    c.add_argument("run_b", metavar="RUN_B", nargs="?", help="run directory B (the denominator); none with --by host")
    c.add_argument("--by", choices=("run", "host"), default="run",
                   help="run: RUN_A / RUN_B (default); host: every pair of RUN_A's hosts, first host as A")
    c.add_argument("--out", metavar="DIR",
                   help="where to write (default: RUN_A/compare-<name of RUN_B>; with --by host, RUN_A/compare-hosts)")
    _sla_options(c)
    c.set_defaults(func=cmd_compare)
    n = sub.add_parser("noise", help="each host's run-to-run noise floor from runs of repeated configurations, "
                                     "kept in its host.json for runs with 1 trial a side")
    n.add_argument("runs", metavar="RUN", nargs="+",
                   help="two or more runs of one configuration with repeats=3 or more, e.g. results/noise-1 results/noise-2")
    n.set_defaults(func=cmd_noise)
    return parser


def main(argv: list[str] | None = None) -> int:
    # Before Arrow is imported: its default allocator keeps what reading a large log freed, jemalloc
    # gives it back, a quarter less peak memory for a report (bench/report_memory.py).
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "jemalloc")
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
