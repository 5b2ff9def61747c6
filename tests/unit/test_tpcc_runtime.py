"""innomatrix_host.tpcc_tool: the parts that need no server and no real tpcc-mysql.

The load orchestration runs against stand-in tpcc_load scripts and a stand-in SQL client; the
real tools are exercised by tests/e2e/test_tpcc_tool.py.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from innomatrix_host import tpcc_tool as tpcc

REPO = Path(__file__).resolve().parents[2]

SECRET = "pa55-w0rd"
CONN = tpcc.Connection(socket="/run/innomatrix/mysqld.sock", user="tpcc", password=SECRET)


# --- how the warehouses are split -----------------------------------------------


@pytest.mark.parametrize(("warehouses", "count", "ranges"), [
    (1, 1, [(1, 1)]),
    (2, 2, [(1, 1), (2, 2)]),
    (2, 8, [(1, 1), (2, 2)]),
    (10, 3, [(1, 4), (5, 7), (8, 10)]),
    (2500, 1, [(1, 2500)]),
])
def test_warehouse_ranges(warehouses: int, count: int, ranges: list[tuple[int, int]]) -> None:
    assert tpcc.warehouse_ranges(warehouses, count) == ranges


@pytest.mark.parametrize("warehouses", [1, 7, 100, 2500])
@pytest.mark.parametrize("count", [1, 3, 8, 64])
def test_warehouse_ranges_cover_every_warehouse_once_in_near_equal_parts(warehouses: int, count: int) -> None:
    ranges = tpcc.warehouse_ranges(warehouses, count)
    covered = [wh for first, last in ranges for wh in range(first, last + 1)]
    assert covered == list(range(1, warehouses + 1))
    sizes = [last - first + 1 for first, last in ranges]
    assert len(ranges) == min(count, warehouses) and max(sizes) - min(sizes) <= 1


@pytest.mark.parametrize(("warehouses", "count"), [(0, 1), (1, 0)])
def test_warehouse_ranges_refuse_nothing(warehouses: int, count: int) -> None:
    with pytest.raises(ValueError):
        tpcc.warehouse_ranges(warehouses, count)


def test_load_jobs_are_every_part_per_range_longest_first_then_items_once() -> None:
    assert tpcc.load_jobs(2, 2) == [
        (4, 1, 1), (4, 2, 2), (2, 1, 1), (2, 2, 2), (3, 1, 1), (3, 2, 2), (1, 1, 2)]
    assert tpcc.load_jobs(5, 1) == [(4, 1, 5), (2, 1, 5), (3, 1, 5), (1, 1, 5)]
    assert tpcc.load_jobs(2, 2)[0].name == "part4-w1-1"


# --- command lines -------------------------------------------------------------


def test_load_argv() -> None:
    argv = tpcc.load_argv(Path("/opt/tpcc"), CONN, 10, tpcc.LoadJob(3, 5, 7))
    assert argv == ["/opt/tpcc/tpcc_load", "-h", "localhost", "-d", "tpcc", "-u", "tpcc", "-p", SECRET,
                    "-w", "10", "-l", "3", "-m", "5", "-n", "7"]


def test_load_reaches_the_socket_through_the_environment() -> None:
    assert tpcc.load_env(CONN)["MYSQL_UNIX_PORT"] == "/run/innomatrix/mysqld.sock"


def test_an_empty_password_is_still_passed() -> None:
    """tpcc_load's password buffer is uninitialised without -p."""
    argv = tpcc.load_argv(Path("/opt/tpcc"), tpcc.Connection(socket="/s", user="root"), 1, tpcc.LoadJob(1, 1, 1))
    assert argv[argv.index("-p") + 1] == ""


def test_start_argv() -> None:
    argv = tpcc.start_argv(Path("/opt/tpcc"), CONN, warehouses=2, connections=4, rampup_s=5, duration_s=30,
                           interval_s=5)
    assert argv == ["/opt/tpcc/tpcc_start", "-h", "localhost", "-d", "tpcc", "-u", "tpcc", "-p", SECRET,
                    "-S", "/run/innomatrix/mysqld.sock", "-w", "2", "-c", "4", "-r", "5", "-l", "30", "-i", "5"]


@pytest.mark.parametrize(("duration_s", "interval_s"), [(30, 7), (0, 5), (5, 0), (3, 5)])
def test_start_argv_wants_whole_intervals(duration_s: int, interval_s: int) -> None:
    with pytest.raises(ValueError, match="multiple of the interval"):
        tpcc.start_argv(Path("/t"), CONN, 1, 1, 0, duration_s, interval_s)


