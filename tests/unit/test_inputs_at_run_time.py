"""Role inputs are checked when the roles run, not only by the tests that read the specs: Ansible
validates each entry point's argument spec before the entry point's first task, so a missing or
mistyped input stops the play before anything is installed or formatted.

Each case runs ansible-playbook itself, on localhost, against a device that does not exist: had the
check not stopped it, preflight would have refused that device (and changed nothing) anyway."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PLAYBOOK_BIN = Path(sys.executable).parent / "ansible-playbook"
NO_DEVICE = "/dev/innomatrix-no-such-device"


def play(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(PLAYBOOK_BIN), *args, "-e", f"ansible_python_interpreter={sys.executable}"],
        cwd=cwd, capture_output=True, text=True, check=False, timeout=300,
        env={**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_ROLES_PATH": str(ROOT / "roles"),
             "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_NOCOLOR": "1"})


def tasks_run(output: str) -> list[str]:
    return re.findall(r"^TASK \[(.*?)\]", output, flags=re.M)


def test_a_mistyped_knob_stops_the_matrix_at_preflights_argument_check(tmp_path: Path) -> None:
    done = play("matrix.yml", "-e", f"device={NO_DEVICE}", "-e", f"results_dir={tmp_path}", "-e", "repeats=many")
    assert done.returncode != 0
    assert re.search(r"argument 'repeats' is of type str found in 'preflight_knobs'.* unable to convert to int",
                     done.stdout + done.stderr)
    assert tasks_run(done.stdout) == ["preflight : Validating arguments against arg spec 'main' - "
                                      "Check the knobs and the device, make the demo device; in --check mode print the plan"]
    assert list(tmp_path.iterdir()) == []


def test_the_matrix_entered_without_preflight_stops_before_its_first_task(tmp_path: Path) -> None:
    """A playbook that enters a step of the matrix role without what preflight returns."""
    playbook = tmp_path / "passes-alone.yml"
    playbook.write_text(
        "- name: The matrix's passes without preflight\n  hosts: localhost\n  gather_facts: false\n  tasks:\n"
        "    - name: Passes\n      ansible.builtin.include_role:\n        name: matrix\n        tasks_from: passes\n")
    done = play(str(playbook), "-i", "localhost,", "-c", "local")
    assert done.returncode != 0
    assert re.search(r"missing required arguments: .*preflight_facts", done.stdout + done.stderr)
    assert [task for task in tasks_run(done.stdout) if not task.startswith(("Passes", "matrix : Validating"))] == []
