"""A flash cache's own counters: `dmsetup status` of dm-cache and dm-writecache as captured in the VM
test host (tests/fixtures/cache: Debian 12's kernel 6.1, LVM 2.03.16, the suite's own layouts under
sysbench fileio), read on the host (innomatrix_host.cache_status, collected.cache_summary) and by
the report (innomatrix.parse.cache), and what cut or damaged logs do to them."""

from __future__ import annotations

import datetime as dt
import json
import math
import signal
import subprocess
from pathlib import Path

import numpy as np
import pytest
from synth import Trial, steady, write_trial

from innomatrix import frame, record, report, stats
from innomatrix.parse import ParseError
from innomatrix.parse import cache
from innomatrix.report import tables
from innomatrix_host import cache_status, collected, flags, layouts
from innomatrix_host.cache_status import CacheStatusError
from trial_module import trial_module

FIXTURES = Path(__file__).parents[1] / "fixtures" / "cache"
WRITEBACK, WRITETHROUGH, WRITECACHE = (FIXTURES / f"{name}.log" for name in
                                       ("dm-cache-writeback", "dm-cache-writethrough", "dm-writecache"))


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


def test_a_dm_cache_status_line_is_read_field_by_field() -> None:
    status = lines(WRITEBACK)[1].split("\t")[1]
    assert cache_status.parse_status(status) == {
        "target": "cache", "mode": "writeback", "block_bytes": 65536, "used_blocks": 5134, "total_blocks": 8000,
        "writeback_blocks": None, "read_hits": 373, "read_misses": 64, "write_hits": 248, "write_misses": 0,
        "demotions": 0, "promotions": 5134, "dirty_blocks": 4646, "dirty_bytes": 4646 * 65536, "needs_check": False}


def test_a_dm_writecache_status_line_is_read_as_the_same_counters() -> None:
    status = lines(WRITECACHE)[-1].split("\t")[1]
    # 129541 blocks, 47538 free; 33366 reads, 32386 hits; 104186 writes, none around the cache (a
    # writecache takes every write it does not send around: into a block it holds, 5513 + 36, or
    # one it allocates, 98637).
    assert cache_status.parse_status(status) == {
        "target": "writecache", "mode": "writeback", "block_bytes": None, "used_blocks": 82003,
        "total_blocks": 129541, "writeback_blocks": 0, "read_hits": 32386, "read_misses": 980, "write_hits": 104186,
        "write_misses": 0, "demotions": None, "promotions": None, "dirty_blocks": None, "dirty_bytes": None,
        "needs_check": False}
    around = status.split()
    around[12] = "1000"
    assert cache_status.parse_status(" ".join(around))["write_misses"] == 1000


@pytest.mark.parametrize("status, message", [
    ("0 2088960 linear 254:16 2048", "a 'linear' target, not a cache"),
    ("0 2088960", "not a device-mapper status line"),
    ("0 2088960 cache Fail", "the cache device reports Fail"),
    ("0 2088960 cache 8 24/2048 128 5134/8000 373 64 248", "a dm-cache status line cut short (7 fields"),
    ("0 2088960 cache 8 24/2048 128 5134/8000 3" + "7" * 400 + " 64 248 0 0 5134 4646 2 metadata2 writeback 2",
     "read_hits is '3777"),
    ("0 2088960 cache 8 24/2048 128 5134/8000 -373 64 248 0 0 5134 4646 2 metadata2 writeback 2", "read_hits is '-373'"),
    ("0 2088960 cache 8 24/2048 128 9000/8000 373 64 248 0 0 5134 4646 2 metadata2 writeback 2",
     "cache blocks 9000/8000 with 4646 dirty: not a cache's"),
    ("0 2088960 cache 8 24/2048 128 5134/8000 373 64 248 0 0 5134 4646 2 metadata2 writeback 2".replace("5134/8000", "5134"),
     "cache blocks total is '', not a count"),
    ("0 2088960 writecache 0 129541 47538 0", "a dm-writecache status line without its counters"),
    ("0 2088960 writecache -5 129541 47538 0 1134 154 82571 36 8 0 82527 0 8 261120", "the writecache reports error -5"),
    ("0 2088960 writecache 0 129541 47538 0 1134 1154 82571 36 8 0 82527 0 8 261120", "read hits 1154 of 1134"),
    ("0 2088960 writecache 0 129541 47538 0 1134 154 82571 36 8 90000 82527 0 8 261120", "writes around 90000 of 82571"),
])
def test_a_status_line_that_is_no_caches_or_is_cut_or_damaged_says_so_in_one_line(status, message) -> None:
    with pytest.raises(CacheStatusError) as raised:
        cache_status.parse_status(status)
    assert message in str(raised.value) and "\n" not in str(raised.value)