@pytest.mark.parametrize("password", [SECRET, "it's $ecret"])
def test_commands_are_shown_without_the_password(password: str) -> None:
    conn = tpcc.Connection(socket="/s", user="tpcc", password=password)
    shown = conn.shown(tpcc.load_argv(Path("/opt/tpcc"), conn, 1, tpcc.LoadJob(1, 1, 1)))
    assert "ecret" not in shown and "-p '***'" in shown


@pytest.mark.parametrize("fields", [{"password": "x" * 51}, {"password": "a\nb"}, {"database": "tpcc; DROP"},
                                    {"database": ""}])
def test_connection_refuses_what_the_tools_cannot_take(fields: dict[str, str]) -> None:
    with pytest.raises(ValueError):
        tpcc.Connection(**{"socket": "/s", "user": "u", **fields})


# --- row counts ----------------------------------------------------------------


def complete_counts(warehouses: int, order_lines: int | None = None) -> dict[str, int]:
    order_lines = order_lines or 300000 * warehouses
    return {"warehouse": warehouses, "district": 10 * warehouses, "customer": 30000 * warehouses,
            "history": 30000 * warehouses, "orders": 30000 * warehouses, "new_orders": 9000 * warehouses,
            "stock": 100000 * warehouses, "item": 100000, "order_line": order_lines, "sum_ol_cnt": order_lines}


def test_complete_row_counts_pass() -> None:
    assert tpcc.check_row_counts(complete_counts(2, 600546), 2) == []


def test_row_count_problems_are_named() -> None:
    counts = complete_counts(2)
    counts["stock"] = 100000
    del counts["history"]
    assert tpcc.check_row_counts(counts, 2) == ["history: None rows, expected 60000",
                                                "stock: 100000 rows, expected 200000"]


@pytest.mark.parametrize(("order_lines", "ok"), [(540000, True), (539999, False), (660000, True), (660001, False)])
def test_order_lines_may_vary_by_ten_percent(order_lines: int, ok: bool) -> None:
    problems = tpcc.check_row_counts(complete_counts(2, order_lines), 2)
    assert (problems == []) == ok
    if not ok:
        assert problems == [f"order_line: {order_lines} rows, expected 540000-660000"]


def test_order_lines_must_be_those_the_orders_list() -> None:
    counts = {**complete_counts(2, 600546), "sum_ol_cnt": 600547}
    assert tpcc.check_row_counts(counts, 2) == ["order_line: 600546 rows, but the orders list 600547"]


def test_row_counts_reads_the_clients_rows() -> None:
    asked = []

    def client(sql: str) -> str:
        asked.append(sql)
        return "warehouse\t2\nitem\t100000\nsum_ol_cnt\t600546\n"

    assert tpcc.row_counts(client, "tpcc") == {"warehouse": 2, "item": 100000, "sum_ol_cnt": 600546}
    for table in ("warehouse", "district", "customer", "history", "orders", "new_orders", "stock", "item", "order_line"):
        assert f"FROM `tpcc`.`{table}`" in asked[0]


# --- the load, with stand-in tools ---------------------------------------------

# Echoes its password as tpcc_load does, notes how many loaders run beside it, and fails or
# hangs on request.
FAKE_LOAD = """#!/bin/sh
touch "{state}/running.$$"
ls "{state}" | grep -c '^running\\.' >> "{state}/concurrency"
echo "option p with value '$8'"
echo "       [pass]: $8"
echo "$MYSQL_UNIX_PORT part=${12} min=${14} max=${16}"
echo $$ > "{state}/pid-${12}-${14}"
case "${12}-${14}" in
  {fail}) echo "1062, 23000, Duplicate entry"; exit 255;;
  {hang}) exec sleep 60;;
esac
sleep 0.05
rm "{state}/running.$$"
echo "...DATA LOADING COMPLETED SUCCESSFULLY."
"""


def fake_tool(tmp_path: Path, fail: str = "none", hang: str = "none") -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("create_table.sql", "add_fkey_idx.sql"):
        (bin_dir / name).write_text(f"-- {name}\n")
    script = bin_dir / "tpcc_load"
    script.write_text(FAKE_LOAD.replace("{state}", str(tmp_path)).replace("{fail}", fail).replace("{hang}", hang))
    script.chmod(0o755)
    return bin_dir


@pytest.fixture(autouse=True)
def quick_polling(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tpcc, "_POLL_S", 0.01)


