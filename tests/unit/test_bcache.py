"""bcache, the third flash cache: its layout (innomatrix_host.layouts: the commands, the tag, which
members are the suite's) and its counters (innomatrix_host.cache_status: a bcache device's sysfs
read into one cache.log line, and that line read back by the host and the report). The sysfs
values are those the VM test host's kernel (Debian 12, 6.1, bcache-tools 1.0.8) showed; the
kernel's side runs there (tests/e2e/test_vm_layouts.py)."""

from __future__ import annotations

import datetime as dt
import subprocess
from pathlib import Path

import numpy as np
import pytest

from innomatrix.parse import ParseError
from innomatrix.parse import cache
from innomatrix_host import cache_status, collected, layouts
from innomatrix_host.cache_status import CacheFailed, CacheStatusError
from trial_module import trial_module

PRIORITY_STATS = ("Unused:\t\t84%\nClean:\t\t0%\nDirty:\t\t14%\nMetadata:\t1%\nAverage:\t116\nSectors per Q:\t5280\n"
                  "Quantiles:\t[0 0 0 4 9 14 20 25 30 128 130 133 136 138 141 143 146 148 151 154 156 159 161 164]\n")
# /sys/block/bcache0/bcache/ of a writeback bcache after a 64 MiB write and two reads, as the VM printed it.
SYSFS = {"cache_mode": "writethrough [writeback] writearound none\n", "state": "dirty\n", "dirty_data": "74.1M\n",
         "stats_total/cache_hits": "1243\n", "stats_total/cache_misses": "31\n",
         "stats_total/cache_bypass_hits": "0\n", "stats_total/cache_bypass_misses": "0\n",
         "cache/cache0/nbuckets": "1024\n", "cache/cache0/bucket_size": "512.0k\n",
         "cache/cache0/priority_stats": PRIORITY_STATS}
LINE = ("bcache mode=writeback state=dirty dirty_data=74.1M cache_hits=1243 cache_misses=31 cache_bypass_hits=0 "
        "cache_bypass_misses=0 buckets=1024 bucket_size=512.0k unused_pct=84 clean_pct=0 dirty_pct=14 metadata_pct=1")
# bcache-super-show of the two members make-bcache made, as the VM printed them.
SUPER_BACKING = """sb.magic\t\tok
sb.first_sector\t\t8 [match]
sb.csum\t\t\tBDE728AB522B389D [match]
sb.version\t\t1 [backing device]

dev.label\t\t(empty)
dev.uuid\t\tc23c2e8a-e0f0-4b55-aa18-654bff9469f3
dev.sectors_per_block\t1
dev.sectors_per_bucket\t1024
dev.data.first_sector\t16
dev.data.cache_mode\t1 [writeback]
dev.data.cache_state\t1 [clean]

cset.uuid\t\t04afece8-5150-4814-8010-fe21d00e120d
"""
SUPER_CACHE = """sb.magic\t\tok
sb.first_sector\t\t8 [match]
sb.csum\t\t\t65313B6DAE43FDC5 [match]
sb.version\t\t3 [cache device]

dev.label\t\t(empty)
dev.uuid\t\t0ee4f745-ce6c-4518-93d9-8e48b32691a0
dev.sectors_per_block\t1
dev.sectors_per_bucket\t1024
dev.cache.first_sector\t1024
dev.cache.cache_sectors\t1047552
dev.cache.total_sectors\t1048576
dev.cache.ordered\tyes
dev.cache.discard\tno
dev.cache.pos\t\t0
dev.cache.replacement\t0 [lru]

cset.uuid\t\t04afece8-5150-4814-8010-fe21d00e120d
"""
THEIRS = "04afece8-5150-4814-8010-fe21d00e120d"
OURS = layouts.BCACHE_CSET_PREFIX + "0123456789ab"