def test_the_report_reads_the_growth_between_samples_and_the_levels() -> None:
    samples = cache.read(WRITEBACK)
    assert len(samples) == len(lines(WRITEBACK)) - 2  # a header, and the first sample has nothing before it
    assert samples.times[0] == np.datetime64("2026-11-28T19:53:00.752")
    # 373 → 2945 read hits, no new misses; 248 → 1983 write hits.
    first = {name: values[0] for name, values in samples.metrics.items()}
    assert (first["read_hits"], first["read_misses"], first["write_hits"], first["read_hit_ratio"]) == (2572, 0, 1735, 1.0)
    assert first["used_pct"] == pytest.approx(100 * 5134 / 8000)
    assert first["dirty_mib"] == pytest.approx(4646 * 65536 / 2**20)
    # After the driver stopped: nothing asked (no ratio), dirty blocks written back.
    assert np.isnan(samples.metrics["read_hit_ratio"][-1]) and samples.metrics["dirty_mib"][-1] < first["dirty_mib"]
    # A cold writethrough cache warms: its hit ratio rises while it promotes blocks.
    warming = cache.read(WRITETHROUGH).metrics
    assert warming["read_hit_ratio"][0] < 0.1 < 0.3 < warming["read_hit_ratio"][3] and (warming["promotions"] > 0).all()
    assert (warming["dirty_mib"] == 0).all()
    writecache = cache.read(WRITECACHE).metrics
    assert np.isnan(writecache["dirty_mib"]).all() and np.isnan(writecache["promotions"]).all()


def damaged(path: Path, tmp_path: Path, change) -> Path:
    text = lines(path)
    change(text)
    out = tmp_path / "cache.log"
    out.write_text("\n".join(text) + "\n")
    return out


def repeat_line(text: list[str]) -> None:
    text.insert(4, text[3])


def counter_falls(text: list[str]) -> None:
    stamp, status = text[5].split("\t")
    fields = status.split()
    fields[7] = "10"  # read hits, far below the sample before
    text[5] = stamp + "\t" + " ".join(fields)


def cut_line(text: list[str]) -> None:
    text[6] = text[6][:60]


def huge_number(text: list[str]) -> None:
    text[3] = text[3].replace(" 64 ", " " + "9" * 400 + " ", 1)


def no_header(text: list[str]) -> None:
    del text[0]


def bad_time(text: list[str]) -> None:
    text[2] = "2026-13-45T99:00:00.000Z" + text[2][24:]


def nat_time(text: list[str]) -> None:
    text[2] = "NaTZ" + text[2][text[2].index("\t"):]


@pytest.mark.parametrize("change, line, message", [
    (repeat_line, 5, "does not follow"),
    (cut_line, 7, "cut short"),
    (nat_time, 3, "is not UTC ISO 8601"),
    (huge_number, 4, "is '9999"),
    (no_header, 1, "no `time<TAB>status` header"),
    (bad_time, 3, "is not a date and time"),
    (lambda text: text.__setitem__(3, "2026Z" + text[3][text[3].index("\t"):]), 4, "is not UTC ISO 8601"),
])
def test_a_cut_or_corrupted_cache_log_is_an_error_naming_its_line(tmp_path, change, line, message) -> None:
    path = damaged(WRITEBACK, tmp_path, change)
    with pytest.raises(ParseError) as raised:
        cache.read(path)
    assert raised.value.line == line and message in raised.value.message, str(raised.value)
    assert str(raised.value).startswith(f"{path}:{line}: ") and "\n" not in str(raised.value)


@pytest.mark.parametrize("change, mark", [
    (counter_falls, "cache.log:6: read_hits fell from 8113 to 10 (the cache was reset): the trial has no cache figures"),
    (lambda text: text.__setitem__(6, text[6].split("\t")[0] + "\t0 2088960 cache Fail"),
     "cache.log:7: the cache device reports Fail: the trial has no cache figures"),
])
def test_a_cache_that_failed_or_was_made_anew_marks_its_trial_on_both_sides(tmp_path, change, mark) -> None:
    path = damaged(WRITEBACK, tmp_path, change)
    samples = cache.read(path)
    assert samples.marks == [mark] and len(samples) == 0
    host, failed = collected.cache_samples(path.read_text())
    assert failed == mark.removesuffix(": the trial has no cache figures") and len(host) == (4 if "fell" in mark else 5)


