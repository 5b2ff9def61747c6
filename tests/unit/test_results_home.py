"""Bringing a cell home: packed on the host, checked and published on the controller (innomatrix_host.runtime)."""

from __future__ import annotations

import io
import json
import stat
import tarfile
from pathlib import Path

import pytest
from innomatrix_host import runtime

CELL = "db1/xfs/oltp/A/bp-64M/t4/r1"


def stage_cell(stage: Path, status: str = "ok") -> Path:
    cell = stage / CELL
    cell.mkdir(parents=True)
    (cell / "trial.json").write_text(json.dumps({"status": status, "key": "k"}))
    (cell / "driver.log").write_text("[ 1s ] thds: 4 tps: 100.00\n")
    return cell


def test_a_cell_arrives_whole_and_the_archive_is_gone(tmp_path: Path) -> None:
    stage_cell(tmp_path / "stage")
    packed = runtime.pack(tmp_path / "stage", CELL, tmp_path / "stage/.outbox", None)
    archive = Path(packed["archive"])
    assert stat.S_IMODE(archive.stat().st_mode) == 0o600 and packed["bytes"] == archive.stat().st_size
    assert stat.S_IMODE(archive.parent.stat().st_mode) == 0o700
    kept = runtime.unpack(archive, packed["sha256"], tmp_path / "home", CELL)
    assert kept is None and not archive.exists()
    home = tmp_path / "home" / CELL
    assert sorted(p.name for p in home.iterdir()) == ["driver.log", "trial.json"]
    assert (home / "driver.log").read_text() == (tmp_path / "stage" / CELL / "driver.log").read_text()
    # Nothing but the cell is left beside it (no temporary directory).
    assert [p.name for p in home.parent.iterdir()] == ["r1"]


def test_an_earlier_attempt_on_the_controller_is_kept_aside(tmp_path: Path) -> None:
    earlier = stage_cell(tmp_path / "home", status="failed")
    stage_cell(tmp_path / "stage")
    packed = runtime.pack(tmp_path / "stage", CELL, tmp_path / "outbox", None)
    kept = runtime.unpack(Path(packed["archive"]), packed["sha256"], tmp_path / "home", CELL)
    assert kept is not None and kept.startswith("r1.failed-")
    assert json.loads((earlier.parent / kept / "trial.json").read_text())["status"] == "failed"
    assert json.loads((earlier / "trial.json").read_text())["status"] == "ok"


def test_a_damaged_transfer_publishes_nothing(tmp_path: Path) -> None:
    stage_cell(tmp_path / "stage")
    packed = runtime.pack(tmp_path / "stage", CELL, tmp_path / "outbox", None)
    archive = Path(packed["archive"])
    archive.write_bytes(archive.read_bytes()[:-10])
    with pytest.raises(runtime.TrialError, match="transfer damaged"):
        runtime.unpack(archive, packed["sha256"], tmp_path / "home", CELL)
    assert not (tmp_path / "home").exists()


def _archive_with(tmp_path: Path, member: tarfile.TarInfo, data: bytes = b"") -> tuple[Path, str]:
    archive = tmp_path / "evil.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        cell = tarfile.TarInfo("r1")
        cell.type = tarfile.DIRTYPE
        tar.addfile(cell)
        tar.addfile(member, io.BytesIO(data))
    return archive, runtime.sha256_of(archive)


@pytest.mark.parametrize("name, kind", [
    ("r1/../../../escaped", tarfile.REGTYPE),
    ("elsewhere/trial.json", tarfile.REGTYPE),
    ("r1/link", tarfile.SYMTYPE),
    ("r1/device", tarfile.CHRTYPE),
])
def test_an_archive_with_anything_but_the_cell_is_refused_whole(tmp_path: Path, name: str, kind: bytes) -> None:
    member = tarfile.TarInfo(name)
    member.type = kind
    member.linkname = "/etc/passwd" if kind == tarfile.SYMTYPE else ""
    archive, sha256 = _archive_with(tmp_path, member)
    with pytest.raises(runtime.TrialError, match="refused"):
        runtime.unpack(archive, sha256, tmp_path / "home", CELL)
    assert not (tmp_path / "home" / CELL).exists() and not (tmp_path / "escaped").exists()
    assert list((tmp_path / "home" / CELL).parent.iterdir()) == []


@pytest.mark.parametrize("path", ["", "/etc", "db1/../../etc", "db1//x", "./db1"])
def test_a_path_outside_the_results_tree_is_refused(tmp_path: Path, path: str) -> None:
    with pytest.raises(runtime.TrialError, match="not a path inside a results tree"):
        runtime.pack(tmp_path, path, tmp_path / "outbox", None)


def test_a_cell_that_was_never_written_is_said_so(tmp_path: Path) -> None:
    with pytest.raises(runtime.TrialError, match="never written"):
        runtime.pack(tmp_path, CELL, tmp_path / "outbox", None)