def test_a_bcache_device_s_sysfs_is_one_line_read_as_the_same_counters_as_dm_cache() -> None:
    assert cache_status.bcache_line(lambda leaf: SYSFS[leaf]) == LINE
    assert cache_status.parse_status(LINE) == {
        "target": "bcache", "mode": "writeback", "block_bytes": 512 * 1024, "used_blocks": 143, "total_blocks": 1024,
        "writeback_blocks": None,
        # bcache looks reads up only: its bypassed reads' hits and misses are reads too; no write counts.
        "read_hits": 1243, "read_misses": 31, "write_hits": None, "write_misses": None,
        "demotions": None, "promotions": None, "dirty_blocks": None, "dirty_bytes": 741 * 2**20 // 10,
        "needs_check": False}
    bypassed = LINE.replace("cache_bypass_hits=0", "cache_bypass_hits=7").replace("cache_bypass_misses=0",
                                                                                   "cache_bypass_misses=5")
    assert [cache_status.parse_status(bypassed)[k] for k in ("read_hits", "read_misses")] == [1250, 36]


@pytest.mark.parametrize("text, expected", [
    ("0.0k", 0), ("0.5k", 512), ("512.0k", 524288), ("6.1M", 61 * 2**20 // 10), ("1.2G", 12 * 2**30 // 10),
    ("999.9k", 9999 * 1024 // 10)])
def test_a_size_as_bcache_prints_it_is_read_at_the_low_end_of_its_tenth(text, expected) -> None:
    assert cache_status.hprint_bytes(text, "dirty_data") == expected


@pytest.mark.parametrize("text", ["74.1", "74M", "1" * 400 + ".0M", "-1.0k", "1.0X", "", "1.0 M", "0x1.0k"])
def test_a_size_bcache_would_not_print_is_an_error_naming_it(text) -> None:
    with pytest.raises(CacheStatusError, match=r"^dirty_data is .*not a size as bcache prints it"):
        cache_status.hprint_bytes(text, "dirty_data")


@pytest.mark.parametrize("change, message", [
    (lambda line: line.rsplit(" ", 3)[0], "a bcache line without clean_pct, dirty_pct, metadata_pct (cut short"),
    (lambda line: line + " cache_hits=5", "a bcache line with 'cache_hits=5': not one of its fields, or twice"),
    (lambda line: line + " bypassed=1.0M", "a bcache line with 'bypassed=1.0M': not one of its fields"),
    (lambda line: line.replace("cache_hits=1243", "cache_hits=" + "9" * 400), "cache_hits is '999"),
    (lambda line: line.replace("cache_misses=31", "cache_misses=-31"), "cache_misses is '-31', not a count"),
    (lambda line: line.replace("state=dirty", "state=melted"), "bcache state 'melted', mode 'writeback': not a bcache's"),
    (lambda line: line.replace("mode=writeback", "mode=[writeback]"), "mode '[writeback]': not a bcache's"),
    (lambda line: line.replace("buckets=1024", "buckets=0"), "0 buckets"),
    (lambda line: line.replace("unused_pct=84", "unused_pct=99"), "shares"),
    (lambda line: line.replace("dirty_data=74.1M", "dirty_data=74.1Q"), "dirty_data is '74.1Q'"),
    (lambda line: line.replace("dirty_data=74.1M", "dirty_data="), "a bcache line without dirty_data"),
])
def test_a_cut_or_damaged_bcache_line_is_one_line_saying_what(change, message) -> None:
    with pytest.raises(CacheStatusError) as refused:
        cache_status.parse_status(change(LINE))
    assert message in str(refused.value) and "\n" not in str(refused.value)
    assert not isinstance(refused.value, CacheFailed)


@pytest.mark.parametrize("state, said", [("no_cache", "no cache attached"), ("inconsistent", "inconsistent")])
def test_a_bcache_that_lost_its_cache_marks_the_trial(state, said) -> None:
    with pytest.raises(CacheFailed, match=said):
        cache_status.parse_status(LINE.replace("state=dirty", f"state={state}"))


def bcache_log(seconds: int, start: dt.datetime) -> str:
    """cache.log of a bcache that answers 9 reads in 10 from its cache and grows dirty by 1.0M a second."""
    lines = [cache_status.HEADER]
    for i in range(seconds):
        stamp = (start + dt.timedelta(seconds=i)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        lines.append(f"{stamp}\t" + LINE.replace("cache_hits=1243", f"cache_hits={90 * i}")
                     .replace("cache_misses=31", f"cache_misses={10 * i}").replace("dirty_data=74.1M", f"dirty_data={i}.0M"))
    return "\n".join(lines) + "\n"


def test_a_bcache_log_gives_read_hit_ratios_and_dirty_data_and_no_write_figures() -> None:
    start = dt.datetime(2026, 11, 29, 12, 0, 0, tzinfo=dt.timezone.utc)
    text = bcache_log(12, start)
    samples = cache.parse(text)
    assert np.allclose(samples.metrics["read_hit_ratio"], 0.9)
    assert samples.metrics["dirty_mib"][-1] == 11.0
    assert np.isnan(samples.metrics["write_hits"]).all()
    read, failed = collected.cache_samples(text)
    assert failed is None and len(read) == 12
    window = collected.Window(start, warmup_s=2, interval_s=1, last_t=11)
    summary = collected.cache_summary(window, read)
    assert summary["read_hit_ratio"] == pytest.approx(0.9) and summary["write_hit_ratio"] is None
    assert summary["dirty_bytes_end"] == 11 * 2**20 and summary["target"] == "bcache"
    # A line cut in the middle: an error naming the file and the line, never a clean wrong figure.
    cut = text.splitlines()
    cut[5] = cut[5][:cut[5].index(" buckets=")]
    with pytest.raises(ParseError) as refused:
        cache.parse("\n".join(cut) + "\n", "run/h/cache.log")
    assert str(refused.value).startswith("run/h/cache.log:6: a bcache line without buckets")
    # The cache detached mid-trial: the trial is marked, its cache figures none.
    lost = text.replace("state=dirty", "state=no_cache", 1)
    assert cache.parse(lost).marks[0].startswith("cache.log:2: bcache reports no cache attached")


def test_a_bcache_is_built_with_the_suites_tag_then_told_its_mode_and_tunables() -> None:
    hdd, ssd = "/dev/disk/by-id/virtio-im-m1", "/dev/disk/by-id/nvme-im-flash"
    assert layouts.build_commands("bcache-writeback", [hdd, ssd], cset_uuid=OURS) == [
        ["make-bcache", "--bdev", hdd, "--cache", ssd, "--cset-uuid", OURS, "--writeback"]]
    assert layouts.build_commands("bcache-writethrough", [hdd, ssd], cset_uuid=OURS) == [
        ["make-bcache", "--bdev", hdd, "--cache", ssd, "--cset-uuid", OURS]]
    made = layouts.build_commands("bcache-writeback", [hdd, ssd])[0]
    assert made[made.index("--cset-uuid") + 1].startswith(layouts.BCACHE_CSET_PREFIX) and made != \
        layouts.build_commands("bcache-writeback", [hdd, ssd])[0]  # a set of its own each time
    assert bytes.fromhex(layouts.BCACHE_CSET_PREFIX.replace("-", "")) == b"innomatrix"
    folder = f"{layouts.SYS_BLOCK}/{hdd.rsplit('/', 1)[1]}/bcache"
    assert layouts.bcache_settings("bcache-writeback", hdd) == [
        (f"{folder}/label", "innomatrix:bcache-writeback"), (f"{folder}/cache_mode", "writeback"),
        (f"{folder}/writeback_percent", "10"), (f"{folder}/sequential_cutoff", "0")]
    assert layouts.alignment(layouts.LAYOUTS["bcache-writeback"], 2)["mkfs_options"] == {"xfs": "", "ext4": ""}
    with pytest.raises(layouts.LayoutError, match=r"bcache-writeback is over exactly 2 members"):
        layouts.check("bcache-writeback", [hdd, ssd, "/dev/vdc"])


def test_a_sysfs_write_is_a_command_that_writes_it(tmp_path) -> None:
    target = tmp_path / "label"
    target.write_text("")
    subprocess.run(layouts.sysfs_write(str(target), "innomatrix:bcache-writeback"), check=True)
    assert target.read_text() == "innomatrix:bcache-writeback\n"
    gone = tmp_path / "gone" / "stop"
    assert subprocess.run(layouts.sysfs_write(str(gone), "1", only_if_there=True)).returncode == 0
    assert subprocess.run(layouts.sysfs_write(str(gone), "1")).returncode != 0


def member(role: str, cset: str, label: str = "", holders=("bcache0",)) -> dict:
    name = "vdb" if role == "backing" else "nvme0n1"
    return {"member": f"/dev/{name}", "name": name, "holders": list(holders), "type": "bcache",
            "bcache_role": role, "bcache_label": label, "bcache_cset": cset}


def test_a_member_s_bcache_superblock_says_whose_it_is() -> None:
    assert layouts.bcache_superblock(SUPER_BACKING) == {"bcache_role": "backing", "bcache_label": "", "bcache_cset": THEIRS}
    assert layouts.bcache_superblock(SUPER_CACHE) == {"bcache_role": "cache", "bcache_label": "", "bcache_cset": THEIRS}
    assert layouts.bcache_superblock("") == {"bcache_role": "", "bcache_label": "", "bcache_cset": ""}

    def probe(argv):  # test double: blkid and bcache-super-show of a member the VM formatted
        said = "DEVNAME=/dev/vdb\nUUID=c23c2e8a\nTYPE=bcache\n" if argv[0] == "blkid" else SUPER_BACKING
        return subprocess.CompletedProcess(argv, 0, said, "")
    found = layouts.member_state("/dev/nonexistent-vdb", probe)
    assert (found["type"], found["bcache_role"], found["bcache_cset"]) == ("bcache", "backing", THEIRS)
    assert "unreadable" not in found

    def no_tools(argv):  # test double: blkid finds bcache, and bcache-tools is not installed
        if argv[0] == "blkid":
            return probe(argv)
        return layouts.run(["/nonexistent/bcache-super-show", *argv[1:]])
    found = layouts.member_state("/dev/nonexistent-vdb", no_tools)
    assert found["unreadable"] == "bcache-super-show exited 127: /nonexistent/bcache-super-show: No such file or directory"
    assert layouts.refusal(found, lambda holder: False, may_wipe=True).startswith(
        "/dev/nonexistent-vdb could not be probed (bcache-super-show exited 127")


@pytest.mark.parametrize("state, reason", [
    (member("backing", OURS, "innomatrix:bcache-writeback"), None),
    (member("cache", OURS), None),
    # detached from its set (a detach clears the set's UUID): the label still says whose it is
    (member("backing", "", "innomatrix:bcache-writethrough", holders=()), None),
    (member("backing", THEIRS, holders=()),
     f"/dev/vdb is a bcache backing device of cache set {THEIRS}, which the suite did not make"),
    (member("cache", THEIRS, holders=()), f"/dev/nvme0n1 is a bcache cache device of cache set {THEIRS}"),
    # a label like the suite's on someone's set is not the tag; a cache device has no label to borrow
    (member("backing", THEIRS, "innomatrix:home", holders=()), "which the suite did not make"),
    (member("backing", THEIRS), "/dev/vdb is held by bcache0, which the suite did not make"),
])
def test_only_the_suites_bcache_may_be_used_and_someone_elses_is_refused(state, reason) -> None:
    found = layouts.refusal(state, lambda holder: state["bcache_cset"] == OURS)
    assert found == reason if reason is None else reason in found and "\n" not in found


def test_the_suites_bcache_is_stopped_unregistered_awaited_then_wiped() -> None:
    states = [member("backing", OURS, "innomatrix:bcache-writeback"), member("cache", OURS),
              {"member": "/dev/vdc", "name": "vdc", "holders": [], "type": ""}]
    commands = layouts.removal_commands(states, lambda argv: subprocess.CompletedProcess(argv, 0, "", ""))
    assert commands[0] == layouts.sysfs_write("/sys/class/block/vdb/bcache/stop", "1", only_if_there=True)
    assert commands[1] == layouts.sysfs_write(f"/sys/fs/bcache/{OURS}/unregister", "1", only_if_there=True)
    assert commands[2][:2] == ["sh", "-c"] and commands[2][-2:] == ["/sys/class/block/vdb/bcache", f"/sys/fs/bcache/{OURS}"]
    assert commands[3:] == [["wipefs", "--all", "/dev/vdb"], ["wipefs", "--all", "/dev/nvme0n1"]]
    assert layouts.removal_commands([member("backing", THEIRS)], lambda argv: None) == []


def test_the_wait_for_the_kernel_to_let_go_ends_when_it_has_or_says_what_it_still_holds(tmp_path) -> None:
    held = tmp_path / "bcache"
    held.mkdir()
    [*_, wait, _] = layouts.bcache_removal([member("backing", OURS)])
    wait = [*wait[:-1], str(held)]
    subprocess.Popen(["sh", "-c", f"sleep 0.5; rmdir {held}"])
    assert subprocess.run(wait, timeout=30).returncode == 0


NEW = layouts.BCACHE_CSET_PREFIX + "fedcba987654"


def test_a_cold_bcache_gets_a_cache_set_made_anew_once_its_dirty_data_is_written_back() -> None:
    hdd, ssd = "/dev/vdb", "/dev/nvme0n1"
    backing = f"{layouts.SYS_BLOCK}/vdb/bcache"
    assert layouts.LAYOUTS["bcache-writeback-cold"] == {**layouts.LAYOUTS["bcache-writeback"], "start": "cold"}
    assert layouts.cache_start("bcache-writethrough-cold") == "cold"
    assert layouts.build_commands("bcache-writeback-cold", [hdd, ssd], cset_uuid=OURS) == \
        layouts.build_commands("bcache-writeback", [hdd, ssd], cset_uuid=OURS)
    again = layouts.bcache_recache_commands("bcache-writeback-cold", [hdd, ssd], [OURS], cset_uuid=NEW)
    # Detached (bcache writes its dirty data back before it lets go: a long wait, said in its limit),
    # the old set unregistered and awaited, the cache device wiped and made a set of the suite's anew,
    # registered (udev, or here), the backing device attached to it, the settings written again.
    assert again[0] == layouts.sysfs_write(f"{backing}/detach", "1")
    assert again[1] == layouts.wait_for_paths([f"{backing}/cache"], gone=True, seconds=layouts.BCACHE_DETACH_TIMEOUT_S)
    assert again[2:4] == [layouts.sysfs_write(f"/sys/fs/bcache/{OURS}/unregister", "1", only_if_there=True),
                          layouts.wait_for_paths([f"/sys/fs/bcache/{OURS}"], gone=True, seconds=30)]
    assert again[4:6] == [["wipefs", "--all", ssd], ["make-bcache", "--cache", ssd, "--cset-uuid", NEW]]
    assert again[6] == layouts.wait_for_paths([f"/sys/fs/bcache/{NEW}"], gone=False, seconds=30,
                                              nudge=layouts.sysfs_write("/sys/fs/bcache/register", ssd))
    assert again[7:9] == [layouts.sysfs_write(f"{backing}/attach", NEW),
                          layouts.wait_for_paths([f"{backing}/cache"], gone=False, seconds=30)]
    assert again[9:] == [layouts.sysfs_write(path, value) for path, value in
                         layouts.bcache_settings("bcache-writeback-cold", hdd)]
    # bcache takes 32 bytes of label (the kernel's SB_LABEL_SIZE; `echo` adds a newline): a cold
    # twin is labelled as its warm layout, and every label fits.
    assert layouts.bcache_settings("bcache-writeback-cold", hdd) == layouts.bcache_settings("bcache-writeback", hdd)
    assert layouts.SUITE_BCACHE_LABELS == {"innomatrix:bcache-writeback", "innomatrix:bcache-writethrough"}
    assert all(len(label) + 1 <= 32 for label in layouts.SUITE_BCACHE_LABELS)
    # Taken up where a remaking stopped: no set left on the cache device, nothing to unregister.
    assert layouts.bcache_recache_commands("bcache-writeback-cold", [hdd, ssd], [], cset_uuid=NEW) == again[:2] + again[4:]
    made = layouts.bcache_recache_commands("bcache-writeback-cold", [hdd, ssd], [])[3]
    assert made[-1].startswith(layouts.BCACHE_CSET_PREFIX) and made[-1] != NEW
    with pytest.raises(layouts.LayoutError, match=f"^/dev/nvme0n1 holds cache set {THEIRS}, which the suite did not make$"):
        layouts.bcache_recache_commands("bcache-writeback-cold", [hdd, ssd], [OURS, THEIRS])
    with pytest.raises(layouts.LayoutError, match="lvm-cache-writeback-cold is no bcache"):
        layouts.bcache_recache_commands("lvm-cache-writeback-cold", [hdd, ssd], [])


def test_a_wait_for_paths_ends_when_they_are_as_asked_nudges_once_and_says_what_is_not(tmp_path) -> None:
    there, coming = tmp_path / "there", tmp_path / "coming"
    there.mkdir()
    assert subprocess.run(layouts.wait_for_paths([str(there)], gone=False, seconds=1), timeout=30).returncode == 0
    # Half way with the path still missing, the nudge runs (here: it makes the path), once.
    nudge = ["sh", "-c", f'echo x >> {tmp_path}/nudged; mkdir {coming}']
    assert subprocess.run(layouts.wait_for_paths([str(coming)], gone=False, seconds=2, nudge=nudge),
                          timeout=30).returncode == 0
    assert (tmp_path / "nudged").read_text() == "x\n"
    done = subprocess.run(layouts.wait_for_paths([str(there), str(tmp_path / "never")], gone=False, seconds=1),
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 1 and done.stderr == f"{tmp_path}/never not there after 1 s\n"
    done = subprocess.run(layouts.wait_for_paths([str(there)], gone=True, seconds=1), capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 1 and done.stderr == f"{there} still there after 1 s\n"


def test_the_cache_sets_on_a_cache_device_are_found_by_their_cache0_link(tmp_path, monkeypatch) -> None:
    sets = tmp_path / "fs-bcache"
    for cset, device in ((OURS, "nvme0n1"), (THEIRS, "vdc")):
        (tmp_path / "devices" / device / "bcache").mkdir(parents=True)
        (sets / cset).mkdir(parents=True)
        (sets / cset / "cache0").symlink_to(tmp_path / "devices" / device / "bcache")
    (sets / "register").write_text("")
    monkeypatch.setattr(layouts, "SYS_BCACHE", sets)
    assert layouts.bcache_csets_on("/dev/nvme0n1") == [OURS] and layouts.bcache_csets_on("/dev/vdb") == []
    monkeypatch.setattr(layouts, "SYS_BCACHE", tmp_path / "no-bcache-here")
    assert layouts.bcache_csets_on("/dev/nvme0n1") == []


def test_a_cold_bcache_is_made_anew_before_the_trial_reads_its_counters(monkeypatch) -> None:
    ran: list = []
    monkeypatch.setattr(trial_module, "run", lambda argv, timeout=600: ran.append(argv))  # test double: no bcache here
    monkeypatch.setattr(trial_module, "bcache_csets_on", lambda member: [OURS] if member == "/dev/nvme0n1" else [])
    monkeypatch.setattr(layouts, "new_cset_uuid", lambda: NEW)
    monkeypatch.setattr(trial_module, "cache_status_line", lambda source, timeout, runner=None: LINE)
    members = ["/dev/vdb", "/dev/nvme0n1"]
    trial: dict = {}
    trial_module.start_cache({"path": "/dev/bcache0", "layout": {
        "name": "bcache-writeback-cold", "members_given": members, "read_back": {"target": "bcache", "name": "bcache0"}}},
        trial)
    assert ran == layouts.bcache_recache_commands("bcache-writeback-cold", members, [OURS], cset_uuid=NEW)
    assert trial["cache_start"]["state"] == "cold" and trial["cache_start"]["made_s"] >= 0
    assert trial["cache_start"]["counters"]["target"] == "bcache"


def test_a_holder_is_the_suites_bcache_by_its_backing_device_s_superblock(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(layouts, "SYS_BLOCK", tmp_path)
    (tmp_path / "bcache0" / "bcache").mkdir(parents=True)
    (tmp_path / "bcache0" / "bcache" / "backing_dev_name").write_text("vdb\n")

    def shows(text):
        return lambda argv: subprocess.CompletedProcess(argv, 0, text if argv == ["bcache-super-show", "/dev/vdb"] else "", "")
    assert layouts.holder_is_ours("bcache0", shows(SUPER_BACKING.replace(THEIRS, OURS))) is True
    assert layouts.holder_is_ours("bcache0", shows(SUPER_BACKING)) is False
    assert layouts.holder_is_ours("bcache1", shows(SUPER_BACKING.replace(THEIRS, OURS))) is False  # no such device


def test_a_warm_bcache_s_counters_are_read_when_the_trial_begins(monkeypatch) -> None:
    read: list = []

    def status_line(source, timeout, runner=None):  # test double: the bcache's sysfs, as the VM's
        read.append(source)
        return LINE
    monkeypatch.setattr(trial_module, "cache_status_line", status_line)
    trial: dict = {}
    device = {"path": "/dev/bcache0", "layout": {"name": "bcache-writeback", "members_given": ["/dev/vdb", "/dev/nvme0n1"],
                                                 "read_back": {"target": "bcache", "name": "bcache0"}}}
    trial_module.start_cache(device, trial)
    assert read == [("bcache", "bcache0")]
    assert trial["cache_start"]["state"] == "warm" and trial["cache_start"]["counters"]["used_blocks"] == 143


FIXTURE = Path(__file__).parents[1] / "fixtures" / "cache" / "bcache-writeback.log"


def test_a_captured_bcache_log_steps_when_the_kernel_folds_its_counts_in() -> None:
    # tests/fixtures/cache/bcache-writeback.log: the sampler's own cache.log of a fileio table-rndrd
    # trial on bcache-writeback in the VM test host. Six samples of no read counted, then the
    # kernel's accounting step: every read since the last step at once, all hits.
    samples = cache.read(FIXTURE)
    assert list(samples.metrics["read_hits"]) == [0, 0, 0, 0, 0, 11091 + 1222 - 329]
    assert list(np.nan_to_num(samples.metrics["read_hit_ratio"])) == [0, 0, 0, 0, 0, 1.0]
    assert samples.metrics["dirty_mib"][-1] == pytest.approx(105.4) and np.isnan(samples.metrics["write_hits"]).all()
    assert samples.metrics["used_pct"][-1] == pytest.approx(100 * (1024 * 42 // 100) / 1024)
    read, failed = collected.cache_samples(FIXTURE.read_text())
    assert failed is None and [counters["read_hits"] for _, counters in read][-2:] == [329, 12313]


@pytest.mark.parametrize("damage, message", [
    (lambda lines: lines[:-1] + [lines[-1][:lines[-1].index(" unused_pct")]], ":8: a bcache line without unused_pct"),
    (lambda lines: lines[:-1] + [lines[-1].replace("cache_hits=11091", "cache_hits=1l091")], ":8: cache_hits is '1l091'"),
    (lambda lines: lines + [lines[-1]], ":9: time 2026-11-29T13:58:10.053Z does not follow"),
])
def test_a_cut_or_corrupted_bcache_capture_is_an_error_naming_file_and_line(tmp_path, damage, message) -> None:
    damaged = tmp_path / "cache.log"
    damaged.write_text("\n".join(damage(FIXTURE.read_text().splitlines())) + "\n")
    with pytest.raises(ParseError) as refused:
        cache.read(damaged)
    assert str(refused.value).startswith(f"{damaged}{message}") and "\n" not in str(refused.value)