def test_a_failed_read_is_a_gap_and_a_note_not_an_error(tmp_path) -> None:
    path = damaged(WRITEBACK, tmp_path, lambda text: text.__setitem__(
        4, text[4].split("\t")[0] + "\t#error dmsetup exited 1: Device does not exist."))
    samples = cache.read(path)
    assert len(samples) == len(lines(WRITEBACK)) - 3
    assert samples.notes == ["cache: no status read at 2026-11-28T19:53:03.478Z (dmsetup exited 1: Device does not exist.)"]
    # The sample after the gap grows from the one before it: nothing is lost.
    assert samples.metrics["read_hits"].sum() == 19685 - 373


def test_the_host_sums_up_the_measured_window_and_a_warming_cache_is_flagged() -> None:
    samples, failed = collected.cache_samples(WRITETHROUGH.read_text())
    assert failed is None
    started = samples[0][0] - dt.timedelta(seconds=2)
    # A 3-s warmup: the samples 2.0 and 3.2 s after the start are before the window (t = 2, 3), the
    # other four (t = 4, 6, 7, 8: placed at their milliseconds, as the report does) are in it.
    window = collected.Window(started, warmup_s=3, interval_s=1, last_t=8)
    summary = collected.cache_summary(window, samples)
    start, end = summary["at_measure_start"], summary["at_end"]
    assert (start["read_hits"], end["read_hits"]) == (188, 246) and (start["read_misses"], end["read_misses"]) == (188, 372)
    assert summary["read_hit_ratio"] == pytest.approx(58 / (58 + 184))
    # The halves: two samples each (+27 hits, +117 misses; then +31, +67).
    assert summary["read_hit_ratio_halves"] == pytest.approx([27 / (27 + 117), 31 / (31 + 67)])
    assert summary["dirty_bytes_end"] == 0 and summary["mode"] == "writethrough"
    first, second = summary["read_hit_ratio_halves"]
    assert second - first > flags.WARMING_RISE
    flag = flags.cache_warming(first, second)
    assert flag["flag"] == "cache_warming" and flag["text"].startswith("cache warming: read hit ratio 0.")
    # A warm cache whose ratio holds is not flagged; one asked nothing says nothing.
    assert flags.cache_warming(0.97, 0.99) is None and flags.cache_warming(None, 0.9) is None
    # No sample in the window: no summary.
    late = collected.Window(samples[0][0] - dt.timedelta(seconds=60), warmup_s=0, interval_s=1, last_t=20)
    assert collected.cache_summary(late, samples) is None


def test_a_trial_samples_the_cache_only_on_a_cache_layout() -> None:
    on = {"layout": {"read_back": {"target": "cache"}}}
    assert collected.cache_source(on) == ("dm", "innomatrix-bench")
    assert collected.cache_source({"layout": {"read_back": {"target": "writecache"}}}) == ("dm", "innomatrix-bench")
    assert collected.cache_source({"layout": {"read_back": {"target": "bcache", "name": "bcache0"}}}) == ("bcache", "bcache0")
    for device in ({"layout": {"read_back": {"target": "striped"}}}, {"path": "/dev/vdb"}, {"layout": None},
                   {"layout": {"read_back": {"target": "bcache", "name": ""}}}):
        assert collected.cache_source(device) is None


def cache_log(started: dt.datetime, seconds: int, hit_share) -> str:
    """A cache.log as the sampler writes it, a sample a second from the driver's start: each second
    100 reads, `hit_share(second)` of them hits, 40 writes (all hits), 5 dirty blocks more."""
    lines, hits, misses, writes = [cache_status.HEADER], 0, 0, 0
    for second in range(seconds + 1):
        stamp = (started + dt.timedelta(seconds=second, milliseconds=10)).isoformat(timespec="milliseconds")
        lines.append(f"{stamp.replace('+00:00', 'Z')}\t0 2088960 cache 8 24/2048 128 {4000 + second}/8000 {hits} "
                     f"{misses} {writes} 0 0 {4000 + second} {5 * second} 2 metadata2 writeback 2 "
                     "migration_threshold 2048 mq 0 rw -")
        share = hit_share(second + 1)
        hits, misses, writes = hits + round(100 * share), misses + round(100 * (1 - share)), writes + 40
    return "\n".join(lines) + "\n"


