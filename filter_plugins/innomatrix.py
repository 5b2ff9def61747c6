"""Thin Ansible filters over the innomatrix package: the plan (with each cell's my.cnf) lives there."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from innomatrix import plan, results, search, tree
from innomatrix_host import mycnf
from innomatrix.plan import KnobError, picked


def innomatrix_knobs(host_vars: Mapping) -> dict:
    """The matrix knobs out of a host's variables (hostvars[inventory_hostname]), by the plan's
    one list of them (innomatrix.plan.KNOBS), so no playbook lists them again."""
    try:
        return picked(host_vars)
    except KnobError as exc:
        raise AnsibleFilterError(str(exc)) from None


def innomatrix_devices(value) -> list[str]:
    """A host's `devices` as a list, whether the inventory gave a YAML list or `-e devices=a,b`."""
    try:
        return plan.as_list("devices", value)
    except KnobError as exc:
        raise AnsibleFilterError(str(exc)) from None


def innomatrix_check_knobs(knobs: dict, memory_bytes: int, cnf_dir: str, devices: list | None = None) -> dict:
    """The knobs alone, before the device or the server are known: {error} names a bad one.
    The layouts' members are counted by the devices as named (probed later, before the plan)."""
    facts = {"host": "this host", "memory_bytes": memory_bytes, "device_id": "", "server_flavor": "",
             "server_version": "", "driver_version": "", "member_ids": list(devices or [])}
    try:
        spec = plan.normalise(knobs, plan.context(facts, cnf_dir))
        return {"error": None, "spec": spec, "device_bytes_needed": plan.space_needed(spec)}
    except (KnobError, plan.PlanError, mycnf.MyCnfError) as exc:
        return {"error": str(exc), "spec": None, "device_bytes_needed": None}


def innomatrix_plan(knobs: dict, facts: dict, cnf_dir: str, run_dir: str) -> dict:
    """The plan for one host; a bad knob becomes one line of error, not a traceback."""
    try:
        return search.expand(knobs, plan.context(facts, cnf_dir), run_dir)
    except (KnobError, plan.PlanError, mycnf.MyCnfError, tree.TreeError) as exc:  # a damaged run: one line
        raise AnsibleFilterError(str(exc)) from None


def innomatrix_search_step(searching: list, the_plan: dict, run_dir: str, tried: list) -> dict:
    """The next step of a pass's capacity searches: {cells, lines} (innomatrix.search)."""
    try:
        return search.next_cells(searching, the_plan["spec"]["search"], run_dir, set(tried), the_plan["spec"]["force"])
    except (plan.PlanError, tree.TreeError) as exc:
        raise AnsibleFilterError(str(exc)) from None


def innomatrix_plan_record(the_plan: dict) -> dict:
    return plan.recorded(the_plan)


def innomatrix_detach(cell: dict, grace: int) -> dict:
    return plan.detachment(cell, grace)


def innomatrix_plan_lines(the_plan: dict) -> list[str]:
    return plan.describe(the_plan)


def innomatrix_commit(checkout: str) -> str:
    """The suite's own commit, for run.json; 'unknown' outside a git checkout."""
    done = subprocess.run(["git", "-C", checkout, "describe", "--always", "--dirty"],
                          capture_output=True, text=True, check=False)
    return done.stdout.strip() if done.returncode == 0 else "unknown"


def innomatrix_outcomes(the_plan: dict, run_dir: str) -> dict:
    """Every planned cell's line, then where each capacity search ended; and what failed."""
    try:
        cells, searches = results.outcomes(the_plan, run_dir), search.outcomes(the_plan, run_dir)
    except tree.TreeError as exc:  # a damaged run: one line
        raise AnsibleFilterError(str(exc)) from None
    return {"lines": cells["lines"] + searches["lines"], "failed": cells["failed"] + searches["failed"]}


def innomatrix_unfinished(gone: list) -> list[str]:
    """One line per host that left the play, from [host, its preflight_facts] pairs: the cells of
    its plan without a finished trial in the controller's tree and its capacity searches with
    steps left, that it never got a plan, or that its part of the tree cannot be read."""
    lines = []
    for host, facts in gone:
        plan = facts.get("plan") if isinstance(facts, Mapping) else None
        if not plan:
            lines.append(f"{host} did not finish: it stopped before it had a plan")
            continue
        try:
            failed = results.outcomes(plan, facts["setup"]["run_dir"])["failed"]
            searches = search.unfinished(plan, facts["setup"]["run_dir"])
        except tree.TreeError as exc:  # its line says the tree is damaged; the other hosts' still say theirs
            lines.append(f"{host} did not finish, and what it finished cannot be read: {exc}")
            continue
        lines.append(f"{host} did not finish: {len(failed)} cell(s) without a finished trial"
                     + (f": {'; '.join(failed)}" if failed else "")
                     + (f"; {len(searches)} capacity search(es) with steps left: {'; '.join(searches)}"
                        if searches else ""))
    return lines


def innomatrix_known_options(help_text: str) -> list[str]:
    return sorted(mycnf.known_options(help_text))


def innomatrix_progress(cell: dict, started_epoch: float, finished_cells: int) -> str:
    """`host cell k/N id | elapsed | ETA`, the ETA from the cells measured so far or from the plan;
    the host leads, since several hosts announce their cells at once."""
    elapsed = time.time() - float(started_epoch)
    remaining = cell["total"] - cell["index"] + 1
    per_cell = elapsed / finished_cells if finished_cells else cell["warmup"] + cell["duration"] + 5
    return (f"{cell['host']} cell {cell['index']}/{cell['total']} {cell['id']} | elapsed {_clock(elapsed)} | "
            f"ETA {_clock(per_cell * remaining)}")


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s"


class FilterModule:
    def filters(self):
        return {
            "innomatrix_knobs": innomatrix_knobs,
            "innomatrix_devices": innomatrix_devices,
            "innomatrix_plan": innomatrix_plan,
            "innomatrix_check_knobs": innomatrix_check_knobs,
            "innomatrix_plan_lines": innomatrix_plan_lines,
            "innomatrix_plan_record": innomatrix_plan_record,
            "innomatrix_detach": innomatrix_detach,
            "innomatrix_known_options": innomatrix_known_options,
            "innomatrix_outcomes": innomatrix_outcomes,
            "innomatrix_unfinished": innomatrix_unfinished,
            "innomatrix_commit": innomatrix_commit,
            "innomatrix_progress": innomatrix_progress,
            "innomatrix_search_step": innomatrix_search_step,
        }
