"""`make test` installs every Debian package the tests use, so there a skip means a missing install
step: with INNOMATRIX_NO_SKIPS=1 (the Makefile sets it) a skip fails, except tpcc-mysql's, whose
source tree cannot be fetched here and which says so loudly."""

from __future__ import annotations

import os

import pytest

NO_SKIPS = os.environ.get("INNOMATRIX_NO_SKIPS") == "1"
ALLOWED_SKIPS = ("TPCC-MYSQL",)


def _reason(report: pytest.BaseReport) -> str:
    longrepr = report.longrepr
    return longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)


def _refuse_skip(report: pytest.BaseReport) -> None:
    if NO_SKIPS and report.skipped and not hasattr(report, "wasxfail"):
        reason = _reason(report)
        if not any(allowed in reason for allowed in ALLOWED_SKIPS):
            report.outcome = "failed"
            report.longrepr = f"skipped, but `make test` installs what every test needs: {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    _refuse_skip(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    _refuse_skip(outcome.get_result())


# `make test` runs pytest on two workers (pytest-xdist, --dist loadscope --no-loadscope-reorder):
# CI has 90 minutes, and most of an end-to-end test is waiting on a timed trial, a throttled disk
# or a guest. A group runs whole on one worker, in this order:
# - the VM modules, one group and first: each boots a TCG guest that can keep both cores busy, so
#   two at once would starve each other, and theirs is the longest chain;
# - each other end-to-end module, a group of its own: its tests share a module fixture and build
#   on each other (a rerun after the run);
# - the power-loss VM test after them, on whichever worker is free first: in a CI run the other
#   worker sat idle for its last 13 minutes while the VM group's worker still had it to run (it
#   judges what survives a pulled plug, not a speed, so a guest beside it costs it only time);
# - the unit tests, by module, last, to fill whichever worker is free.
# The groups are xdist's scopes (the scheduler below), not its xdist_group marks: pytest 9 derives a
# node's id from its path, and xdist 3.8's loadgroup renames the id to group, which now does nothing.
VM_MODULES = ("tests/e2e/test_vm_",)
AFTER_THE_REST = ("tests/e2e/test_vm_power_loss.py",)


def _group(nodeid: str) -> tuple[int, str]:
    module = nodeid.split("::", 1)[0]
    if module in AFTER_THE_REST:
        return 2, module
    if module.startswith(VM_MODULES):
        return 0, "vm"
    return (1 if module.startswith("tests/e2e/") else 3), module


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    order = {id(item): index for index, item in enumerate(items)}
    items.sort(key=lambda item: (_group(item.nodeid)[0], order[id(item)]))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    from xdist.scheduler import LoadScopeScheduling

    class ByGroup(LoadScopeScheduling):
        """xdist's scope scheduling, a scope being a group above."""

        def _split_scope(self, nodeid: str) -> str:
            return _group(nodeid)[1]

    return ByGroup(config, log)