class FakeClient:
    def __init__(self, counts: dict[str, int]):
        self.counts, self.sql = counts, []

    def __call__(self, sql: str) -> str:
        self.sql.append(sql)
        if "COUNT(*)" in sql:
            return "".join(f"{table}\t{rows}\n" for table, rows in self.counts.items())
        return ""


def test_load_runs_every_job_and_keeps_logs_without_the_password(tmp_path: Path) -> None:
    client = FakeClient(complete_counts(2))
    record = tpcc.load(fake_tool(tmp_path), CONN, 2, 2, tmp_path / "logs", client, timeout_s=60)
    assert set(record) == {"warehouses", "jobs", "database", "loaders", "create_s", "loaders_s", "index_s",
                           "verify_s", "load_s", "warehouses_per_min", "row_counts"}
    assert [(job["part"], job["min_wh"], job["max_wh"], job["exit"]) for job in record["loaders"]] == [
        (4, 1, 1, 0), (4, 2, 2, 0), (2, 1, 1, 0), (2, 2, 2, 0), (3, 1, 1, 0), (3, 2, 2, 0), (1, 1, 2, 0)]
    assert record["warehouses_per_min"] == pytest.approx(2 * 60 / record["load_s"], rel=0.01)
    assert client.sql[0].startswith("CREATE DATABASE IF NOT EXISTS `tpcc`;\nUSE `tpcc`;\n-- create_table.sql")
    assert client.sql[1] == "USE `tpcc`;\n-- add_fkey_idx.sql\n"
    logs = sorted((tmp_path / "logs").iterdir())
    assert len(logs) == 7
    for log in logs:
        text = log.read_text()
        assert SECRET not in text and "[pass]: ***" in text and "SUCCESSFULLY" in text
        assert "/run/innomatrix/mysqld.sock" in text
    assert all(SECRET not in job["command"] for job in record["loaders"])


def test_load_runs_as_many_jobs_at_once_as_asked(tmp_path: Path) -> None:
    record = tpcc.load(fake_tool(tmp_path), CONN, 4, 2, tmp_path / "logs", FakeClient(complete_counts(4)), timeout_s=60)
    assert len(record["loaders"]) == 7
    assert max(map(int, (tmp_path / "concurrency").read_text().split())) == 2


def test_a_failed_loader_fails_the_load_and_stops_the_others(tmp_path: Path) -> None:
    client = FakeClient(complete_counts(2))
    with pytest.raises(tpcc.TpccError, match=r"tpcc_load warehouses \(stock, district\), warehouses 1-1, exited 255;"
                                             r" see .*tpcc_load-part2-w1-1.log: .*1062, 23000, Duplicate entry"):
        tpcc.load(fake_tool(tmp_path, fail="2-1", hang="4-2"), CONN, 2, 2, tmp_path / "logs", client, timeout_s=60)
    assert not any("add_fkey_idx" in sql for sql in client.sql)
    assert_ended(tmp_path / "pid-4-2")
    assert (tmp_path / "logs" / "tpcc_load-part2-w1-1.log").exists()


def test_a_load_that_takes_too_long_is_stopped(tmp_path: Path) -> None:
    with pytest.raises(tpcc.TpccError, match="did not finish within 1 s"):
        tpcc.load(fake_tool(tmp_path, hang="4-1"), CONN, 2, 2, tmp_path / "logs", FakeClient({}), timeout_s=1)
    assert_ended(tmp_path / "pid-4-1")


def test_a_load_with_missing_rows_fails(tmp_path: Path) -> None:
    counts = {**complete_counts(2), "new_orders": 17999}
    with pytest.raises(tpcc.TpccError, match="incomplete: new_orders: 17999 rows, expected 18000"):
        tpcc.load(fake_tool(tmp_path), CONN, 2, 2, tmp_path / "logs", FakeClient(counts), timeout_s=60)


def assert_ended(pid_file: Path) -> None:
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_a_tool_that_cannot_start_is_a_tpcc_error(tmp_path: Path) -> None:
    with pytest.raises(tpcc.TpccError, match="cannot run"):
        tpcc.LoggedProcess([str(tmp_path / "missing")], tmp_path / "log", SECRET)


def test_logged_process_redacts_before_writing(tmp_path: Path) -> None:
    proc = tpcc.LoggedProcess(["sh", "-c", f"echo start {SECRET}; echo to stderr {SECRET} >&2; exit 3"],
                              tmp_path / "out.log", SECRET)
    assert proc.wait(timeout=30) == 3
    assert (tmp_path / "out.log").read_text().splitlines() == ["start ***", "to stderr ***"]


