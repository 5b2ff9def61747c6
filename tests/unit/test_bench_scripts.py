"""Every bench script still runs: each answers --help (exit 0, its usage) without measuring
anything. The figures themselves are printed by running them (README, Benchmarks)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
# Modules the scripts share, not scripts.
SHARED = {"demo_matrix.py", "synth.py", "fuzz.py"}
SCRIPTS = sorted(path for path in BENCH.glob("*.py") if path.name not in SHARED)


def test_the_scripts() -> None:
    assert [path.name for path in SCRIPTS] == [
        "adaptive.py", "figures.py", "fixed_rate.py", "fuzz_report.py", "layouts.py", "report_memory.py", "report_speed.py",
        "sampler_cpu.py", "tpcc_load_rate.py", "verdicts.py",
    ]


@pytest.mark.parametrize("script", SCRIPTS, ids=[path.name for path in SCRIPTS])
def test_a_script_answers_help(script: Path) -> None:
    done = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() and "Traceback" not in done.stderr
