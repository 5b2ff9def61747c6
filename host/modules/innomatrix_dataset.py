#!/usr/bin/python
"""Load a dataset once on the device under test and keep it as the pristine copy trials restore."""

from __future__ import annotations

DOCUMENTATION = r"""
module: innomatrix_dataset
short_description: Load an innomatrix dataset once and keep it pristine on the device under test
description:
  - Initialises a datadir, starts the server, runs sysbench prepare with parallel loaders, shuts
    the server down slowly (so the copy holds no pending purge or change-buffer work) and moves
    the datadir to C(pristine/<key>) on the same filesystem.
  - A pristine copy with a completion marker for the same key is reused; nothing is loaded.
  - For the fileio workload the "dataset" is sysbench fileio's test files, prepared once per
    filesystem without a server; trials read and write them in place.
options:
  dataset: {description: The dataset of the plan (key, workload, scale), type: dict, required: true}
  oltp: {description: sysbench OLTP options of the plan, type: dict, required: true}
  mountpoint: {description: Where the device under test is mounted, type: path, required: true}
  mycnf: {description: Rendered options the load runs with, type: str, required: true}
  server: {description: Server commands, flavor and version (mysql_server role facts), type: dict, required: true}
  instance: {description: Socket, port and bind address of the benchmarked instance, type: dict, required: true}
  log_dir: {description: Where the load's record and log go under results, type: path, required: true}
  loaders: {description: Parallel sysbench loaders (sysbench parallelises across tables), type: int, required: true}
  device: {description: The device under test, named when it runs out of space, type: str, required: true}
  bytes_needed: {description: The space the plan estimated for the dataset and its copies, type: int, required: true}
  tpcc_tool: {description: "tpcc-mysql as the tpcc role built it (bin_dir, commit); tpcc datasets only", type: dict, default: {}}
author: innomatrix
"""

import json
import os
import shlex
import shutil
import subprocess
import time
from pathlib import Path

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.innomatrix_host import tpcc_tool as tpcc
from ansible.module_utils.innomatrix_host.mounts import mark_started_processes
from ansible.module_utils.innomatrix_host.runtime import (
    Server, TrialError, bench_credentials, fileio_argv, iso, publish, server_tmpdir, staging, run, sysbench_argv, tail, utcnow,
    write_cnf, write_driver_config, write_json,
)

MARKER = ".innomatrix-dataset.json"
# SQL that reads every row (tpcc's keys, row counts): hours at the posts' scale.
FULL_SCAN_SQL_TIMEOUT_S = 24 * 3600
TPCC_LOAD_TIMEOUT_S = 48 * 3600
SLOW_SHUTDOWN_S = 3600
FAILED_LOAD_STOP_S = 60


# The options as Ansible checks them; DOCUMENTATION describes the same (tests/unit/test_module_docs.py).
ARGUMENT_SPEC = {
    "dataset": {"type": "dict", "required": True},
    "oltp": {"type": "dict", "required": True},
    "mountpoint": {"type": "path", "required": True},
    "mycnf": {"type": "str", "required": True},
    "server": {"type": "dict", "required": True},
    "instance": {"type": "dict", "required": True},
    "log_dir": {"type": "path", "required": True},
    "loaders": {"type": "int", "required": True},
    "device": {"type": "str", "required": True},
    "bytes_needed": {"type": "int", "required": True},
    "tpcc_tool": {"type": "dict", "default": {}},
}


def fill_oltp(p: dict, server: Server, log_dir: Path) -> dict:
    """sysbench prepare with parallel loaders (sysbench parallelises across tables)."""
    instance = p["instance"]
    loaders = max(1, min(p["loaders"], p["oltp"]["tables"]))
    credentials = bench_credentials(instance)
    driver_config = Path(instance["socket"] + ".sysbench")
    write_driver_config(driver_config, instance["socket"], credentials)
    argv = sysbench_argv(p["oltp"], driver_config, loaders, ["prepare"])
    server.query("CREATE DATABASE IF NOT EXISTS sbtest")
    server.grant_bench_user(credentials)
    with open(log_dir / "load.log", "w") as log:
        code = subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL).returncode
    if code != 0:
        raise TrialError(f"sysbench prepare exited {code}; see {log_dir / 'load.log'}")
    # A loader thread that fails prints FATAL while sysbench 1.0.20 may still exit 0 (seen on a
    # full device); the rows are counted as well.
    fatal = next((line for line in (log_dir / "load.log").read_text(errors="replace").splitlines()
                  if line.startswith("FATAL:")), None)
    if fatal:
        raise TrialError(f"sysbench prepare failed: {fatal[:300]}; see {log_dir / 'load.log'}")
    check_rows(server, p["oltp"])
    return {"loaders": loaders, "command": shlex.join(argv)}


