"""What runs on the benchmark host during a trial: the server, the collectors, the clock.

Part of innomatrix_host: the standard library only.
Every process started here gets its own session, so that cleanup can end it and all its
children by process group, and so that a Ctrl-C aimed at ansible-playbook reaches this
code's `finally:` first instead of killing mysqld half-way through a write.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
import shutil
import signal
import subprocess
import tarfile
import threading
import time
from pathlib import Path
from typing import Callable

from . import cache_status
from .flush_points import FLUSH_TYPE_METRICS, METRIC_PREFIX


class TrialError(RuntimeError):
    """A reason a trial or a load could not finish; the message goes into trial.json."""


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def iso(moment: dt.datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def tail_text(text: str, lines: int = 5) -> str:
    """The last lines of a tool's output on one line, for a reason or an error."""
    return " | ".join(line.strip() for line in text.strip().splitlines()[-lines:])


def tail(path: Path, lines: int = 5) -> str:
    try:
        return tail_text(path.read_text(errors="replace"), lines)
    except OSError:
        return ""


def spawn(argv: list[str], log: Path, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.Popen:
    """Start a process in its own session, its output appended to `log`."""
    with open(log, "ab") as out:
        return subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, env=env, cwd=cwd)


def end(proc: subprocess.Popen | None, first: int = signal.SIGTERM, grace: float = 10.0) -> None:
    """Stop a process group: `first` signal, then SIGKILL after `grace` seconds."""
    if proc is None or proc.poll() is not None:
        return
    for sig, wait in ((first, grace), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def run(argv: list[str], timeout: float = 600, **kwargs) -> subprocess.CompletedProcess:
    """A short helper command that must succeed; its stderr becomes the reason if not."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kwargs)
    except subprocess.TimeoutExpired:
        raise TrialError(f"{argv[0]} did not finish within {timeout:.0f} s") from None
    except OSError as exc:
        raise TrialError(f"cannot run {argv[0]}: {exc}") from None
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise TrialError(f"{' '.join(argv[:2])} exited {done.returncode}: {detail[0]}")
    return done


def drop_caches() -> str:
    """Flush dirty pages and drop the page cache so no trial starts with the last one's cache."""
    os.sync()
    try:
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        return "dropped"
    except OSError as exc:
        # Unprivileged containers cannot; the trial still runs and says so.
        return f"not dropped: {exc.strerror}"


class Server:
    """One mysqld instance with its own defaults file, socket and port."""

    def __init__(self, commands: dict, cnf: Path, socket: str, log: Path):
        self.commands, self.cnf, self.socket, self.log = commands, cnf, socket, log
        self.proc: subprocess.Popen | None = None

    def session(self, timeout: float = 120) -> "Session":
        """A connection as root over the socket, opened on its first statement."""
        return Session(self.socket, timeout)

    def query(self, sql: str, args: tuple = (), timeout: float = 120) -> list[tuple]:
        """The rows of one statement, on a connection of its own (`timeout`: on each read, Session)."""
        with self.session(timeout) as session:
            return session.rows(sql, args)

    def script(self, sql: str, timeout: float = 120) -> str:
        """A SQL script (several statements, as a file holds them) through the command-line client
        as root over the socket, in batch mode; its output as the client prints it. The script goes
        through stdin, so `ps` never shows it."""
        argv = [self.commands["client"], f"--socket={self.socket}", "--user=root", "-N", "-B"]
        return run(argv, timeout=timeout, input=sql).stdout

    # The checkpoint ages at which InnoDB starts flushing ahead of the checkpoint (async) and makes
    # writers wait for it (sync), as the server computed them for its redo capacity: INNODB_METRICS
    # holds both on MySQL and the async one on MariaDB, whose sync point is Innodb_checkpoint_max_age.
    # The two counters are off by default; on, they are read from the log's state when queried and
    # cost the server nothing in between. Read once a trial: they change only with the capacity.
    FLUSH_POINTS_SQL = (
        "SET GLOBAL innodb_monitor_enable = 'log_max_modified_age_%'",
        "SELECT NAME, COUNT FROM information_schema.INNODB_METRICS WHERE NAME LIKE 'log\\_max\\_modified\\_age\\_%'",
        "SHOW GLOBAL STATUS LIKE 'Innodb\\_checkpoint\\_max\\_age'",
    )

    def flush_points(self) -> str:
        """`name TAB bytes` lines (innomatrix_host.flush_points reads them)."""
        with self.session() as session:
            return batch_text([row for sql in self.FLUSH_POINTS_SQL for row in session.rows(sql)])

    def count_flushes_by_type(self) -> None:
        """Switch on the INNODB_METRICS counters of pages written by flush type (StatusSampler reads
        them each second): off by default on MySQL, and counting only while on."""
        with self.session() as session:
            for name in FLUSH_TYPE_METRICS:
                session.rows("SET GLOBAL innodb_monitor_enable = %s", (name,))

    def grant_bench_user(self, credentials: dict) -> None:
        """The driver's account: its password set on every start, so a new secret never locks it out.
        The driver quotes the name and the password: any character is taken as itself."""
        user, password = credentials["user"], credentials["password"]
        with self.session() as session:
            session.rows("CREATE USER IF NOT EXISTS %s@'localhost' IDENTIFIED BY %s", (user, password))
            session.rows("ALTER USER %s@'localhost' IDENTIFIED BY %s", (user, password))
            session.rows("GRANT ALL ON sbtest.* TO %s@'localhost'", (user,))

    def initialize(self) -> None:
        run([part.replace("{cnf}", str(self.cnf)) for part in self.commands["install_db"]], timeout=600)

    def start(self, timeout: float = 300) -> None:
        self.proc = spawn([self.commands["server"], f"--defaults-file={self.cnf}"], self.log)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise TrialError(f"server exited {self.proc.returncode} while starting: {tail(self.log)}")
            ping = subprocess.run([self.commands["admin"], f"--socket={self.socket}", "--user=root", "ping"],
                                  capture_output=True, timeout=30)
            if ping.returncode == 0:
                return
            time.sleep(0.1)
        raise TrialError(f"server not answering on {self.socket} after {timeout:.0f} s: {tail(self.log)}")

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 600, hopeless: Callable[[], bool] | None = None) -> bool:
        """Clean shutdown through the server itself, then signals if it will not go; True if it
        shut down by itself.

        A server on a full filesystem can wait for space forever while shutting down, and the
        admin tool waits with it: neither may keep this from returning with the server gone.
        `hopeless()`, asked while waiting, says there is no point in waiting longer.
        """
        if not self.alive():
            return True
        try:
            subprocess.run([self.commands["admin"], f"--socket={self.socket}", "--user=root", "shutdown"],
                           capture_output=True, timeout=min(60.0, timeout), stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            pass
        deadline = time.monotonic() + timeout
        while self.alive() and time.monotonic() < deadline and not (hopeless and hopeless()):
            try:
                self.proc.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                pass
        if self.alive():
            end(self.proc, grace=30.0)
            return False
        return True


def batch_text(rows: list[tuple]) -> str:
    """Rows as the command-line client prints them in batch mode: a line a row, a tab between
    columns, NULL for none, and backslash, tab, newline and NUL escaped so that a row stays one
    line. variables.txt and flush_points.txt keep this form, so trees written before the driver
    read alike."""
    def cell(value: object) -> str:
        if value is None:
            return "NULL"
        return _text(value).replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\0", "\\0")
    return "".join("\t".join(cell(value) for value in row) + "\n" for row in rows)


def _driver():
    """mysqlclient, imported where the server is talked to: a host without a server (raw device
    I/O) needs no driver."""
    try:
        import MySQLdb
    except ImportError as exc:
        raise TrialError(f"the MySQL driver mysqlclient cannot be imported by this host's Python ({exc}): on a "
                         "remote host the collectors role installs python3-mysqldb; on localhost `make venv` "
                         "builds it") from None
    return MySQLdb


# Connecting is quick or it is not coming: a statement's long timeout (a full scan's) is not one
# to wait for a login.
CONNECT_TIMEOUT_S = 30


class Session:
    """One connection to the server through mysqlclient (MySQLdb, on the C client library): typed
    rows, the server's own error codes, and `timeout` on every read and write of the connection
    (a statement's answer that does not come within it ends the connection).

    Opened on the first statement and kept, so the status sampler pays for a connection once a
    trial, not once a second; any error closes it and the next statement connects again.
    Autocommit is on: nothing the host asks belongs in a transaction, and the driver's default
    would keep one open across statements.
    """

    def __init__(self, socket: str, timeout: float):
        self.socket, self.timeout = socket, timeout
        self.connection = None

    def rows(self, sql: str, args: tuple = ()) -> list[tuple]:
        """The rows `sql` returned (none for a statement that returns none); the driver quotes `args`
        into the `%s` in `sql` (with `args`, a literal % is written %%)."""
        driver = _driver()
        seconds = max(1, round(self.timeout))
        try:
            if self.connection is None:
                self.connection = driver.connect(unix_socket=self.socket, user="root", charset="utf8mb4",
                                                 autocommit=True, connect_timeout=min(seconds, CONNECT_TIMEOUT_S),
                                                 read_timeout=seconds, write_timeout=seconds)
            with self.connection.cursor() as cursor:
                cursor.execute(sql, args or None)
                return list(cursor.fetchall())
        except Exception as exc:  # the driver's errors, and what it raises beside them (a bad format, a row it cannot decode)
            self.close()
            raise TrialError(f"server on {self.socket}: {describe_error(exc)}") from None

    def close(self) -> None:
        if self.connection is not None:
            with contextlib.suppress(Exception):
                self.connection.close()
        self.connection = None

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


def describe_error(exc: Exception) -> str:
    """The driver's (code, message) as one line: `error 2013: Lost connection to server …`."""
    if len(exc.args) == 2 and isinstance(exc.args[0], int):
        return f"error {exc.args[0]}: {' '.join(str(exc.args[1]).split())}"
    return " ".join(str(exc).split()) or type(exc).__name__


def _text(value: object) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _counter(values: dict[str, int], name: object, value: object) -> None:
    """`name`'s value into `values` if it is a whole number the server wrote in digits."""
    text = _text(value)
    if text.isascii() and text.isdigit():  # "²" is a digit to str.isdigit, and no int
        values[_text(name)] = int(text)


class StatusSampler(threading.Thread):
    """SHOW GLOBAL STATUS every interval, and the flush-type counters of INNODB_METRICS, written as
    time-stamped deltas of the counters that moved.

    mysqladmin -r -i prints every variable as a table at every interval with no time stamp
    (about 65 KB/s): deltas with the wall-clock time are a hundredth of that and align with
    the driver's intervals. The first sample is written whole, as `absolute` rows. One
    connection asks every time (Session: a client per sample would cost the host more).
    """

    def __init__(self, server: "Server", path: Path, interval: int):
        super().__init__(daemon=True)
        self.server, self.path, self.interval = server, path, interval
        self.halt = threading.Event()
        self.session = server.session(timeout=max(5, 3 * interval))
        self.metrics_unread = ""

    # The flush-type counters the trial switched on (Server.count_flushes_by_type); those a server
    # has not on are not read (a line of zeros would say nothing was flushed).
    METRICS_SQL = ("SELECT NAME, COUNT FROM information_schema.INNODB_METRICS WHERE TIME_ENABLED IS NOT NULL "
                   f"AND TIME_DISABLED IS NULL AND NAME IN ({', '.join(['%s'] * len(FLUSH_TYPE_METRICS))})")

    def sample(self) -> dict[str, int]:
        """The integer counters and gauges; text and fractional values are not deltas. The flush-type
        counters are read after the status, and once they fail they are not asked again this trial
        (`metrics_unread` says why): the status sample stands without them."""
        values = {}
        for name, value in self.session.rows("SHOW GLOBAL STATUS"):
            _counter(values, name, value)
        if not self.metrics_unread:
            try:
                for name, value in self.session.rows(self.METRICS_SQL, FLUSH_TYPE_METRICS):
                    _counter(values, METRIC_PREFIX + _text(name), value)
            except TrialError as exc:
                self.metrics_unread = str(exc)
        return values

    def run(self) -> None:
        previous: dict[str, int] | None = None
        due = time.monotonic()
        try:
            with open(self.path, "w") as out:
                out.write("time\tvariable\tvalue\tkind\n")
                while not self.halt.wait(max(0.0, due - time.monotonic())):
                    due += self.interval
                    try:
                        values = self.sample()
                    except TrialError as exc:
                        out.write(f"{iso(utcnow())}\t#error\t{exc}\terror\n")
                        continue
                    stamp = iso(utcnow())
                    for name, value in values.items():
                        if previous is None:
                            out.write(f"{stamp}\t{name}\t{value}\tabsolute\n")
                        elif value != previous.get(name, value):
                            out.write(f"{stamp}\t{name}\t{value - previous[name]}\tdelta\n")
                    out.flush()
                    previous = values
        finally:
            self.session.close()

    def stop(self) -> None:
        self.halt.set()
        self.join(timeout=30)


class CacheReadError(RuntimeError):
    """The cache's status could not be read this time: one line."""


def cache_status_line(source: tuple[str, str], timeout: float,
                      runner: Callable[..., subprocess.CompletedProcess] | None = None) -> str:
    """The status of the cache under test as cache.log holds it (collected.cache_source says
    where): `dmsetup status --noflush` of a device-mapper cache, or a bcache device's sysfs in one
    line (cache_status.bcache_line). CacheReadError where it cannot be read. `runner` runs dmsetup
    instead of subprocess.run (the trial module's own, which raises on a failure)."""
    kind, name = source
    if kind == cache_status.BCACHE:
        folder = Path("/sys/block") / name / "bcache"
        try:
            return cache_status.bcache_line(lambda leaf: (folder / leaf).read_text())
        except OSError as exc:
            raise CacheReadError(f"{name}: {exc.strerror or exc} ({exc.filename})") from None
    # --noflush: without it dm-cache commits its metadata to the cache device at every status, a
    # write each second that the trial would then measure.
    argv = ["dmsetup", "status", "--noflush", name]
    if runner is not None:
        return " ".join(runner(argv, timeout=timeout).stdout.split())
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CacheReadError(" ".join(str(exc).split())) from None
    if done.returncode != 0:
        raise CacheReadError(f"dmsetup exited {done.returncode}: {' '.join(done.stderr.split())}")
    return " ".join(done.stdout.split())


class CacheSampler(threading.Thread):
    """A flash cache's own counters every interval (cache_status_line), written with the wall-clock
    time to cache.log (innomatrix_host.cache_status says how it reads). A failed read is a `#error`
    line for that second; the next one's growth spans the gap."""

    def __init__(self, source: tuple[str, str], path: Path, interval: int):
        super().__init__(daemon=True)
        self.source, self.path, self.interval = source, path, interval
        self.halt = threading.Event()

    def run(self) -> None:
        due = time.monotonic()
        with open(self.path, "w") as out:
            out.write(cache_status.HEADER + "\n")
            while not self.halt.wait(max(0.0, due - time.monotonic())):
                due += self.interval
                try:
                    line = cache_status_line(self.source, timeout=max(5, 3 * self.interval))
                except CacheReadError as exc:
                    line = f"{cache_status.ERROR_PREFIX}{str(exc)[:200]}"
                out.write(f"{iso(utcnow())}\t{line}\n")
                out.flush()

    def stop(self) -> None:
        self.halt.set()
        self.join(timeout=30)


class Collectors:
    """vmstat, iostat and server status beside the driver, at the report interval, on one clock;
    on a flash cache, the cache's own counters too.

    Without a server (the raw-device workload) there is no status to sample.
    """

    def __init__(self, out: Path, interval: int, devices: list[str], server: "Server | None",
                 cache: tuple[str, str] | None = None):
        """`devices`: the kernel's names iostat watches (collected.watched_devices); `cache`: where
        the cache under test says its counters (collected.cache_source), if any."""
        self.specs = {
            # -t puts the wall-clock time on every line: the analysis aligns by it.
            "vmstat.log": ["vmstat", "-n", "-t", str(interval)],
            "iostat.json": ["iostat", "-o", "JSON", "-t", "-x", "-k", *devices, str(interval)],
        }
        self.out = out
        self.procs: list[subprocess.Popen] = []
        self.status = StatusSampler(server, out / "status.log", interval) if server else None
        self.cache = CacheSampler(cache, out / "cache.log", interval) if cache else None

    def start(self) -> None:
        # C.UTF-8 and S_TIME_FORMAT=ISO keep iostat's and vmstat's time stamps in ISO form, TZ=UTC
        # on the driver's clock whatever the host's zone; INNOMATRIX_TRIAL names the trial, so a
        # stray collector can be traced to its cell.
        env = dict(os.environ, LC_ALL="C.UTF-8", S_TIME_FORMAT="ISO", TZ="UTC", INNOMATRIX_TRIAL=str(self.out))
        for name, argv in self.specs.items():
            self.procs.append(spawn(argv, self.out / name, env=env))
        for sampler in (self.status, self.cache):
            if sampler:
                sampler.start()

    def stop(self) -> None:
        # SIGINT lets iostat close its JSON document before it exits.
        for proc in self.procs:
            end(proc, first=signal.SIGINT, grace=5.0)
        for sampler in (self.status, self.cache):
            if sampler and sampler.is_alive():
                sampler.stop()


def restore(pristine: Path, datadir: Path) -> tuple[float, str]:
    """Replace the datadir with the pristine copy: a reflink where the filesystem can, else a copy."""
    started = time.monotonic()
    if datadir.exists():
        shutil.rmtree(datadir)
    reflink = subprocess.run(["cp", "-a", "--reflink=always", str(pristine), str(datadir)], capture_output=True)
    method = "reflink"
    if reflink.returncode != 0:
        if datadir.exists():
            shutil.rmtree(datadir)
        run(["cp", "-a", str(pristine), str(datadir)], timeout=7200)
        method = "copy"
    os.sync()
    return time.monotonic() - started, method


def staging(final: Path) -> Path:
    """An empty hidden sibling of `final` to fill, then publish(): a reader never sees half of it."""
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.with_name(f".{final.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    return tmp


def publish(tmp: Path, final: Path) -> str | None:
    """Move a finished directory into place atomically; an earlier one is kept beside it, renamed.

    The earlier one's name says what it was: its trial status, or `earlier` for a record
    that is not a trial (a dataset load).
    """
    kept = None
    if final.exists():
        status = "earlier"
        if (final / "trial.json").exists():
            try:
                status = json.loads((final / "trial.json").read_text()).get("status", "unknown")
            except (OSError, ValueError):
                status = "unreadable"
        stamp = utcnow().strftime("%Y%m%dT%H%M%SZ")
        aside = final.with_name(f"{final.name}.{status}-{stamp}")
        final.rename(aside)
        kept = aside.name
    tmp.rename(final)
    return kept


# --- bringing results home ----------------------------------------------------------------------
# A cell is written on the host, in its staging tree, then packed once, fetched by the controller
# over the connection (as the login user, never through become) and published there: the
# controller's tree is the one truth, the host's a cache.

HOME_ARCHIVE_MODE = 0o600


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def relative_results_path(text: str) -> Path:
    """A path under a results tree, as given: relative, without `..`; anything else is refused."""
    path = Path(text)
    if not text or path.is_absolute() or any(part in ("", ".", "..") for part in text.split("/")):
        raise TrialError(f"{text!r} is not a path inside a results tree")
    return path


def pack(root: Path, relative: str, outbox: Path, owner: str | None) -> dict:
    """The directory root/relative as a gzip tar in `outbox`, readable by `owner` only."""
    source = root / relative_results_path(relative)
    if not source.is_dir():
        raise TrialError(f"{source}: nothing to bring home (it was never written)")
    outbox.mkdir(mode=0o700, parents=True, exist_ok=True)
    if owner:
        shutil.chown(outbox, user=owner)
    # Named by the staging tree too: two runs may stage the same cell path at once.
    archive = outbox / f"{hashlib.sha256(str(root).encode()).hexdigest()[:8]}-{relative.replace('/', '__')}.tar.gz"
    partial = archive.with_name(f".{archive.name}.tmp-{os.getpid()}")
    with tarfile.open(partial, "w:gz") as tar:
        tar.add(source, arcname=source.name)
    partial.chmod(HOME_ARCHIVE_MODE)
    if owner:
        shutil.chown(partial, user=owner)
    partial.rename(archive)
    return {"archive": str(archive), "sha256": sha256_of(archive), "bytes": archive.stat().st_size}


def _safe_members(tar: tarfile.TarFile, name: str, archive: Path) -> list[tarfile.TarInfo]:
    """Every member, if each is a plain file or directory under `name`; else the archive is refused."""
    members = tar.getmembers()
    for member in members:
        inside = member.name == name or member.name.startswith(name + "/")
        if not inside or ".." in member.name.split("/") or not (member.isfile() or member.isdir()):
            raise TrialError(f"{archive}: refused: member {member.name!r} is not a file or directory under {name}")
    return members


def unpack(archive: Path, sha256: str, run_dir: Path, relative: str) -> str | None:
    """Verify a fetched archive and publish the directory it holds at run_dir/relative as the
    host did: atomically, an earlier one kept aside under a name it returns. The archive is
    removed once its directory is in place."""
    final = run_dir / relative_results_path(relative)
    found = sha256_of(archive)
    if found != sha256:
        raise TrialError(f"{archive}: checksum {found[:16]}… is not the host's {sha256[:16]}…: transfer damaged; rerun")
    final.parent.mkdir(parents=True, exist_ok=True)
    unpacked = final.with_name(f".{final.name}.home-{os.getpid()}")
    shutil.rmtree(unpacked, ignore_errors=True)
    unpacked.mkdir()
    try:
        with tarfile.open(archive, "r:gz") as tar:
            members = _safe_members(tar, final.name, archive)
            for member in members:
                member.mode &= 0o755 if member.isdir() else 0o644
            tar.extractall(unpacked, members=members)  # noqa: S202 - every member checked above
        received = unpacked / final.name
        if not received.is_dir():
            raise TrialError(f"{archive}: refused: it does not hold the directory {final.name}")
        kept = publish(received, final)
    except (tarfile.TarError, OSError) as exc:
        raise TrialError(f"{archive}: cannot unpack ({exc})") from None
    finally:
        shutil.rmtree(unpacked, ignore_errors=True)
    archive.unlink()
    return kept


def write_json(path: Path, data: dict) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def append_record(path: Path, first: dict, key: str, *entries: dict) -> dict:
    """Append `entries` to the list `key` of a JSON record (made from `first` if it does not exist),
    replacing the file atomically, so no earlier entry is ever lost; returns the record."""
    record = dict(first, **{key: []})
    if path.exists():
        try:
            record = json.loads(path.read_text())
        except ValueError as exc:
            raise TrialError(f"{path} is not valid JSON ({exc}); move it aside to start a new record") from None
    record.setdefault(key, []).extend(entries)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    write_json(tmp, record)
    tmp.rename(path)
    return record


def server_tmpdir(mountpoint: str, instance: dict) -> Path:
    """The server's tmpdir, empty, on the device under test.

    MySQL checks native AIO on its tmpdir and turns it off for the whole server where that
    filesystem lacks it (an overlay or tmpfs /tmp): a storage benchmark would then measure another
    I/O path than the one named. On the device, temporary tables land where the data are measured.
    """
    tmpdir = Path(mountpoint) / "tmp"
    shutil.rmtree(tmpdir, ignore_errors=True)
    tmpdir.mkdir(mode=0o750)
    shutil.chown(tmpdir, user=instance.get("user", "mysql"), group=instance.get("user", "mysql"))
    return tmpdir


def write_cnf(path: Path, options_text: str, instance: dict, datadir: Path, error_log: Path, tmpdir: Path) -> None:
    """The benchmark options, then this instance's own places: last in the section, so they win."""
    lines = [
        options_text.rstrip(),
        "",
        "# this instance (innomatrix): its own datadir, socket and port, never the packaged server's",
        f"datadir = {datadir}",
        f"tmpdir = {tmpdir}",
        f"socket = {instance['socket']}",
        f"port = {instance['port']}",
        f"bind_address = {instance.get('bind_address', '127.0.0.1')}",
        f"pid_file = {instance['socket']}.pid",
        f"log_error = {error_log}",
        f"user = {instance.get('user', 'mysql')}",
        "",
    ]
    path.write_text("\n".join(lines))


def bench_credentials(instance: dict) -> dict:
    """The driver's user and the password the controller generated (a 0600 file on this host)."""
    try:
        password = Path(instance["password_file"]).read_text().strip()
    except OSError as exc:
        raise TrialError(f"cannot read the benchmark password: {exc}") from None
    return {"user": instance["bench_user"], "password": password}


def write_driver_config(path: Path, socket: str, credentials: dict) -> None:
    """sysbench reads its credentials from a 0600 file: a password on its command line would show in ps."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(f"mysql-socket={socket}\nmysql-user={credentials['user']}\nmysql-password={credentials['password']}\n")


def sysbench_argv(oltp: dict, config_file: Path, threads: int, extra: list[str]) -> list[str]:
    """The OLTP driver's command, shared by the load and the trials so they cannot drift apart.

    Never --mysql-ignore-errors=all: sysbench 1.0.20 segfaults when the server dies under it.
    """
    return [
        "sysbench", "oltp_read_write", "--db-driver=mysql", f"--config-file={config_file}",
        "--mysql-db=sbtest", f"--tables={oltp['tables']}", f"--table-size={oltp['table_size']}",
        f"--threads={threads}", *extra,
    ]


def fileio_argv(options: dict, threads: int, extra: list[str]) -> list[str]:
    """sysbench fileio for one cell (run in the directory that holds the test files); the
    prepare step uses the same size and file count, so the files it made are the ones read."""
    return [
        "sysbench", "fileio", f"--file-total-size={options['total_size']}", f"--file-num={options['file_num']}",
        f"--file-block-size={options['block_bytes']}", f"--file-test-mode={options['mode']}",
        f"--file-io-mode={options['io_mode']}", f"--file-extra-flags={options['extra_flags']}",
        f"--file-fsync-freq={options['fsync_freq']}", f"--threads={threads}", *extra,
    ]