def cache_run(run: Path, hit_share) -> Path:
    for repeat in (1, 2):
        trial = Trial(tps=steady(30, 500.0, 0.01, seed=repeat), layout="lvm-cache-writeback", members=2, warmup_s=5,
                      repeat=repeat, seed=repeat)
        directory = write_trial(run, trial)
        (directory / "cache.log").write_text(cache_log(trial.started.astimezone(dt.timezone.utc), 30, hit_share))
    write_trial(run, Trial(tps=steady(30, 100.0, 0.01, seed=7), layout="lvm-backing-only", members=2, warmup_s=5, seed=7))
    return run


def test_the_report_sums_up_the_cache_over_the_measured_window(tmp_path) -> None:
    cells = stats.cells(frame.load(cache_run(tmp_path / "run", lambda second: 0.95))).set_index("layout")
    cached = cells.loc["lvm-cache-writeback"]
    assert cached["cache_read_hit_ratio"].tolist() == pytest.approx([0.95, 0.95])
    assert cached["cache_write_hit_ratio"].tolist() == [1.0, 1.0]
    # 5 dirty blocks of 64 KiB a second; the last measured sample is the driver's 30th second.
    assert cached["cache_dirty_mib_end"].tolist() == pytest.approx([30 * 5 * 65536 / 2**20] * 2)
    assert not cached["flags"].str.contains("cache warming").any()
    assert math.isnan(cells.loc["lvm-backing-only", "cache_read_hit_ratio"])
    table = tables.cache_layouts(cells.reset_index()).data.set_index("layout")
    assert table.loc["lvm-cache-writeback", "cache_read_hit_ratio"] == pytest.approx(0.95)
    assert table.loc["lvm-cache-writeback", "trials"] == 2 and table.loc["lvm-backing-only", "trials"] == 1
    # The report: the table, and the cache's panels for the group its trials are in …
    written = report.report(tmp_path / "run")
    names = sorted(path.name for path in written.files)
    assert "cache_layouts.csv" in names
    assert [name for name in names if name.startswith("cache_") and name.endswith(".png")] == [
        "cache_localhost_xfs_oltp_t2.png"], names
    # … and none for trials without a cache.log (the earlier figure pruned).
    for log in (tmp_path / "run").rglob("cache.log"):
        log.unlink()
    report.report(tmp_path / "run")
    assert not list((tmp_path / "run" / "plots").glob("cache_*.png"))


def test_a_cache_still_warming_while_measured_is_flagged_by_the_report_as_by_the_host(tmp_path) -> None:
    # From 50 % hits at the driver's start to 95 % at its 30th second.
    cells = stats.cells(frame.load(cache_run(tmp_path / "run", lambda second: min(0.95, 0.5 + 0.015 * second))))
    cached = cells[cells["layout"] == "lvm-cache-writeback"]
    assert cached["flags"].str.contains("cache warming: read hit ratio 0.").all(), cached["flags"].tolist()
    first, second = cached.iloc[0][["cache_read_hit_ratio_first_half", "cache_read_hit_ratio_second_half"]]
    assert second - first > flags.WARMING_RISE
    # The host's summary of the same log, on the same window, gives the same halves.
    directory = tmp_path / "run" / cached.iloc[0]["trial"]
    record = json.loads((directory / "trial.json").read_text())
    window = collected.Window(dt.datetime.fromisoformat(record["times"]["started"].replace("Z", "+00:00")),
                              record["durations"]["warmup_s"], 1, 30)
    summary = collected.cache_summary(window, collected.cache_samples((directory / "cache.log").read_text())[0])
    assert summary["read_hit_ratio_halves"] == pytest.approx([first, second])
    assert summary["read_hit_ratio"] == pytest.approx(cached.iloc[0]["cache_read_hit_ratio"])


def cache_start_of(state: str = "cold", used: object = 0, total: object = 8000) -> dict:
    return {"state": state, "made_s": 9.5 if state == "cold" else None,
            "counters": {"target": "cache", "used_blocks": used, "total_blocks": total, "read_hits": 0}}


def with_cache_start(directory: Path, cache_start: object) -> Path:
    path = directory / "trial.json"
    record = json.loads(path.read_text())
    record["cache_start"] = cache_start
    path.write_text(json.dumps(record))
    return directory