def check_rows(server: Server, oltp: dict) -> None:
    """Every table holds table_size rows (a loader that died part-way leaves fewer)."""
    tables = [f"sbtest.sbtest{n}" for n in range(1, oltp["tables"] + 1)]
    sql = " UNION ALL ".join(f"SELECT '{table}', COUNT(*) FROM {table}" for table in tables)
    counts = dict(server.query(sql, timeout=FULL_SCAN_SQL_TIMEOUT_S))
    short = [f"{table} has {counts.get(table, 'no')} rows" for table in tables if counts.get(table) != oltp["table_size"]]
    if short:
        raise TrialError(f"sysbench prepare left {'; '.join(short)}, not {oltp['table_size']}")


def fill_tpcc(p: dict, server: Server, log_dir: Path) -> dict:
    """tpcc_load in parallel by warehouse ranges and parts, then keys, indexes and row counts.

    The tools connect as root over the socket (socket authentication): no password exists to
    leak into ps or into their echoed options.
    """
    tool, scale = p["tpcc_tool"], p["dataset"]["scale"]
    conn = tpcc.Connection(socket=p["instance"]["socket"], user="root")
    try:
        record = tpcc.load(Path(tool["bin_dir"]), conn, scale["warehouses"], p["loaders"], log_dir,
                           client=lambda sql: server.script(sql, timeout=FULL_SCAN_SQL_TIMEOUT_S),
                           timeout_s=TPCC_LOAD_TIMEOUT_S)
    except tpcc.TpccError as exc:
        raise TrialError(str(exc)) from None
    return {"loaders": record["jobs"], "command": [job["command"] for job in record["loaders"]], "tpcc": record,
            "tpcc_commit": tool.get("commit")}


def waiting_for_space(error_log: Path) -> bool:
    """The server says it waits for someone to free disk space (it would wait forever)."""
    try:
        with open(error_log, "rb") as log:
            log.seek(max(0, log.seek(0, os.SEEK_END) - 65536))
            return b"Waiting for someone to free space" in log.read()
    except OSError:
        return False


def load(p: dict, loading: Path, log_dir: Path) -> dict:
    """Create the datadir and fill it; returns the record kept beside the pristine copy."""
    instance = p["instance"]
    error_log = Path(instance["socket"] + ".err")
    # The server appends to its error log: an earlier load's "waiting for space" must not count.
    error_log.unlink(missing_ok=True)
    cnf = log_dir / "load-my.cnf"
    write_cnf(cnf, p["mycnf"], instance, loading, error_log, server_tmpdir(p["mountpoint"], instance))
    server = Server(p["server"], cnf, instance["socket"], log_dir / "load-mysqld.out")
    started = time.monotonic()
    server.initialize()
    run(["chown", "-R", f"{instance.get('user', 'mysql')}:", str(loading)])
    fill = fill_tpcc if p["dataset"]["workload"] == "tpcc" else fill_oltp
    filled = None
    try:
        server.start()
        filled = fill(p, server, log_dir)
        server.query("SET GLOBAL innodb_fast_shutdown = 0")
    finally:
        # A failed load is thrown away, and a server on a full device waits for space it will
        # never get: in neither case is there a reason to wait long for it.
        clean = server.stop(timeout=SLOW_SHUTDOWN_S if filled else FAILED_LOAD_STOP_S,
                            hopeless=lambda: waiting_for_space(error_log))
        if error_log.exists():
            shutil.copy(error_log, log_dir / "load-mysqld.err")
    if not clean:
        raise TrialError(f"the server did not shut down after the load and was killed, so the copy is not "
                         f"pristine: {tail(log_dir / 'load-mysqld.err')}")
    return {
        "key": p["dataset"]["key"],
        "workload": p["dataset"]["workload"],
        "scale": p["dataset"]["scale"],
        **filled,
        "server": {"flavor": p["server"]["flavor"], "version": p["server"]["version"]},
        "load_s": round(time.monotonic() - started, 3),
        "finished": iso(utcnow()),
    }


