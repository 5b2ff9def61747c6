"""SSD wear and health from smartctl and nvme-cli JSON, read before and after a run.

The lifespan post read Intel's Media_Wearout_Indicator and Available_Reservd_Space
(NVMe: percentage_used, data_units_written) before and after a workload to see
the wear it caused; wear() and nvme_wear() pull those readings out and delta()
subtracts two of them.

Part of innomatrix_host (the standard library only, run by the target's
plain python3). snapshot() never raises:
a device without SMART (a loop device, a virtio disk) or a host without
smartctl must leave a note, not fail the benchmark.
"""

# Postponed annotations keep the ``X | None`` hints importable on hosts whose
# Python is older than the controller's.
from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Callable
from typing import Any

# NVMe counts data units of 1000 x 512 bytes (NVMe base spec, SMART / Health
# Information log page).
NVME_DATA_UNIT_BYTES = 512_000

# smartctl's exit status is a bit mask (smartctl(8), EXIT STATUS). Bits 0 and
# 1 mean it never got to talk to the device: the command line did not parse
# (which is also how it reports "Unable to detect device type") or the device
# did not open or identify itself.
_SMARTCTL_NO_DEVICE = (1 << 0) | (1 << 1)
# The remaining bits are findings about a device it did read.
_SMARTCTL_FINDINGS = {
    1 << 2: "a SMART or other device command failed",
    1 << 3: "SMART status check returned DISK FAILING",
    1 << 4: "prefail attributes are at or below threshold",
    1 << 5: "some attributes were at or below threshold in the past",
    1 << 6: "the device error log contains errors",
    1 << 7: "the self-test log contains errors",
}

# Any of these in smartctl's output means it did read the device's health.
_HEALTH_SECTIONS = ("smart_status", "ata_smart_attributes", "nvme_smart_health_information_log")

# A device that hangs must not hold the benchmark forever.
_COMMAND_TIMEOUT_S = 60

# ATA attributes that show wear or its precursors, by smartctl's drivedb
# names. Each is recorded twice: the normalized VALUE column under the
# lowercased name (Media_Wearout_Indicator counts down from 100 to 1) and the
# raw counter under <name>_raw (Host_Writes_32MiB counts 32 MiB units).
_ATA_WEAR_ATTRIBUTES = frozenset(
    {
        "Media_Wearout_Indicator",  # Intel
        "Available_Reservd_Space",  # Intel (smartctl's spelling)
        "Wear_Leveling_Count",  # Samsung and others
        "Percent_Lifetime_Remain",  # Micron / Crucial
        "SSD_Life_Left",  # SandForce-based drives
        "Reallocated_Sector_Ct",
        "Program_Fail_Count",
        "Erase_Fail_Count",
        "Total_LBAs_Written",
    }
)
# Write counters come in vendor units: Host_Writes_32MiB, Host_Writes_GiB,
# NAND_Writes_1GiB ...
_ATA_WEAR_PREFIXES = ("Host_Writes_", "NAND_Writes_")

# The NVMe SMART / Health log fields worth keeping, by smartctl's JSON name.
# nvme-cli names some of them differently; the value is its name.
_NVME_FIELDS = {
    "critical_warning": "critical_warning",
    "percentage_used": "percent_used",
    "available_spare": "avail_spare",
    "available_spare_threshold": "spare_thresh",
    "data_units_read": "data_units_read",
    "data_units_written": "data_units_written",
    "media_errors": "media_errors",
    "num_err_log_entries": "num_err_log_entries",
    "unsafe_shutdowns": "unsafe_shutdowns",
    "power_on_hours": "power_on_hours",
    "power_cycles": "power_cycles",
}

# nvme-cli 2.3 prints 128-bit counters as JSON strings, with the locale's
# thousands separator ("296,417,245" under en_US).
_GROUPED_INT_RE = re.compile(r"\d{1,3}(?:,\d{3})+|\d+")


