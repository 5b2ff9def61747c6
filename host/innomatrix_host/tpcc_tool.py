"""tpcc-mysql on the benchmark host: build it, load a dataset with parallel loaders, run the driver.

Part of innomatrix_host (the standard library only); the tpcc role builds through the
innomatrix_tpcc_build module, the dataset and trial modules load and run through here. SQL goes
through a ``client(sql) -> str`` callable the caller provides (rows
tab-separated, no column names, as ``mysql -N -B`` prints them), so this file does not depend
on how the server is run.

How tpcc-mysql connects, and where its password goes (read from its src/load.c and src/main.c):
- both tools take ``-h``; with ``localhost`` the client library uses the Unix socket. tpcc_start
  takes the socket as ``-S``; tpcc_load has no such option, so the socket reaches it through
  ``MYSQL_UNIX_PORT``, which the client library reads.
- the password can only be given as ``-p`` on the command line (visible in ``ps`` while the tool
  runs), and both tools echo it (``option p with value '…'``, ``[pass]: …``). The safest account
  needs none: one that authenticates by the socket's peer (MariaDB ``unix_socket``, MySQL
  ``auth_socket``) as the OS user running the tools. With a password, every log written here
  has it replaced by ``***`` before it reaches the disk.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from .runtime import tail, tail_text
from .tpcc import redact

# tpcc_load copies user, password and database into 51-byte buffers with strncpy: a longer
# value is cut (and left unterminated), so it could never log in.
_MAX_ARGUMENT = 50
_DATABASE_RE = re.compile(r"[A-Za-z0-9_]+")

# The parts of a tpcc_load run (-l), as its usage text names them, and what each fills.
PARTS = {1: "items", 2: "warehouses (stock, district)", 3: "customers (history)", 4: "orders (new_orders, order_line)"}
# Longest first, so that the parallel load ends with short jobs: orders (~300k order lines per
# warehouse), stock (100k rows per warehouse), customers and history (60k), items (100k, once).
_PART_ORDER = (4, 2, 3)

# Rows a complete load holds for W warehouses (TPC-C 4.3.3.1; tpcc-mysql's src/tpc.h).
_ROWS_PER_WAREHOUSE = {"warehouse": 1, "district": 10, "customer": 30000, "history": 30000, "orders": 30000,
                       "new_orders": 9000, "stock": 100000}
_ITEMS = 100000
# Each order has 5 to 15 lines at random (mean 10); the exact total is SUM(o_ol_cnt).
_ORDER_LINES_PER_WAREHOUSE = 300000
_ORDER_LINES_TOLERANCE = 0.10
_TABLES = (*_ROWS_PER_WAREHOUSE, "item", "order_line")

# tpcc-mysql's dialect (see build()); given as CC because the Makefile sets CFLAGS and INC itself.
C_COMPILER = "cc -std=gnu89"
# What make leaves at the top of the tree; not source.
_BINARIES = ("tpcc_load", "tpcc_start")
# Marks a build directory as build()'s own, even when a build failed half-way, so it may be replaced.
_BUILD_MARKER = ".innomatrix-tpcc-build"

_STOP_GRACE_S = 10.0
_POLL_S = 0.2


class TpccError(RuntimeError):
    """A reason tpcc-mysql could not be built or a dataset not loaded; the message says which."""


@dataclass(frozen=True)
class Connection:
    """How the tools reach the server: always the local socket, never TCP."""

    socket: str
    user: str
    password: str = ""
    database: str = "tpcc"

    def __post_init__(self) -> None:
        if len(self.user) > _MAX_ARGUMENT or len(self.password) > _MAX_ARGUMENT or "\n" in self.password:
            raise ValueError(f"tpcc_load cannot use a user or password longer than {_MAX_ARGUMENT} characters, or a "
                             "password with a line break")
        if not _DATABASE_RE.fullmatch(self.database):
            raise ValueError(f"database name {self.database!r}: letters, digits and _ only")

    def shown(self, argv: list[str]) -> str:
        """A command line fit for a log or a record: the password replaced."""
        # Argument by argument: shlex may quote a password so that it no longer reads as itself.
        return shlex.join(redact(arg, self.password) for arg in argv)


class LoadJob(NamedTuple):
    """One tpcc_load process: a part (-l) for a range of warehouses (-m … -n)."""

    part: int
    min_wh: int
    max_wh: int

    @property
    def name(self) -> str:
        return f"part{self.part}-w{self.min_wh}-{self.max_wh}"


# ---------------------------------------------------------------- build


def source_sha256(src: Path) -> str:
    """A digest of the source tree (names and contents), ignoring .git and build products."""
    digest = hashlib.sha256()
    for path in sorted(src.rglob("*")):
        relative = path.relative_to(src)
        if ".git" in relative.parts or not path.is_file() or path.suffix == ".o" or path.name in _BINARIES:
            continue
        digest.update(str(relative).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def git_commit(src: Path) -> str | None:
    """The commit a git work tree at src is at (``-dirty`` if tracked files changed); None if not a git tree."""
    if not (src / ".git").exists():
        return None
    # The tree may belong to another user than the one building (a copy made by Ansible).
    git = ["git", "-c", f"safe.directory={src.resolve()}", "-C", str(src)]
    commit = _output([*git, "rev-parse", "HEAD"]).strip()
    # --no-optional-locks: a read-only look, which must not rewrite the index.
    dirty = _output([*git, "--no-optional-locks", "status", "--porcelain", "--untracked-files=no"]).strip()
    return f"{commit}-dirty" if dirty else commit


def _output(argv: list[str], timeout: float = 120) -> str:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise TpccError(f"cannot run {argv[0]}: {exc}") from None
    if done.returncode != 0:
        raise TpccError(f"{shlex.join(argv)} exited {done.returncode}: {done.stderr.strip()[-500:]}")
    return done.stdout


def _tree_root(src: Path) -> Path:
    """The top of the tpcc-mysql tree: src, or the one directory in it (a tarball's top directory)."""
    if (src / "src" / "Makefile").is_file():
        return src
    children = [child for child in src.iterdir() if child.is_dir()] if src.is_dir() else []
    if len(children) == 1 and (children[0] / "src" / "Makefile").is_file():
        return children[0]
    raise TpccError(f"no tpcc-mysql source in {src}: expected src/Makefile there or in its only directory")


def build(src: Path, build_dir: Path) -> dict[str, Any]:
    """Build tpcc_load and tpcc_start from the source tree at src into build_dir.

    src may also hold the tree in its only directory, as a tarball unpacks. build_dir receives
    a copy of the tree (so the source, maybe a git checkout, stays clean) and the binaries at
    its top, beside create_table.sql and add_fkey_idx.sql. Upstream's Makefile counts on
    ``mysql_config --libs_r`` to bring the math library, which today's client libraries no
    longer list, so the link fails (undefined exp, log, floor): LIBS is given with -lrt -lm
    after the client library. The code is C89 (K&R declarations such as ``void Error();``,
    an implicit ``gettimeofday``), which GCC 14 and later refuse in their default dialect (sid's
    GCC 16 defaults to C23): CC asks for gnu89, which every GCC builds it with. A build of the
    same source is reused (``changed`` false).

    Returns src, bin_dir, tpcc_load, tpcc_start (paths as strings), commit (None unless src is
    a git work tree), source_sha256, libs, changed.
    """
    src, build_dir = _tree_root(src.resolve()), build_dir.resolve()
    record_path, marker = build_dir / "build.json", build_dir / _BUILD_MARKER
    if build_dir.exists() and any(build_dir.iterdir()) and not marker.exists():
        raise TpccError(f"{build_dir} holds files that no tpcc build put there: refusing to replace them")
    fingerprint = source_sha256(src)
    if record_path.is_file():
        record = json.loads(record_path.read_text())
        if record["source_sha256"] == fingerprint and all(Path(record[binary]).is_file() for binary in _BINARIES):
            return {**record, "changed": False}
    commit = git_commit(src)
    shutil.rmtree(build_dir, ignore_errors=True)
    shutil.copytree(src, build_dir, ignore=shutil.ignore_patterns(".git", "*.o", *_BINARIES))
    marker.touch()
    libs = f"{_output(['mysql_config', '--libs_r']).strip()} -lrt -lm"
    make = subprocess.run(["make", "-C", str(build_dir / "src"), f"CC={C_COMPILER}", f"LIBS={libs}"],
                          capture_output=True, text=True)
    (build_dir / "build.log").write_text(make.stdout + make.stderr)
    if make.returncode != 0:
        raise TpccError(f"make exited {make.returncode}; see {build_dir / 'build.log'}: {tail_text(make.stdout + make.stderr, 3)}")
    record = {
        "src": str(src), "bin_dir": str(build_dir), "tpcc_load": str(build_dir / "tpcc_load"),
        "tpcc_start": str(build_dir / "tpcc_start"), "commit": commit, "source_sha256": fingerprint, "libs": libs,
    }
    record_path.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    return {**record, "changed": True}


# ---------------------------------------------------------------- processes


class LoggedProcess:
    """A tool in its own session whose output reaches its log through this process, the password replaced.

    The tool never writes the log itself, so the password it echoes never reaches the disk.
    Its own session lets stop() end it with anything it started.
    """

    def __init__(self, argv: list[str], log: Path, secret: str, env: dict[str, str] | None = None):
        self.argv, self.log = argv, log
        try:
            self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True, env=env)
        except OSError as exc:
            raise TpccError(f"cannot run {argv[0]}: {exc}") from None
        self.copier = threading.Thread(target=self._copy, args=(secret,), daemon=True)
        self.copier.start()

    def _copy(self, secret: str) -> None:
        assert self.proc.stdout is not None
        with self.proc.stdout as raw, open(self.log, "w", encoding="utf-8", errors="replace") as out:
            for line in raw:
                out.write(redact(line.decode("utf-8", errors="replace"), secret))
                out.flush()

    def poll(self) -> int | None:
        """The exit status once the tool has ended and its log is complete, else None."""
        code = self.proc.poll()
        if code is not None:
            self.copier.join(timeout=_STOP_GRACE_S)
        return code

    def wait(self, timeout: float) -> int:
        """Wait for the tool to end; a TpccError (the tool stopped) if it takes longer than timeout."""
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            raise TpccError(f"{Path(self.argv[0]).name} did not finish within {timeout:.0f} s; see {self.log}") from None
        self.copier.join(timeout=_STOP_GRACE_S)
        return code

    def stop(self) -> None:
        """SIGTERM to the tool's session, then SIGKILL if it does not go."""
        for sig, grace in ((signal.SIGTERM, _STOP_GRACE_S), (signal.SIGKILL, _STOP_GRACE_S)):
            if self.proc.poll() is not None:
                break
            try:
                os.killpg(self.proc.pid, sig)
                self.proc.wait(timeout=grace)
            except ProcessLookupError:
                break
            except subprocess.TimeoutExpired:
                continue
        self.copier.join(timeout=_STOP_GRACE_S)


