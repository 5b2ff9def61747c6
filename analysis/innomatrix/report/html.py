"""One self-contained report.html: tables as HTML, figures as base64 PNGs, no outside resource."""

from __future__ import annotations

import base64
import datetime as dt
from collections.abc import Iterable
from html import escape
from pathlib import Path

import pandas as pd

from innomatrix.report.plots import Plot
from innomatrix.report.tables import Table, truthy

STYLE = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; margin: 1.5em auto;
       max-width: 1180px; padding: 0 1em; color: #1b1b1b; background: #fff; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { border-bottom: 1px solid #ccc; margin-top: 2em; }
h3 { margin-top: 1.5em; } .meta { color: #555; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 12.5px; }
th, td { border: 1px solid #d4d4d4; padding: 3px 7px; text-align: right; vertical-align: top; }
th { background: #f1f3f5; } td.text, th.text { text-align: left; } td { white-space: nowrap; }
td.wrap { white-space: normal; min-width: 26em; }
tr.flagged td { background: #fff4e5; } .flag { color: #b35900; font-weight: 600; }
.ok { color: #2b7a2b; } .note { color: #555; font-size: 12.5px; }
figure { margin: 1em 0; } figure img { max-width: 100%; border: 1px solid #eee; }
figure.half { display: inline-block; width: 49%; margin: 0.5em 0; vertical-align: top; }
.scroll { overflow-x: auto; }
figcaption { color: #555; font-size: 12.5px; } nav a { margin-right: 1em; }
ul.flags li { margin-bottom: 0.2em; } code { background: #f4f4f4; padding: 0 3px; }
"""

TEXT_COLUMNS = {"trial", "host", "filesystem", "workload", "variant", "status", "unit", "flags", "a_flags",
                "b_flags", "only_in", "bp_size", "subtest", "block_size", "host_a", "host_b",
                # the Hosts table
                "started", "kernel", "distribution", "cpu", "device", "scheduler", "server", "driver"}


def table_html(table: Table, flagged_rows: Iterable[bool] | None = None) -> str:
    flagged = list(flagged_rows) if flagged_rows is not None else [False] * len(table.display)
    head = "".join(f'<th class="{_cls(c)}">{escape(str(c))}</th>' for c in table.display.columns)
    body = []
    for row, is_flagged in zip(table.display.itertuples(index=False), flagged):
        cells = "".join(f'<td class="{_cls(c)}">{escape(str(v))}</td>' for c, v in zip(table.display.columns, row))
        body.append(f'<tr class="{"flagged" if is_flagged else ""}">{cells}</tr>')
    notes = "".join(f'<p class="note">{escape(note)}</p>' for note in table.notes)
    return (f'<h3 id="{escape(table.name)}">{escape(table.title)}</h3>'
            f"<div class=\"scroll\"><table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
            f"{notes}")


WRAPPED_COLUMNS = {"flags", "a_flags", "b_flags"}


def _cls(column: object) -> str:
    name = str(column)
    return "text wrap" if name in WRAPPED_COLUMNS else ("text" if name in TEXT_COLUMNS else "")


def image_html(plot: Plot, half: bool = False) -> str:
    data = base64.b64encode(plot.png).decode("ascii")
    return (f'<figure class="{"half" if half else ""}"><img alt="{escape(plot.title)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{escape(plot.title)}</figcaption></figure>")


def flags_html(cells: pd.DataFrame) -> str:
    flagged = cells[cells["flagged"]]
    if flagged.empty:
        return '<p class="ok">No trial is flagged.</p>'
    causes = flagged["stall_causes"] if "stall_causes" in flagged else pd.Series("", index=flagged.index)
    # Each stall episode with what coincided with it (innomatrix_host.stalls), under its trial's flags.
    items = "".join(f'<li><code>{escape(t)}</code>: <span class="flag">{escape(f)}</span>'
                    + (f'<ul>{"".join(f"<li>{escape(line)}</li>" for line in str(c).split("; "))}</ul>' if c else "")
                    + "</li>"
                    for t, f, c in zip(flagged["trial"], flagged["flags"], causes.fillna("")))
    return (f"<p>{len(flagged)} of {len(cells)} trials flagged; they are shown in every table, "
            f"marked <span class=\"flag\">*</span>, never dropped.</p><ul class=\"flags\">{items}</ul>")


def definitions_html(thresholds: dict[str, object]) -> str:
    rows = "".join(f"<tr><td class=\"text\">{escape(k)}</td><td>{escape(str(v))}</td></tr>"
                   for k, v in thresholds.items())
    return ("<p class=\"note\">Figures use the measured intervals only (after the warmup, by time). "
            "Throughput is the median of the intervals; CoV = standard deviation / mean. A stall is an interval at "
            "or below <code>stall_fraction</code> of the median. Errors are sysbench's ignored errors (deadlocks) "
            "per transaction. Write amplification = device bytes written (iostat) / InnoDB bytes written "
            "(Innodb_data_written + Innodb_os_log_written). Per transaction: sysbench OLTP's, or tpcc-mysql's "
            "New-Order (tpmC ÷ 60). Steady state: throughput averaged in rounds; a window "
            "of <code>ss_window</code> rounds is steady when max − min ≤ <code>ss_range</code> of its mean and "
            "the fitted line's excursion ≤ <code>ss_slope</code> of its mean.</p>"
            f"<table><thead><tr><th class=\"text\">threshold</th><th>value</th></tr></thead><tbody>{rows}"
            "</tbody></table>")


def document(title: str, subtitle: str, sections: list[tuple[str, str, str]]) -> str:
    """sections: (anchor, heading, inner html)."""
    nav = "".join(f'<a href="#{escape(anchor)}">{escape(heading)}</a>' for anchor, heading, _ in sections)
    body = "".join(f'<section><h2 id="{escape(anchor)}">{escape(heading)}</h2>{inner}</section>'
                   for anchor, heading, inner in sections)
    made = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{escape(title)}</title>"
            f"<style>{STYLE}</style></head><body><h1>{escape(title)}</h1>"
            f"<p class=\"meta\">{escape(subtitle)} · made {made} by innomatrix</p><nav>{nav}</nav>{body}"
            "</body></html>\n")


def compare_html(table: Table) -> str:
    """A comparison table, its rows marked where a trial on either side is flagged."""
    return table_html(table, [bool(a or b) for a, b in zip(table.data["a_flags"], table.data["b_flags"])])


def hosts_html(hosts: Table, host_compare: Table | None = None) -> str:
    """The hosts of a run, then (in a report) how they compare."""
    return table_html(hosts) + (compare_html(host_compare) if host_compare is not None else "")


def report_document(run_name: str, run_dir: Path, cells: pd.DataFrame, tables: list[Table], steady: Table,
                    per_trial: Table, plots: list[Plot], notes: dict[str, str], thresholds: dict[str, object],
                    hosts: tuple[Table, Table] | None = None) -> str:
    """The report; `hosts` (the Hosts and host-vs-host tables) only for a run of two or more hosts."""
    flagged_rows = [bool(truthy(v)) for v in cells["flagged"]]
    tables_html = "".join(table_html(t) for t in tables) or "<p>No table: no trial has measured intervals.</p>"
    tables_html += "".join(image_html(p, half=True) for p in plots if p.group == "tables")
    figure_groups: dict[str, list[Plot]] = {}
    for plot in plots:
        if plot.group != "tables":
            figure_groups.setdefault(plot.group, []).append(plot)
    figures_html = "".join(f"<h3>{escape(group)}</h3>" + "".join(image_html(p) for p in group_plots)
                           for group, group_plots in figure_groups.items()) or "<p>No figure.</p>"
    notes_html = "<ul>" + "".join(f"<li><code>{escape(t)}</code>: {escape(n)}</li>" for t, n in notes.items() if n) \
        + "</ul>"
    flagged = int(cells["flagged"].sum())
    subtitle = f"{run_dir} · {len(cells)} trial{'' if len(cells) == 1 else 's'} · {flagged} flagged"
    sections = [
        ("validity", "Validity", flags_html(cells)),
        ("tables", "Tables", tables_html),
        *([("by-host", "Host vs host", hosts_html(*hosts))] if hosts is not None else []),
        ("trials", "Every trial", table_html(per_trial, flagged_rows)),
        ("steady", "Steady state", table_html(steady, flagged_rows)),
        ("figures", "Figures", figures_html),
        ("notes", "How the data were read", notes_html),
        ("definitions", "Definitions and thresholds", definitions_html(thresholds)),
    ]
    return document(f"innomatrix report: {run_name}", subtitle, sections)


def compare_document(name_a: str, name_b: str, table: Table, plot: Plot | None,
                     thresholds: dict[str, object], capacities: Table | None = None,
                     costs: Table | None = None) -> str:
    inner = compare_html(table)
    if plot is not None:
        inner += image_html(plot)
    sections = [("compare", "Ratios", inner),
                *([("capacity", "Capacity at the SLA", table_html(capacities))] if capacities is not None else []),
                *([("costs", "Cost per transaction", table_html(costs))] if costs is not None else []),
                ("definitions", "Definitions and thresholds", definitions_html(thresholds))]
    return document(f"innomatrix compare: {name_a} / {name_b}", f"A = {name_a}, B = {name_b}", sections)


def host_compare_document(run_name: str, table: Table, plot: Plot | None, hosts: Table,
                          thresholds: dict[str, object], drift: Table | None = None,
                          capacities: Table | None = None) -> str:
    """`compare RUN --by host`: the ratios (and of capacities at the SLA, where the hosts ran fixed
    rates), then what each host is (a ratio says little without it) and, where the hosts ran
    different servers, the settings that differed between them."""
    inner = compare_html(table)
    if plot is not None:
        inner += image_html(plot)
    sections = [("compare", "Ratios", inner),
                *([("capacity", "Capacity at the SLA", table_html(capacities))] if capacities is not None else []),
                ("host-list", "Hosts", hosts_html(hosts)),
                *([("settings-drift", "Settings drift", table_html(drift))] if drift is not None else []),
                ("definitions", "Definitions and thresholds", definitions_html(thresholds))]
    return document(f"innomatrix compare: {run_name}, host vs host", "A = host_a, B = host_b of each row", sections)