def _number(value: Any) -> int | float | None:
    """A JSON number, or a counter nvme-cli printed as a string; None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str) and _GROUPED_INT_RE.fullmatch(value.strip()):
        return int(value.replace(",", ""))
    return None


def _section(document: dict[str, Any], key: str) -> dict[str, Any]:
    """A nested JSON object, or an empty one when absent or of another type."""
    value = document.get(key)
    return value if isinstance(value, dict) else {}


def _ata_wear(table: list[Any]) -> dict[str, int | float]:
    """Wear attributes from smartctl's ata_smart_attributes table.

    Some drives list an attribute twice (Intel DC S3700: Available_Reservd_Space
    as 170 and 232); the first, lowest id, is kept so every snapshot of the
    drive picks the same one.
    """
    readings: dict[str, int | float] = {}
    for attribute in table:
        if not isinstance(attribute, dict):
            continue
        name = attribute.get("name")
        if not isinstance(name, str):
            continue
        if name not in _ATA_WEAR_ATTRIBUTES and not name.startswith(_ATA_WEAR_PREFIXES):
            continue
        key = name.lower()
        if key in readings or f"{key}_raw" in readings:
            continue
        normalized = _number(attribute.get("value"))
        raw = _number(_section(attribute, "raw").get("value"))
        if normalized is not None:
            readings[key] = normalized
        if raw is not None:
            readings[f"{key}_raw"] = raw
    return readings


def _nvme_readings(log: dict[str, Any], names: dict[str, str]) -> dict[str, int | float]:
    """NVMe health fields under smartctl's names, plus data units in bytes."""
    readings: dict[str, int | float] = {}
    for key, source in names.items():
        value = _number(log.get(source))
        if value is not None:
            readings[key] = value
    for direction in ("read", "written"):
        units = readings.get(f"data_units_{direction}")
        if units is not None:
            readings[f"data_units_{direction}_bytes"] = units * NVME_DATA_UNIT_BYTES
    return readings


def wear(smartctl: dict[str, Any]) -> dict[str, Any]:
    """Identity, health and wear readings from ``smartctl -j -a`` output.

    model, serial, firmware, protocol ("ATA", "NVMe", "SCSI"), smart_passed,
    temperature_c, power_on_hours and power_cycles are always present (None
    when smartctl did not report them). ATA drives add the wear attributes
    they have (see _ATA_WEAR_ATTRIBUTES); NVMe drives add percentage_used,
    available_spare, available_spare_threshold, critical_warning,
    data_units_read/_written (and *_bytes), media_errors,
    num_err_log_entries and unsafe_shutdowns. SAS drives add
    percentage_used and scsi_grown_defect_list when they report them.
    """
    readings: dict[str, Any] = {
        "model": smartctl.get("model_name"),
        "serial": smartctl.get("serial_number"),
        "firmware": smartctl.get("firmware_version"),
        "protocol": _section(smartctl, "device").get("protocol"),
        "smart_passed": _section(smartctl, "smart_status").get("passed"),
        "temperature_c": _number(_section(smartctl, "temperature").get("current")),
        "power_on_hours": _number(_section(smartctl, "power_on_time").get("hours")),
        "power_cycles": _number(smartctl.get("power_cycle_count")),
    }
    table = _section(smartctl, "ata_smart_attributes").get("table")
    readings.update(_ata_wear(table if isinstance(table, list) else []))
    nvme_log = _section(smartctl, "nvme_smart_health_information_log")
    for key, value in _nvme_readings(nvme_log, {key: key for key in _NVME_FIELDS}).items():
        # smartctl leaves the top-level copies out when a counter is too big
        # for JSON's safe integers; the log always has them.
        if readings.get(key) is None:
            readings[key] = value
    # SAS SSDs (the Intel 910 of the posts) report wear in a SCSI log page;
    # smartctl 7.4 and later also copy any device's into endurance_used.
    if "percentage_used" not in readings:
        percentage = _number(smartctl.get("scsi_percentage_used_endurance_indicator"))
        if percentage is None:
            percentage = _number(_section(smartctl, "endurance_used").get("current_percent"))
        if percentage is not None:
            readings["percentage_used"] = percentage
    grown_defects = _number(smartctl.get("scsi_grown_defect_list"))
    if grown_defects is not None:
        readings["scsi_grown_defect_list"] = grown_defects
    return readings


def nvme_wear(smart_log: dict[str, Any]) -> dict[str, Any]:
    """The NVMe readings of wear(), from ``nvme smart-log -o json`` instead.

    Keys are smartctl's names, so the two sources compare directly. nvme-cli
    reports temperature in kelvin; temperature_c converts it the way smartctl
    does (K - 273). There is no model or serial in a smart-log.
    """
    readings: dict[str, Any] = dict(_nvme_readings(smart_log, _NVME_FIELDS))
    kelvin = _number(smart_log.get("temperature"))
    readings["temperature_c"] = None if kelvin is None else kelvin - 273
    return readings


def delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, int | float]:
    """after - before for every numeric reading both have that changed.

    Works on wear() or nvme_wear() results. Raises ValueError when both
    name a serial number and they differ: the wear of two devices does not
    subtract.
    """
    serials = (before.get("serial"), after.get("serial"))
    if None not in serials and serials[0] != serials[1]:
        raise ValueError(f"readings are from different devices: serial {serials[0]} vs {serials[1]}")
    changes: dict[str, int | float] = {}
    for key, old in before.items():
        new = after.get(key)
        if isinstance(old, bool) or isinstance(new, bool):
            continue
        if isinstance(old, (int, float)) and isinstance(new, (int, float)) and new != old:
            changes[key] = new - old
    return changes


def snapshot_delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any] | None:
    """What changed between two snapshot() results: {"smartctl": …, "nvme_cli": …} deltas, None
    unless both readings are ok, or {"error": …} when another device answered under the name."""
    if before.get("status") != "ok" or after.get("status") != "ok":
        return None
    try:
        changes: dict[str, Any] = {"smartctl": delta(before["wear"], after["wear"])}
        nvme_before, nvme_after = before.get("nvme_cli") or {}, after.get("nvme_cli") or {}
        if nvme_before.get("status") == nvme_after.get("status") == "ok":
            changes["nvme_cli"] = delta(nvme_before["wear"], nvme_after["wear"])
    except ValueError as exc:
        return {"error": str(exc)}
    return changes


def _one_line(text: str) -> str:
    """The first non-blank line, so a reason fits in one table cell."""
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def _run_json(
    command: list[str], run: Callable[..., subprocess.CompletedProcess[str]]
) -> tuple[dict[str, Any] | None, int, str]:
    """Run a tool that prints JSON: (parsed output or None, exit status, problem).

    problem is "" when the tool ran and printed a JSON object. The C locale
    keeps nvme-cli from grouping digits with the user's separator.
    """
    tool = command[0]
    try:
        completed = run(
            command,
            capture_output=True,
            text=True,
            errors="replace",  # a byte the locale cannot decode is no reason to raise
            timeout=_COMMAND_TIMEOUT_S,
            check=False,
            env={**os.environ, "LC_ALL": "C"},
        )
    except FileNotFoundError:
        return None, -1, f"{tool} is not installed"
    except subprocess.TimeoutExpired:
        return None, -1, f"{tool} did not answer within {_COMMAND_TIMEOUT_S} s"
    except OSError as exc:
        return None, -1, f"{tool} could not be run: {exc}"
    if completed.returncode < 0:
        return None, completed.returncode, f"{tool} was killed by signal {-completed.returncode}"
    try:
        output = json.loads(completed.stdout)
    except ValueError:
        output = None
    if not isinstance(output, dict):
        detail = _one_line(completed.stderr or "") or _one_line(completed.stdout or "")
        problem = f"{tool} printed no JSON object (exit status {completed.returncode})"
        return None, completed.returncode, f"{problem}: {detail}" if detail else problem
    return output, completed.returncode, ""


def _smartctl_message(output: dict[str, Any]) -> str:
    """smartctl's own explanation, preferring its errors."""
    messages = _section(output, "smartctl").get("messages")
    if not isinstance(messages, list):
        return ""
    texts = [
        (message.get("severity") == "error", _one_line(str(message.get("string", ""))))
        for message in messages
        if isinstance(message, dict)
    ]
    errors = [text for is_error, text in texts if is_error and text]
    others = [text for is_error, text in texts if not is_error and text]
    return (errors or others or [""])[0]


def _unsupported(device: str, reason: str) -> dict[str, Any]:
    return {"status": "unsupported", "device": device, "reason": reason}


def _nvme_cli(device: str, run: Callable[..., subprocess.CompletedProcess[str]]) -> dict[str, Any]:
    """nvme-cli's own smart-log, as a second opinion on an NVMe device."""
    output, status, problem = _run_json(["nvme", "smart-log", "-o", "json", device], run)
    if output is None:
        return {"status": "unsupported", "reason": problem}
    if status != 0:
        return {"status": "unsupported", "reason": f"nvme smart-log exit status {status}"}
    return {"status": "ok", "wear": nvme_wear(output)}