# ---------------------------------------------------------------- load


def warehouse_ranges(warehouses: int, count: int) -> list[tuple[int, int]]:
    """1..warehouses cut into min(count, warehouses) contiguous ranges whose sizes differ by at most one."""
    if warehouses < 1 or count < 1:
        raise ValueError(f"need at least one warehouse and one range, got {warehouses} and {count}")
    count = min(count, warehouses)
    size, larger = divmod(warehouses, count)
    ranges, first = [], 1
    for index in range(count):
        last = first + size - 1 + (index < larger)
        ranges.append((first, last))
        first = last + 1
    return ranges


def load_jobs(warehouses: int, jobs: int) -> list[LoadJob]:
    """The tpcc_load processes of a load with `jobs` running at a time, in the order to start them.

    Warehouses are cut into `jobs` ranges and every range loaded by one process per part, as
    tpcc-mysql's load.sh does; items (part 1) do not depend on warehouses and load once. The
    longest parts come first so that the processes left at the end are the short ones.
    """
    ranges = warehouse_ranges(warehouses, jobs)
    return [LoadJob(part, first, last) for part in _PART_ORDER for first, last in ranges] + [
        LoadJob(1, 1, warehouses)]


def _client_args(bin_dir: Path, tool: str, conn: Connection) -> list[str]:
    # -p even when empty: tpcc_load's password buffer is not initialised without it.
    return [str(bin_dir / tool), "-h", "localhost", "-d", conn.database, "-u", conn.user, "-p", conn.password]