# --- build ---------------------------------------------------------------------

# Stands in for upstream's src/Makefile: "links" by writing LIBS into the binaries.
FAKE_MAKEFILE = "all:\n\techo '$(LIBS)' > ../tpcc_load\n\techo '$(LIBS)' > ../tpcc_start\n"


@pytest.fixture
def source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    src = tmp_path / "tpcc-mysql"
    (src / "src").mkdir(parents=True)
    (src / "src" / "Makefile").write_text(FAKE_MAKEFILE)
    (src / "create_table.sql").write_text("-- tables\n")
    fake_bin = tmp_path / "fake-bin"
    fake_bin.mkdir()
    mysql_config = fake_bin / "mysql_config"
    mysql_config.write_text("#!/bin/sh\necho '-L/usr/lib/x86_64-linux-gnu/ -lmariadb'\n")
    mysql_config.chmod(mysql_config.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{fake_bin}:{os.environ['PATH']}")
    return src


def test_build_links_with_the_math_library_last(source: Path, tmp_path: Path) -> None:
    built = tpcc.build(source, tmp_path / "build")
    assert built["libs"] == "-L/usr/lib/x86_64-linux-gnu/ -lmariadb -lrt -lm"
    assert Path(built["tpcc_load"]).read_text().strip() == built["libs"]
    assert built["bin_dir"] == str((tmp_path / "build").resolve()) and built["changed"] is True
    assert built["commit"] is None and built["src"] == str(source.resolve())
    assert (tmp_path / "build" / "create_table.sql").exists() and not (source / "tpcc_load").exists()
    assert json.loads((tmp_path / "build" / "build.json").read_text())["source_sha256"] == built["source_sha256"]


def test_build_reuses_a_build_of_the_same_source(source: Path, tmp_path: Path) -> None:
    first = tpcc.build(source, tmp_path / "build")
    again = tpcc.build(source, tmp_path / "build")
    assert again == {**first, "changed": False}
    (source / "src" / "main.c").write_text("/* changed */\n")
    assert tpcc.build(source, tmp_path / "build")["changed"] is True


def test_the_source_digest_ignores_git_and_build_products(source: Path) -> None:
    before = tpcc.source_sha256(source)
    (source / ".git").mkdir()
    (source / ".git" / "HEAD").write_text("ref: refs/heads/master\n")
    (source / "src" / "main.o").write_bytes(b"\0")
    (source / "tpcc_start").write_bytes(b"\0")
    assert tpcc.source_sha256(source) == before


def test_build_refuses_to_replace_a_directory_it_did_not_make(source: Path, tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "precious").write_text("keep me")
    with pytest.raises(tpcc.TpccError, match="refusing to replace"):
        tpcc.build(source, tmp_path / "elsewhere")
    assert (tmp_path / "elsewhere" / "precious").exists()


def test_a_failed_build_names_its_log_and_may_be_retried(source: Path, tmp_path: Path) -> None:
    (source / "src" / "Makefile").write_text("all:\n\t@echo 'undefined reference to exp' >&2; exit 1\n")
    with pytest.raises(tpcc.TpccError, match=r"make exited 2; see .*build.log: .*undefined reference to exp"):
        tpcc.build(source, tmp_path / "build")
    (source / "src" / "Makefile").write_text(FAKE_MAKEFILE)
    assert tpcc.build(source, tmp_path / "build")["changed"] is True


def test_the_build_module_builds_once_through_ansible(source: Path, tmp_path: Path) -> None:
    """innomatrix_tpcc_build run by Ansible itself (ad hoc, local): the module, its imports, its result."""
    def run() -> dict[str, object]:
        done = subprocess.run(
            [str(Path(sys.executable).parent / "ansible"), "localhost", "-c", "local", "-o",
             "-e", f"ansible_python_interpreter={sys.executable}", "-m", "innomatrix_tpcc_build",
             "-a", f"src={source} build_dir={tmp_path / 'build'}"],
            cwd=REPO, capture_output=True, text=True, check=False,
            env={**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg")})
        assert done.returncode == 0, done.stdout + done.stderr
        return json.loads(done.stdout.split("=>", 1)[1])
    first, second = run(), run()
    assert first["changed"] is True and second["changed"] is False
    assert first["source_sha256"] == second["source_sha256"] and Path(str(first["tpcc_load"])).exists()