def test_a_cold_and_a_warm_start_are_told_apart_with_the_blocks_the_cache_held(tmp_path) -> None:
    run = tmp_path / "run"
    for layout, cache_start in (("lvm-cache-writeback", cache_start_of("warm", 4000)),
                                ("lvm-cache-writeback-cold", cache_start_of("cold", 0))):
        with_cache_start(write_trial(run, Trial(tps=steady(30, 500.0, 0.01), layout=layout, members=2)), cache_start)
    write_trial(run, Trial(tps=steady(30, 100.0, 0.01, seed=7), layout="lvm-backing-only", members=2, seed=7))
    cells = stats.cells(frame.load(run)).set_index("layout")
    assert cells.loc["lvm-cache-writeback", ["cache_start", "cache_blocks_at_start"]].tolist() == ["warm", 4000]
    assert cells.loc["lvm-cache-writeback-cold", ["cache_start", "cache_blocks_at_start"]].tolist() == ["cold", 0]
    assert cells.loc["lvm-backing-only", "cache_start"] == ""
    table = tables.cache_layouts(cells.reset_index())
    shown = table.display.set_index("layout")
    assert shown.loc["lvm-cache-writeback-cold", ["start", "blocks cached at start"]].tolist() == ["cold", "0"]
    assert shown.loc["lvm-cache-writeback", ["start", "blocks cached at start"]].tolist() == ["warm", "4,000"]
    assert shown.loc["lvm-backing-only", ["start", "blocks cached at start"]].tolist() == ["-", "–"]


def test_a_cold_trial_that_does_not_say_its_cache_was_made_anew_is_marked(tmp_path) -> None:
    write_trial(tmp_path / "run", Trial(tps=steady(20, 40.0, 0.0), layout="lvm-cache-writeback-cold", members=2))
    [marks] = frame.load(tmp_path / "run").trials["marks"].tolist()
    assert marks == "on lvm-cache-writeback-cold but trial.json does not say its cache was made anew (cache_start)"


@pytest.mark.parametrize(("layout", "cache_start", "refusal"), [
    ("lvm-cache-writeback-cold", cache_start_of("lukewarm"), r"cache_start\.state is 'lukewarm', none of warm, cold"),
    ("lvm-cache-writeback-cold", cache_start_of("warm"), r"cache_start\.state is warm but its layout "
                                                         r"lvm-cache-writeback-cold starts cold"),
    ("lvm-backing-only", cache_start_of("warm"), r"its layout lvm-backing-only starts with no cache"),
    ("lvm-cache-writeback-cold", cache_start_of(used=10 ** 400), r"cache_start\.counters\.used_blocks is 1000"),
    ("lvm-cache-writeback-cold", cache_start_of(used=9000), r"cache_start\.counters say 9000 of 8000 blocks used"),
    ("lvm-cache-writeback-cold", cache_start_of(total=None), r"say 0 of None blocks used, not a cache's"),
    ("lvm-cache-writeback-cold", {**cache_start_of(), "made_s": None}, r"cache_start\.made_s is None: a cold start says"),
    ("lvm-cache-writeback-cold", {**cache_start_of(), "made_s": "9"}, r"cache_start\.made_s is '9', not a number"),
    ("lvm-cache-writeback", {**cache_start_of("warm"), "made_s": 3.0}, r"cache_start\.made_s is 3\.0: a cold start"),
])
def test_a_damaged_cache_start_is_one_line_naming_the_file(tmp_path, layout, cache_start, refusal) -> None:
    directory = with_cache_start(write_trial(tmp_path / "run", Trial(tps=steady(20, 40.0, 0.0), layout=layout,
                                                                     members=2)), cache_start)
    with pytest.raises(record.RecordError, match=refusal) as refused:
        frame.load(tmp_path / "run")
    assert str(refused.value).startswith(str(directory / "trial.json")) and "\n" not in str(refused.value)


class LvmStandIn:
    """A test double for LVM and dmsetup, which this kernel cannot run (no device-mapper here; the
    real commands run in the VM test host): records each command, answers `lvs` with the volume
    group as `volumes` and `dmsetup status` with a status line as the VM's dm-cache printed one,
    and fails the command that holds `fail_on`."""

    def __init__(self, status: str, volumes: str = "  bench cache\n", fail_on: str | None = None):
        self.commands: list[list[str]] = []
        self.status, self.volumes, self.fail_on = status, volumes, fail_on

    def __call__(self, argv, timeout=600):
        self.commands.append(argv)
        if self.fail_on and self.fail_on in argv:
            raise trial_module.TrialError(f"{' '.join(argv[:2])} exited 5: Cannot split cache volume")
        said = {"dmsetup": self.status, "lvs": self.volumes}.get(argv[0], "")
        return subprocess.CompletedProcess(argv, 0, stdout=said, stderr="")