def load_argv(bin_dir: Path, conn: Connection, warehouses: int, job: LoadJob) -> list[str]:
    """The tpcc_load command of one job; run it with load_env(conn)."""
    return [*_client_args(bin_dir, "tpcc_load", conn), "-w", str(warehouses), "-l", str(job.part),
            "-m", str(job.min_wh), "-n", str(job.max_wh)]


def load_env(conn: Connection) -> dict[str, str]:
    """tpcc_load has no socket option: the client library takes the socket from MYSQL_UNIX_PORT."""
    return dict(os.environ, MYSQL_UNIX_PORT=conn.socket)


def start_argv(bin_dir: Path, conn: Connection, warehouses: int, connections: int, rampup_s: int, duration_s: int,
               interval_s: int) -> list[str]:
    """The tpcc_start command of a trial (over the socket, -S).

    duration_s must be a multiple of interval_s: tpcc_start measures only whole intervals and
    would silently measure less.
    """
    if interval_s < 1 or duration_s < interval_s or duration_s % interval_s:
        raise ValueError(f"duration {duration_s} s must be a positive multiple of the interval {interval_s} s")
    return [*_client_args(bin_dir, "tpcc_start", conn), "-S", conn.socket, "-w", str(warehouses),
            "-c", str(connections), "-r", str(rampup_s), "-l", str(duration_s), "-i", str(interval_s)]