def snapshot(
    device: str, run: Callable[..., subprocess.CompletedProcess[str]] = subprocess.run
) -> dict[str, Any]:
    """Read a device's SMART / NVMe health now; never raises.

    Runs ``smartctl -j -a <device>``, and for /dev/nvme* also
    ``nvme smart-log -o json <device>``. Returns either
      {"status": "unsupported", "device", "reason"} -- one line saying why
      (smartctl missing or too old for -j, device not SMART-capable, ...) --
    or
      {"status": "ok", "device", "smartctl_exit_status", "smartctl_findings",
       "wear", "nvme_cli"}
    where wear is wear()'s dict, smartctl_findings lists what the exit status
    bits 2-7 report (a failing disk still yields a snapshot), and nvme_cli is
    None for non-NVMe devices, else {"status": "ok", "wear": nvme_wear(...)}
    or {"status": "unsupported", "reason"}. run is subprocess.run, or a
    stand-in with its signature for tests.
    """
    output, status, problem = _run_json(["smartctl", "-j", "-a", device], run)
    if output is None:
        return _unsupported(device, problem)
    message = _smartctl_message(output)
    if status & _SMARTCTL_NO_DEVICE:
        return _unsupported(
            device, message or f"smartctl could not open or identify {device} (exit status {status})"
        )
    if not any(key in output for key in _HEALTH_SECTIONS):
        reason = f"smartctl read no SMART health data from {device}"
        return _unsupported(device, f"{reason}: {message}" if message else reason)
    return {
        "status": "ok",
        "device": device,
        "smartctl_exit_status": status,
        "smartctl_findings": [text for bit, text in _SMARTCTL_FINDINGS.items() if status & bit],
        "wear": wear(output),
        "nvme_cli": _nvme_cli(device, run) if device.startswith("/dev/nvme") else None,
    }


# The kernel counts a disk's I/O in 512-byte sectors whatever the disk's own block size
# (Documentation/block/stat.rst); the seventh field of its stat file is the sectors written.
KERNEL_SECTOR_BYTES = 512
SECTORS_WRITTEN_FIELD = 6


def kernel_written_bytes(device: str, sys_class_block: str = "/sys/class/block") -> int | None:
    """What the kernel's block layer has written to a disk since boot, in bytes (its stat file),
    or None where it cannot be read. Read beside the disk's own count (data_units_span) over the
    same span, it says whether the disk counted what it was sent: a unit misread, or a device
    that counts its own writes beside the host's, shows as a difference."""
    name = os.path.basename(os.path.realpath(device))
    try:
        with open(os.path.join(sys_class_block, name, "stat"), encoding="ascii") as stat:
            fields = stat.read().split()
        return int(fields[SECTORS_WRITTEN_FIELD]) * KERNEL_SECTOR_BYTES
    except (OSError, ValueError, IndexError):
        return None


def kernel_span(before: int | None, after: int | None) -> dict[str, int]:
    """data_units_span's companion: `sent_bytes`, what the kernel wrote to the disk between two
    kernel_written_bytes() readings, or nothing where either is unknown or the count fell (the
    disk went away and came back under the name)."""
    if before is None or after is None or after < before:
        return {}
    return {"sent_bytes": after - before}


def data_units_span(device: str, before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """What a device's own counters say the host sent it between two snapshot()s: NVMe data
    units written and read, in bytes (`written_bytes`, `read_bytes`, each good to one unit), or
    `unsupported` with one line saying why. A device without SMART (a loop device, a virtio
    disk), one that reports no data units (an ATA SSD: its host-writes attributes are vendors'
    own units) or one whose counters fell (reset, or another device under the name) gives no
    figure: never a 0 that would read as "wrote nothing"."""
    for reading in (before, after):
        if reading.get("status") != "ok":
            return {"device": device, "unsupported": str(reading.get("reason") or "SMART could not be read")}
    changes = snapshot_delta(before, after) or {}
    if "error" in changes:
        return {"device": device, "unsupported": changes["error"]}
    counters = {}
    for name in ("written", "read"):
        old, new = (reading["wear"].get(f"data_units_{name}_bytes") for reading in (before, after))
        if not isinstance(old, int) or not isinstance(new, int):  # _number never gives a bool
            protocol = after["wear"].get("protocol") or "unknown"
            return {"device": device, "unsupported": f"{device} reports no NVMe data units {name} (protocol {protocol})"}
        if new < old:
            return {"device": device, "unsupported": f"{device}'s data units {name} fell from {old // NVME_DATA_UNIT_BYTES}"
                                                     f" to {new // NVME_DATA_UNIT_BYTES}: the device was reset or replaced"}
        counters[f"{name}_bytes"] = new - old
    # The SMART log is the controller's: two namespaces of one controller share these counters,
    # and the report counts a serial once.
    return {"device": device, "serial": after["wear"].get("serial"), **counters, "unit_bytes": NVME_DATA_UNIT_BYTES}
