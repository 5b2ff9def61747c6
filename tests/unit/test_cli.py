"""Unit tests for innomatrix.cli: `innomatrix plan`, in-process and through the console script."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from innomatrix import cli, plan
from innomatrix_host import mycnf

ROOT = Path(__file__).resolve().parents[2]
GROUP_VARS = ROOT / "inventory" / "group_vars" / "all.yml"
DEMO = ROOT / "inventory" / "demo.yml"
CNF_DIR = ROOT / "my.cnf.d"
SCRIPT = ROOT / ".venv" / "bin" / "innomatrix"
G = 1 << 30


def context(host: str = "localhost", memory: int = 16 * G, device: str = "unknown", server: str = "not installed",
            driver: str = "not installed", flavor: str = "mariadb") -> plan.Context:
    return plan.Context(
        host=host,
        memory_bytes=memory,
        device_id=device,
        server_flavor=flavor,
        server_version=server,
        driver_version=driver,
        variant_digests={v: mycnf.variant_digest(str(CNF_DIR), v) for v in mycnf.variant_ids(str(CNF_DIR))},
    )


def group_vars(**changes: Any) -> dict[str, Any]:
    knobs = yaml.safe_load(GROUP_VARS.read_text())
    knobs.update(changes)
    return knobs


def expected_output(knobs: dict[str, Any], ctx: plan.Context, finished: dict | None = None) -> str:
    return "\n".join(plan.describe(plan.expand(knobs, ctx, finished or {}))) + "\n"


def write_trial(run: Path, cell_path: str, key: str, status: str) -> None:
    directory = run / cell_path
    directory.mkdir(parents=True)
    (directory / "trial.json").write_text(json.dumps({"key": key, "status": status}))


BASE_ARGS = ["plan", "--defaults", str(GROUP_VARS), "--memory", "16G"]


def test_plan_prints_one_line_per_cell_and_the_counts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [*BASE_ARGS, "--results", str(tmp_path), "--host", "db1", "--device-id", "nvme:S1",
            "--server-version", "10.11.19-MariaDB", "--driver-version", "sysbench 1.0.20",
            "-e", "filesystems=ext4", "-e", "variants=A,C", "-e", "bp_sizes=64M,1.5G"]
    assert cli.main(argv) == 0
    out, err = capsys.readouterr()
    assert err == ""
    ctx = context(host="db1", device="nvme:S1", server="10.11.19-MariaDB", driver="sysbench 1.0.20")
    knobs = group_vars(filesystems="ext4", variants="A,C", bp_sizes="64M,1.5G")
    assert out == expected_output(knobs, ctx)
    lines = out.splitlines()
    assert [line.split("  ")[0] for line in lines[:-1]] == [
        "db1/ext4/oltp/A/bp-64M/t32/r1",
        "db1/ext4/oltp/A/bp-1536M/t32/r1",
        "db1/ext4/oltp/C/bp-64M/t32/r1",
        "db1/ext4/oltp/C/bp-1536M/t32/r1",
    ]
    assert all(line.endswith("  todo") for line in lines[:-1])
    assert lines[-1] == "4 cells: 4 to run, 0 already finished"


def test_the_context_options_reach_the_keys(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [*BASE_ARGS, "--results", str(tmp_path), "-e", "filesystems=ext4", "-e", "variants=A"]
    assert cli.main(argv) == 0
    plain = capsys.readouterr().out
    assert plain == expected_output(group_vars(filesystems="ext4", variants="A"), context())
    assert cli.main([*argv, "--device-id", "other"]) == 0
    other = capsys.readouterr().out
    assert other.split("  ")[0] == plain.split("  ")[0]
    assert other.split("  ")[1] != plain.split("  ")[1]


def test_extra_vars_are_read_as_yaml(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [*BASE_ARGS, "--results", str(tmp_path), "-e", "filesystems=[xfs]", "-e", "variants=[B, A]",
            "-e", "threads=4", "-e", "repeats=2", "-e", "force=true",
            "-e", "mycnf_overrides={innodb_io_capacity: 2000}"]
    assert cli.main(argv) == 0
    knobs = group_vars(filesystems=["xfs"], variants=["B", "A"], threads=4, repeats=2, force=True,
                       mycnf_overrides={"innodb_io_capacity": 2000})
    out = capsys.readouterr().out
    assert out == expected_output(knobs, context())
    assert [line.split("  ")[0] for line in out.splitlines()[:-1]] == [
        "localhost/xfs/oltp/B/bp-4G/t4/r1",
        "localhost/xfs/oltp/A/bp-4G/t4/r1",
        "localhost/xfs/oltp/B/bp-4G/t4/r2",
        "localhost/xfs/oltp/A/bp-4G/t4/r2",
    ]


def test_extra_vars_from_a_file_and_the_run_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    knobs = group_vars(**yaml.safe_load(DEMO.read_text()))
    ctx = context()
    the_plan = plan.expand(knobs, ctx, {})
    first = the_plan["cells"][0]
    # results go to <results>/<run_name>: demo.yml names the run "demo".
    write_trial(tmp_path / "demo", first["path"], first["key"], "ok")
    write_trial(tmp_path / "main", the_plan["cells"][1]["path"], the_plan["cells"][1]["key"], "ok")
    assert cli.main([*BASE_ARGS, "--results", str(tmp_path), "-e", f"@{DEMO}"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert len(lines) == 9
    assert lines[0] == f"localhost/ext4/oltp/A/bp-16M/t4/r1  key={first['key']}  done"
    assert lines[1].endswith("  todo")
    assert lines[-1] == "8 cells: 7 to run, 1 already finished"
    assert out == expected_output(knobs, ctx, {first["path"]: {"key": first["key"], "status": "ok"}})


def test_later_extra_vars_win(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [*BASE_ARGS, "--results", str(tmp_path), "-e", f"@{DEMO}", "-e", "variants=D", "-e", "filesystems=xfs"]
    assert cli.main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("  ")[0] for line in lines[:-1]] == [
        "localhost/xfs/oltp/D/bp-16M/t4/r1",
        "localhost/xfs/oltp/D/bp-32M/t4/r1",
    ]


def test_the_results_dir_knob_is_relative_to_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    knobs = group_vars(filesystems="ext4", variants="A")
    cell = plan.expand(knobs, context(), {})["cells"][0]
    write_trial(tmp_path / "results" / "main", cell["path"], cell["key"], "ok")
    write_trial(tmp_path / "elsewhere" / "run2", cell["path"], "0000000000000000", "failed")
    argv = [*BASE_ARGS, "-e", "filesystems=ext4", "-e", "variants=A"]
    assert cli.main(argv) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "1 cells: 0 to run, 1 already finished"
    assert cli.main([*argv, "-e", "results_dir=elsewhere", "-e", "run_name=run2"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "1 cells: 1 to run, 0 already finished"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["-e", "threads=four"], "threads='four' is not a number; give a whole number above zero"),
        (["-e", "threads="], "threads is empty; give at least one thread count, e.g. threads=4,16"),
        (["-e", "filesystems=btrfs"], "filesystems: unknown btrfs; accepted: ext4, xfs"),
        (["-e", "variants=A,Z"], "variants: unknown Z; accepted: A, B, C, D"),
        (["-e", "warmup=-1"], "warmup=-1 must be a whole number of zero or more"),
        (["-e", "duration=0"], "duration=0 must be a whole number above zero"),
        (["-e", "bp_sizes=16G"],
         "bp_sizes: 16G is not smaller than the memory of localhost (16.0G); choose a smaller buffer pool"),
        (["-e", "mycnf_overrides={innodb_buffer_pool_size: 1G}"],
         "mycnf_overrides sets innodb_buffer_pool_size; use bp_sizes, which sweeps it"),
    ],
)
def test_a_bad_knob_is_one_line_on_stderr_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    assert cli.main([*BASE_ARGS, "--results", str(tmp_path), *extra]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == f"innomatrix: {message}\n"


def test_a_conflicting_finished_cell_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    knobs = group_vars(filesystems="ext4", variants="A")
    cell = plan.expand(knobs, context(), {})["cells"][0]
    write_trial(tmp_path / "main", cell["path"], cell["key"], "ok")
    argv = [*BASE_ARGS, "--results", str(tmp_path), "-e", "filesystems=ext4", "-e", "variants=A"]
    assert cli.main([*argv, "--server-version", "11.4.2-MariaDB"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"innomatrix: 1 finished cell(s) were measured with other inputs (first: {cell['path']} "
                          f"has key {cell['key']}, the plan gives ")
    assert "run_name" in err and "force=true" in err and err.count("\n") == 1
    assert cli.main([*argv, "--server-version", "11.4.2-MariaDB", "-e", "force=true"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "1 cells: 1 to run, 0 already finished"


def test_an_extra_var_without_a_value_is_refused() -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main([*BASE_ARGS, "-e", "threads"])
    assert exc.value.code == "innomatrix: -e 'threads': expected key=value or @file.yml"


def test_a_subcommand_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main([])
    assert exc.value.code == 2
    assert "the following arguments are required: command" in capsys.readouterr().err


def test_memory_defaults_to_this_machines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    meminfo = Path("/proc/meminfo")
    if not meminfo.is_file():
        pytest.skip("no /proc/meminfo")
    total = next(int(line.split()[1]) * 1024 for line in meminfo.read_text().splitlines()
                 if line.startswith("MemTotal:"))
    assert cli._memory_bytes() == total
    argv = ["plan", "--defaults", str(GROUP_VARS), "--results", str(tmp_path), "-e", "filesystems=ext4",
            "-e", "variants=A", "-e", f"bp_sizes={total}"]
    assert cli.main(argv) == 2
    memory = f"{total / (1 << 30):.1f}G"
    assert capsys.readouterr().err == (
        f"innomatrix: bp_sizes: {total} is not smaller than the memory of localhost ({memory}); "
        "choose a smaller buffer pool\n"
    )


def test_plan_of_a_damaged_run_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "main" / "db1" / "ext4"
    run.mkdir(parents=True)
    (run / "oltp").symlink_to("/etc")
    argv = [*BASE_ARGS, "--results", str(tmp_path), "--host", "db1", "-e", "filesystems=ext4"]
    assert cli.main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("innomatrix: ") and "symlink" in err and err.count("\n") == 1


def test_plan_without_defaults_uses_the_documented_knobs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["plan", "--memory", "64G", "--results", str(tmp_path)]) == 0
    assert capsys.readouterr().out == expected_output(group_vars(), context(memory=64 * G))


@pytest.mark.parametrize("extra", [["--memory", "lots"], ["--cnf-dir", "EMPTY"]])
def test_bad_options_are_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str]
) -> None:
    extra = [str(tmp_path) if part == "EMPTY" else part for part in extra]
    argv = ["plan", "--defaults", str(GROUP_VARS), "--memory", "16G", "--results", str(tmp_path), *extra]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("innomatrix: ") and err.count("\n") == 1


# ---------------------------------------------------------------- the installed console script


def run_script(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    if not os.access(SCRIPT, os.X_OK):
        pytest.skip(f"{SCRIPT} is not installed")
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, cwd=cwd, timeout=30, check=False,
                          env={**os.environ, **(env or {})})


def test_console_script_prints_the_plan(tmp_path: Path) -> None:
    done = run_script(*BASE_ARGS, "--results", str(tmp_path), "-e", f"@{DEMO}", "--host", "db1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    lines = done.stdout.splitlines()
    cells = [line.split("  ") for line in lines[:-1]]
    assert [c[0] for c in cells] == [
        f"db1/{fs}/oltp/{variant}/bp-{bp}/t4/r1"
        for fs in ("ext4", "xfs") for variant in ("A", "C") for bp in ("16M", "32M")
    ]
    assert all(len(c) == 3 and c[2] == "todo" for c in cells)
    assert all(c[1].startswith("key=") and len(c[1]) == 20 and int(c[1][4:], 16) >= 0 for c in cells)
    assert len({c[1] for c in cells}) == 8
    assert lines[-1] == "8 cells: 8 to run, 0 already finished"
    # another process, the same plan: keys do not depend on the process (PYTHONHASHSEED)
    knobs = group_vars(**yaml.safe_load(DEMO.read_text()))
    assert done.stdout == expected_output(knobs, context(host="db1"))


def test_console_script_refuses_a_bad_knob(tmp_path: Path) -> None:
    done = run_script(*BASE_ARGS, "--results", str(tmp_path), "-e", "duration=0", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == "innomatrix: duration=0 must be a whole number above zero\n"


def test_console_script_gives_the_same_keys_in_every_process(tmp_path: Path) -> None:
    """Keys hash the translation rules too; sets among them must not make the hash depend on the process."""
    argv = [*BASE_ARGS, "--results", str(tmp_path), "-e", f"@{DEMO}"]
    runs = [run_script(*argv, cwd=tmp_path, env={"PYTHONHASHSEED": seed}) for seed in ("1", "2")]
    assert [(r.returncode, r.stderr) for r in runs] == [(0, ""), (0, "")]
    assert len(runs[0].stdout.splitlines()) == 9
    assert runs[0].stdout == runs[1].stdout


def test_a_run_resumes_in_a_new_process(tmp_path: Path) -> None:
    """A cell recorded ok with the key one process printed is done in the next process, not a conflict."""
    argv = [*BASE_ARGS, "--results", str(tmp_path), "-e", "filesystems=ext4", "-e", "variants=A"]
    first = run_script(*argv, cwd=tmp_path, env={"PYTHONHASHSEED": "1"})
    path, key, state = first.stdout.splitlines()[0].split("  ")
    assert (path, state) == ("localhost/ext4/oltp/A/bp-4G/t32/r1", "todo")
    write_trial(tmp_path / "main", path, key.removeprefix("key="), "ok")
    second = run_script(*argv, cwd=tmp_path, env={"PYTHONHASHSEED": "2"})
    assert second.returncode == 0, second.stderr
    assert second.stdout.splitlines() == [f"{path}  {key}  done", "1 cells: 0 to run, 1 already finished"]