def _run_loaders(bin_dir: Path, conn: Connection, warehouses: int, jobs: int, log_dir: Path,
                 timeout_s: float) -> list[dict[str, Any]]:
    """Run every load job, `jobs` at a time; raise if one fails or time runs out, after ending the rest.

    Returns one record per job, in the order of load_jobs.
    """
    plan = load_jobs(warehouses, jobs)
    pending = list(plan)
    running: list[tuple[LoadJob, LoggedProcess, float]] = []
    finished: dict[LoadJob, dict[str, Any]] = {}
    failure: str | None = None
    deadline = time.monotonic() + timeout_s
    try:
        while (pending or running) and failure is None:
            while pending and len(running) < jobs:
                job = pending.pop(0)
                argv = load_argv(bin_dir, conn, warehouses, job)
                log = log_dir / f"tpcc_load-{job.name}.log"
                running.append((job, LoggedProcess(argv, log, conn.password, load_env(conn)), time.monotonic()))
            for entry in list(running):
                job, proc, began = entry
                code = proc.poll()
                if code is None:
                    continue
                running.remove(entry)
                finished[job] = _job_record(job, proc, code, began, conn)
                if code != 0:
                    failure = (f"tpcc_load {PARTS[job.part]}, warehouses {job.min_wh}-{job.max_wh}, exited {code}; "
                               f"see {proc.log}: {tail(proc.log, 3)}")
            if failure is None and running and time.monotonic() > deadline:
                failure = f"the load did not finish within {timeout_s:.0f} s; see the tpcc_load logs in {log_dir}"
            time.sleep(_POLL_S if running else 0)
    finally:
        for _, proc, _ in running:
            proc.stop()
    if failure:
        raise TpccError(failure)
    return [finished[job] for job in plan]


def _job_record(job: LoadJob, proc: LoggedProcess, code: int | None, began: float, conn: Connection) -> dict[str, Any]:
    # The log's name only: the directory is published under another name once the load is done.
    return {"part": job.part, "min_wh": job.min_wh, "max_wh": job.max_wh, "command": conn.shown(proc.argv),
            "log": proc.log.name, "exit": code, "seconds": round(time.monotonic() - began, 3)}


