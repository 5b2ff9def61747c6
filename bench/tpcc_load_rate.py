"""Figure for issue 6: tpcc-mysql load rate (warehouses per minute) with 1 loader against N.

Builds tpcc-mysql from TPCC_MYSQL_SRC into a temporary directory, starts a private MariaDB
(its own datadir and socket under /var/tmp, port 34992) and, for each --jobs value in turn,
drops the tpcc database and loads --warehouses with that many tpcc_load processes at a time
(host/innomatrix_host/tpcc_tool.py load(): create tables, loaders, keys and indexes, row-count
check). Rounds are interleaved (1,2,4,1,2,4 …) so that a busy moment on the machine does not
fall on one jobs value only. Prints one line per load, then the median per jobs value;
asserts nothing.

Server config: MariaDB's own defaults (10.11 on Debian 12: innodb_flush_log_at_trx_commit=1,
innodb_log_file_size=96M, doublewrite on) except innodb_buffer_pool_size=256M.

Needs root (mariadbd runs as mysql), MariaDB's server and client, make, a C compiler and
mysql_config, like tests/e2e/test_tpcc_tool.py, whose helpers it uses.

    TPCC_MYSQL_SRC=DIR .venv/bin/python bench/tpcc_load_rate.py [--warehouses 4] [--jobs 1,2,4]
        [--rounds 2] [--keep]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from innomatrix_host import runtime
from innomatrix_host import tpcc_tool as tool

from demo_matrix import MARIADB_COMMANDS  # beside this script

PORT = 34992
OPTIONS = "[mysqld]\ninnodb_buffer_pool_size = 256M\n"
LOAD_TIMEOUT_S = 3600


@contextlib.contextmanager
def private_server(base: Path) -> Iterator[object]:
    """A MariaDB of its own under base, root by unix_socket; stopped (by its PID if need be) on exit."""
    places = {name: base / name for name in ("data", "run")}
    for place in places.values():
        place.mkdir()
        shutil.chown(place, "mysql", "mysql")
    socket = str(places["run"] / "mysqld.sock")
    instance = {"socket": socket, "port": PORT}
    runtime.write_cnf(base / "my.cnf", OPTIONS, instance, places["data"], places["run"] / "mysqld.err",
                      runtime.server_tmpdir(str(base), instance))
    server = runtime.Server(MARIADB_COMMANDS, base / "my.cnf", socket, base / "mysqld.out")
    server.initialize()
    try:
        server.start()
        yield server
    finally:
        server.stop(timeout=120)
        runtime.end(server.proc)


def measure(server, bin_dir: Path, warehouses: int, jobs_values: list[int], rounds: int, logs: Path) -> list[dict]:
    """One load per jobs value per round, interleaved; a line printed as each ends."""
    client = functools.partial(server.script, timeout=LOAD_TIMEOUT_S)
    conn = tool.Connection(socket=server.socket, user="root")
    records = []
    print(f"{'round':>5}{'jobs':>5}{'load_s':>9}{'loaders_s':>11}{'index_s':>9}{'wh/min':>8}{'loadavg':>9}")
    for round_ in range(1, rounds + 1):
        for jobs in jobs_values:
            client(f"DROP DATABASE IF EXISTS `{conn.database}`;\n")
            load_average = os.getloadavg()[0]
            record = tool.load(bin_dir, conn, warehouses, jobs, logs / f"r{round_}-j{jobs}", client, LOAD_TIMEOUT_S)
            records.append(record)
            print(f"{round_:5}{jobs:5}{record['load_s']:9.1f}{record['loaders_s']:11.1f}{record['index_s']:9.1f}"
                  f"{record['warehouses_per_min']:8.2f}{load_average:9.2f}", flush=True)
    return records


def print_medians(records: list[dict], jobs_values: list[int]) -> None:
    print(f"median over {len(records) // len(jobs_values)} rounds:")
    first = None
    for jobs in jobs_values:
        mine = [r for r in records if r["jobs"] == jobs]
        median = {key: statistics.median(r[key] for r in mine)
                  for key in ("load_s", "loaders_s", "index_s", "warehouses_per_min")}
        first = first or median["warehouses_per_min"]
        print(f"  jobs {jobs}: load {median['load_s']:.1f} s (loaders {median['loaders_s']:.1f}, "
              f"index {median['index_s']:.1f}), {median['warehouses_per_min']:.2f} warehouses/min, "
              f"{median['warehouses_per_min'] / first:.2f}× jobs {jobs_values[0]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--warehouses", type=int, default=4)
    parser.add_argument("--jobs", default="1,2,4", help="comma-separated tpcc_load processes at a time")
    parser.add_argument("--rounds", type=int, default=2, help="loads per jobs value, interleaved")
    parser.add_argument("--keep", action="store_true", help="keep the build, datadir and logs; print where")
    args = parser.parse_args()
    jobs_values = [int(value) for value in args.jobs.split(",")]
    source = os.environ.get("TPCC_MYSQL_SRC")
    if not source:
        sys.exit("TPCC_MYSQL_SRC is not set: name a tpcc-mysql source tree (upstream is not reachable from CI)")
    if os.geteuid() != 0:
        sys.exit("run it as root: mariadbd runs as mysql in a datadir this script creates")
    # Not under /tmp's private dirs: mysqld runs as mysql and must reach its socket.
    base = Path(tempfile.mkdtemp(prefix="innomatrix-tpcc-load-rate-", dir="/var/tmp"))
    base.chmod(0o755)
    try:
        started = time.monotonic()
        built = tool.build(Path(source), base / "build")
        print(f"tpcc-mysql {built['commit'] or 'source ' + built['source_sha256'][:12]}, "
              f"built in {time.monotonic() - started:.0f} s")
        with private_server(base) as server:
            version = server.query("SELECT VERSION()")[0][0]
            print(f"MariaDB {version}, {OPTIONS.splitlines()[1]}, otherwise defaults; {args.warehouses} warehouses, "
                  f"{os.cpu_count()} CPUs, load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
            records = measure(server, Path(built["bin_dir"]), args.warehouses, jobs_values, args.rounds, base / "logs")
        print_medians(records, jobs_values)
        print(f"load average at the end: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    finally:
        if args.keep:
            print(f"kept {base}")
        else:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