def on_cache(layout: str, target: str | None = "cache") -> dict:
    return {"path": "/dev/innomatrix/bench", "layout": {"name": layout, "members_given": ["/dev/vdb", "/dev/nvme0n1"],
                                                       "read_back": {"target": target}}}


LVS = ["lvs", "--noheadings", "-o", "lv_name,segtype", "innomatrix"]
STATUS = ["dmsetup", "status", "--noflush", "innomatrix-bench"]


def test_a_cold_cache_is_made_anew_before_the_trial_and_a_warm_one_is_only_read(monkeypatch) -> None:
    empty = "0 2088960 cache 8 24/2048 128 0/8000 0 0 0 0 0 0 0 2 metadata2 writeback 2 migration_threshold 2048 mq 0 rw -"
    lvm = LvmStandIn(empty)
    monkeypatch.setattr(trial_module, "run", lvm)
    trial: dict = {}
    trial_module.start_cache(on_cache("lvm-cache-writeback-cold"), trial)
    assert lvm.commands == [LVS, *layouts.recache_commands("lvm-cache-writeback-cold", ["/dev/vdb", "/dev/nvme0n1"],
                                                           {"bench": "cache"}), STATUS]
    assert lvm.commands[1] == ["lvconvert", "--yes", "--splitcache", "innomatrix/bench"]
    assert trial["cache_start"]["state"] == "cold" and trial["cache_start"]["made_s"] >= 0
    assert trial["cache_start"]["counters"]["used_blocks"] == 0
    warm = LvmStandIn(lines(WRITEBACK)[1].split("\t")[1])
    monkeypatch.setattr(trial_module, "run", warm)
    trial = {}
    trial_module.start_cache(on_cache("lvm-cache-writeback"), trial)
    assert warm.commands == [STATUS]
    assert (trial["cache_start"]["state"], trial["cache_start"]["made_s"]) == ("warm", None)
    assert trial["cache_start"]["counters"]["used_blocks"] == 5134
    trial = {}
    trial_module.start_cache({"path": "/dev/vdb", "layout": None}, trial)  # no cache: nothing run, nothing said
    trial_module.start_cache(on_cache("lvm-backing-only", target="linear"), trial)
    assert trial == {}


def test_a_cold_cache_that_cannot_be_made_anew_fails_its_trial_and_unread_counters_are_said(monkeypatch) -> None:
    monkeypatch.setattr(trial_module, "run", LvmStandIn("", fail_on="--splitcache"))
    with pytest.raises(trial_module.TrialError, match=r"^the cold cache was not made anew: lvconvert --yes exited 5"):
        trial_module.start_cache(on_cache("lvm-cache-writeback-cold"), {})
    # A cache layout whose build read back no cache: never a trial said to be on one.
    with pytest.raises(trial_module.TrialError, match=r"^layout lvm-cache-writeback-cold has no cache in its read-back"):
        trial_module.start_cache(on_cache("lvm-cache-writeback-cold", target="linear"), {})
    monkeypatch.setattr(trial_module, "run", LvmStandIn("0 2088960 cache 8 24/2048"))
    trial: dict = {}
    trial_module.start_cache(on_cache("lvm-cache-writeback"), trial)
    assert trial["cache_start"]["counters_unread"].startswith("a dm-cache status line cut short")


def test_a_signal_while_lvm_remakes_the_cache_waits_for_it(monkeypatch) -> None:
    # subprocess.run kills its command when interrupted: a Ctrl-C must not cut an lvconvert short.
    done: list[str] = []

    class Interrupted(LvmStandIn):
        def __call__(self, argv, timeout=600):
            if "--splitcache" in argv:
                signal.raise_signal(signal.SIGINT)  # Ctrl-C while LVM detaches the cache
            done.append(argv[0])
            return super().__call__(argv, timeout)

    monkeypatch.setattr(trial_module, "run", Interrupted(""))
    # Ctrl-C unwinds, as the trial module's own handler makes it do (a test run in the background
    # inherits SIGINT ignored, and nothing would be raised at all).
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            trial_module.start_cache(on_cache("lvm-cache-writeback-cold"), {})
    finally:
        signal.signal(signal.SIGINT, before)
    assert done == ["lvs", "lvconvert", "lvremove", "lvcreate", "lvconvert"]  # every command ran to its end