def row_counts(client: Callable[[str], str], database: str) -> dict[str, int]:
    """Rows in every tpcc table, and ``sum_ol_cnt``: the order lines the orders say they have."""
    selects = [f"SELECT '{table}', COUNT(*) FROM `{database}`.`{table}`" for table in _TABLES]
    selects.append(f"SELECT 'sum_ol_cnt', COALESCE(SUM(o_ol_cnt), 0) FROM `{database}`.`orders`")
    counts: dict[str, int] = {}
    for line in client("\nUNION ALL ".join(selects) + ";\n").splitlines():
        name, _, value = line.partition("\t")
        if value.strip().isdigit():
            counts[name] = int(value)
    return counts


def check_row_counts(counts: dict[str, int], warehouses: int) -> list[str]:
    """What is wrong with the row counts of a load of `warehouses`; empty when nothing is."""
    expected = {table: per * warehouses for table, per in _ROWS_PER_WAREHOUSE.items()}
    expected["item"] = _ITEMS
    problems = [f"{table}: {counts.get(table)} rows, expected {rows}"
                for table, rows in expected.items() if counts.get(table) != rows]
    order_lines = counts.get("order_line")
    low, high = (round(_ORDER_LINES_PER_WAREHOUSE * warehouses * (1 + sign * _ORDER_LINES_TOLERANCE)) for sign in (-1, 1))
    if order_lines is None or not low <= order_lines <= high:
        problems.append(f"order_line: {order_lines} rows, expected {low}-{high}")
    elif "sum_ol_cnt" in counts and counts["sum_ol_cnt"] != order_lines:
        problems.append(f"order_line: {order_lines} rows, but the orders list {counts['sum_ol_cnt']}")
    return problems


def _sql_file(bin_dir: Path, name: str, database: str) -> str:
    return f"USE `{database}`;\n" + (bin_dir / name).read_text()


def load(bin_dir: Path, conn: Connection, warehouses: int, jobs: int, log_dir: Path,
         client: Callable[[str], str], timeout_s: float) -> dict[str, Any]:
    """Create and fill the tpcc database for `warehouses` with `jobs` tpcc_load processes at a time.

    Creates the database and tables (create_table.sql), runs the load jobs (see load_jobs), each
    logging to log_dir/tpcc_load-<job>.log, waits for every one and fails if one fails (the
    others are stopped, every log is kept), adds keys and indexes (add_fkey_idx.sql) and checks
    the row counts. conn.user needs all privileges on conn.database; client runs SQL as an
    administrator and must allow the index step enough time (it reads every row).

    Returns warehouses, jobs, database, loaders (per job: part, min_wh, max_wh, command with the
    password replaced, log, exit, seconds), create_s, loaders_s, index_s, verify_s, load_s (the
    whole), warehouses_per_min (over load_s) and row_counts.
    """
    if warehouses < 1 or jobs < 1:
        raise ValueError(f"need at least one warehouse and one job, got {warehouses} and {jobs}")
    log_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    client(f"CREATE DATABASE IF NOT EXISTS `{conn.database}`;\n" + _sql_file(bin_dir, "create_table.sql", conn.database))
    created = time.monotonic()
    loaders = _run_loaders(bin_dir, conn, warehouses, jobs, log_dir, timeout_s)
    loaded = time.monotonic()
    client(_sql_file(bin_dir, "add_fkey_idx.sql", conn.database))
    indexed = time.monotonic()
    counts = row_counts(client, conn.database)
    problems = check_row_counts(counts, warehouses)
    if problems:
        raise TpccError("the loaded tables are incomplete: " + "; ".join(problems))
    ended = time.monotonic()
    return {
        "warehouses": warehouses, "jobs": jobs, "database": conn.database, "loaders": loaders,
        "create_s": round(created - started, 3), "loaders_s": round(loaded - created, 3),
        "index_s": round(indexed - loaded, 3), "verify_s": round(ended - indexed, 3),
        "load_s": round(ended - started, 3), "warehouses_per_min": round(warehouses * 60 / (ended - started), 3),
        "row_counts": counts,
    }
