"""What the status sampler costs the host it measures, per sample (issue #33: under 1 % of a core).

Starts a throwaway server of the kind given (its own datadir, socket and no network, under a
temporary directory), then takes SAMPLES samples back to back with the suite's own sampler
(innomatrix_host.runtime.StatusSampler.sample: one connection through mysqlclient, SHOW GLOBAL STATUS
and the flush-type counters of INNODB_METRICS, their rows read), and prints the CPU each sample took
in the sampler's thread (thread_time: the driver and its client library work there: no client
process is left) and in the server (its /proc times, less those of an idle stretch as long), and
what that is at one sample a second, in % of one core.

    python3 bench/sampler_cpu.py mariadb     # MariaDB of this machine (Debian 12: 10.11)
    python3 bench/sampler_cpu.py mysql       # in the trixie-mysql image (MySQL 9.7), e.g.
        podman run --rm --ulimit nofile=16384:16384 --ulimit nproc=16384:16384 -v "$PWD:/src:ro" \\
            localhost/innomatrix-molecule:trixie-mysql python3 /src/bench/sampler_cpu.py mysql

Prints the figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "host"))
from innomatrix_host.runtime import Server, StatusSampler  # noqa: E402

SAMPLES = 1000
TICKS = os.sysconf("SC_CLK_TCK")
KINDS = {
    "mariadb": {"server": "mariadbd", "client": "mariadb", "admin": "mariadb-admin",
                "install": ["mariadb-install-db", "--no-defaults", "--user=mysql", "--datadir={data}"]},
    "mysql": {"server": "mysqld", "client": "mysql", "admin": "mysqladmin",
              "install": ["mysqld", "--no-defaults", "--user=mysql", "--datadir={data}", "--initialize-insecure"]},
}


def cpu_s(pid: int) -> float:
    """utime + stime of a process, seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def measure(kind: str, base: Path) -> None:
    commands = KINDS[kind]
    data, socket, cnf = base / "data", str(base / "s.sock"), base / "my.cnf"
    shutil.chown(base, "mysql", "mysql")
    subprocess.run([part.format(data=data) for part in commands["install"]], check=True, capture_output=True)
    cnf.write_text(f"[mysqld]\nuser=mysql\ndatadir={data}\nsocket={socket}\nskip-networking\n"
                   f"log-error={base / 'err.log'}\ninnodb_buffer_pool_size=64M\n")
    server = Server({"server": commands["server"], "client": commands["client"], "admin": commands["admin"]},
                    cnf, socket, base / "mysqld.out")
    server.start()
    try:
        server.count_flushes_by_type()  # as a trial does: the sampler reads them too
        sampler = StatusSampler(server, base / "status.log", 1)
        sampler.sample()  # the connection opens: its login is once a trial
        server_pid = server.proc.pid
        idle_from = cpu_s(server_pid)
        time.sleep(2.0)
        idle_per_s = (cpu_s(server_pid) - idle_from) / 2.0
        thread: dict[str, float] = {}

        def run() -> None:
            start = time.thread_time()
            for _ in range(SAMPLES):
                sampler.sample()
            thread["s"] = time.thread_time() - start
        server_from, wall = cpu_s(server_pid), time.monotonic()
        worker = threading.Thread(target=run)
        worker.start()
        worker.join()
        wall = time.monotonic() - wall
        server_s = cpu_s(server_pid) - server_from - idle_per_s * wall
        version = server.query("SELECT VERSION()")[0][0]
        sampler.session.close()
    finally:
        server.stop()
    per = {"sampler thread": thread["s"], "server (less idle)": server_s}
    print(f"{kind} {version}: {SAMPLES} samples of SHOW GLOBAL STATUS in {wall:.2f} s")
    for what, seconds in per.items():
        ms = 1000 * seconds / SAMPLES
        print(f"  {what:20s} {ms:6.3f} ms CPU a sample = {ms / 10:.3f} % of a core at one sample a second")
    total = 1000 * sum(per.values()) / SAMPLES
    print(f"  {'together':20s} {total:6.3f} ms CPU a sample = {total / 10:.3f} % of a core at one sample a second")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=sorted(KINDS))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="innomatrix-sampler-") as base:
        measure(args.kind, Path(base))


if __name__ == "__main__":
    main()