def prepare_files(p: dict, loading: Path, log_dir: Path) -> dict:
    """sysbench fileio prepare: the test files every fileio cell of this filesystem uses."""
    scale = p["dataset"]["scale"]
    # Only the size and the file count shape the files; mode and block size matter to the runs.
    options = {"total_size": scale["total_size"], "file_num": scale["file_num"], "block_bytes": 16384,
               "mode": "seqwr", "io_mode": "sync", "extra_flags": "direct", "fsync_freq": 0}
    argv = fileio_argv(options, 1, ["prepare"])
    loading.mkdir(parents=True)
    started = time.monotonic()
    with open(log_dir / "load.log", "w") as log:
        code = subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=loading).returncode
    if code != 0:
        raise TrialError(f"sysbench fileio prepare exited {code}; see {log_dir / 'load.log'}")
    os.sync()
    load_s = time.monotonic() - started
    return {
        "key": p["dataset"]["key"],
        "workload": "fileio",
        "scale": scale,
        "loaders": 1,
        "command": shlex.join(argv),
        "server": None,
        "load_s": round(load_s, 3),
        "mib_per_s": round(scale["total_size"] / 2**20 / max(load_s, 1e-6), 1),
        "finished": iso(utcnow()),
    }


def out_of_space(p: dict) -> str | None:
    """When a load fails on a full filesystem, say so first: which device, how much it needed."""
    fs = os.statvfs(p["mountpoint"])
    free, size = fs.f_bavail * fs.f_frsize, fs.f_blocks * fs.f_frsize
    if free > max(size // 50, 64 << 20):
        return None
    knobs = {"fileio": "fileio_total_size", "tpcc": "tpcc_warehouses"}.get(p["dataset"]["workload"],
                                                                          "oltp_tables, oltp_table_size")
    return (f"{p['device']} is full ({free / 2**20:.0f} MiB free of {size / 2**30:.1f} GiB on {p['mountpoint']}); "
            f"the matrix needs about {p['bytes_needed'] / 2**30:.1f} GiB: use a larger device or a smaller "
            f"dataset ({knobs}) — ")


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    mark_started_processes("dataset")
    p = module.params
    pristine = Path(p["mountpoint"]) / "pristine" / p["dataset"]["key"]
    marker = pristine / MARKER
    if marker.exists():
        record = json.loads(marker.read_text())
        module.exit_json(changed=False, pristine=str(pristine), reused=True, **record)
    if module.check_mode:
        module.exit_json(changed=True, pristine=str(pristine), msg="would load the dataset")

    # The load's record is written aside and published whole: a reload (the filesystem was
    # made again) keeps the earlier record beside the new one.
    log_dir = Path(p["log_dir"])
    tmp = staging(log_dir)
    loading = Path(p["mountpoint"]) / "loading"
    shutil.rmtree(loading, ignore_errors=True)
    try:
        record = (prepare_files if p["dataset"]["workload"] == "fileio" else load)(p, loading, tmp)
        pristine.parent.mkdir(exist_ok=True)
        shutil.rmtree(pristine, ignore_errors=True)
        loading.rename(pristine)
        # The marker is written last, on the device under test: where it fails the load is redone.
        write_json(marker, record)
    except (TrialError, OSError) as exc:
        module.fail_json(msg=f"{out_of_space(p) or ''}dataset {p['dataset']['key']} on {p['mountpoint']}: {exc}; logs in {tmp}")
    write_json(tmp / "dataset.json", record)
    kept = publish(tmp, log_dir)
    module.exit_json(changed=True, pristine=str(pristine), reused=False, kept_aside=kept, **record)


if __name__ == "__main__":
    main()
