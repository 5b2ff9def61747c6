"""Layouts over several members (innomatrix_host.layouts): the geometry, the commands, and which
members the suite may touch. The kernel's side (md, device-mapper) runs in the VM test host."""

from __future__ import annotations

import subprocess

import pytest
from innomatrix_host import layouts
from innomatrix_host.layouts import LAYOUTS, LayoutError


@pytest.mark.parametrize("name, members, data, xfs, ext4", [
    ("md-raid0", 4, 4, "-d su=512k,sw=4", "-E stride=128,stripe_width=512"),
    ("md-raid5", 4, 3, "-d su=512k,sw=3", "-E stride=128,stripe_width=384"),
    ("md-raid10", 4, 2, "-d su=512k,sw=2", "-E stride=128,stripe_width=256"),
    ("md-raid10", 3, 3, "-d su=512k,sw=3", "-E stride=128,stripe_width=384"),
    ("lvm-stripe", 2, 2, "-d su=64k,sw=2", "-E stride=16,stripe_width=32"),
])
def test_the_filesystem_is_aligned_to_the_data_members_stripe(name, members, data, xfs, ext4) -> None:
    geometry = layouts.alignment(LAYOUTS[name], members)
    assert geometry["data_members"] == data
    assert geometry["mkfs_options"] == {"xfs": xfs, "ext4": ext4}


def test_one_data_member_has_no_stripe_to_align_to() -> None:
    assert layouts.alignment(LAYOUTS["md-raid0"], 1)["mkfs_options"] == {"xfs": "", "ext4": ""}
    for name in ("lvm-backing-only", "lvm-cache-device-only", "lvm-cache-writeback", "lvm-writecache"):
        assert layouts.alignment(LAYOUTS[name], 2) == {"stripe_unit_kib": None, "data_members": 1,
                                                       "mkfs_options": {"xfs": "", "ext4": ""}}


def test_a_cache_is_built_over_the_whole_cache_device_in_front_of_the_whole_backing_device() -> None:
    hdd, ssd = "/dev/vdb", "/dev/nvme0n1"
    group = [["pvcreate", "--yes", hdd, ssd], ["vgcreate", "--addtag", "innomatrix", "innomatrix", hdd, ssd]]
    on = ["lvcreate", "--yes", "--wipesignatures", "y", "--type", "linear", "--extents", "100%PVS", "--name", "bench",
          "innomatrix"]
    assert layouts.build_commands("lvm-backing-only", [hdd, ssd]) == [*group, [*on, hdd]]
    assert layouts.build_commands("lvm-cache-device-only", [hdd, ssd]) == [*group, [*on, ssd]]
    cache_volume = ["lvcreate", "--yes", "--wipesignatures", "y", "--zero", "y", "--type", "linear", "--extents",
                    "100%PVS", "--name", "cache", "innomatrix", ssd]
    assert layouts.build_commands("lvm-cache-writeback", [hdd, ssd]) == [*group, [*on, hdd], cache_volume, [
        "lvconvert", "--yes", "--type", "cache", "--cachevol", "innomatrix/cache", "--cachemode", "writeback",
        "--cachepolicy", "smq", "--chunksize", "64k", "innomatrix/bench"]]
    # A writecache attaches only from an inactive volume (LVM refused the active one in the VM).
    assert layouts.build_commands("lvm-writecache", [hdd, ssd])[-3:] == [cache_volume, [
        "lvchange", "--activate", "n", "innomatrix/cache"], [
        "lvconvert", "--yes", "--type", "writecache", "--cachevol", "innomatrix/cache",
        "--cachesettings", "high_watermark=50", "--cachesettings", "low_watermark=45", "innomatrix/bench"]]
    assert layouts.member_roles(LAYOUTS["lvm-cache-writethrough"], [hdd, ssd]) == [f"backing: {hdd}", f"cache: {ssd}"]
    assert layouts.member_roles(LAYOUTS["lvm-stripe"], [hdd, ssd]) == [hdd, ssd]
    with pytest.raises(LayoutError, match=r"lvm-cache-writeback is over exactly 2 members \(backing, cache device\); 3 given"):
        layouts.check("lvm-cache-writeback", [hdd, ssd, "/dev/vdc"])



def test_a_cold_cache_is_the_warm_ones_twin_made_anew_before_each_trial() -> None:
    hdd, ssd = "/dev/vdb", "/dev/nvme0n1"
    warm = [name for name in LAYOUTS if f"{name}-cold" in LAYOUTS]
    assert warm == ["lvm-cache-writeback", "lvm-cache-writethrough", "lvm-writecache", "bcache-writeback",
                    "bcache-writethrough"]
    assert {layouts.cache_start(name) for name in warm} == {"warm"}
    attached = {"bench": "cache"}
    for name in (name for name in warm if LAYOUTS[name]["kind"] == "lvm"):  # bcache's: tests/unit/test_bcache.py
        # The same cache in every other respect, so the twins compare the start alone; a warm layout
        # carries no `start` (its cells keep the keys they had before there were twins).
        assert "start" not in LAYOUTS[name] and LAYOUTS[f"{name}-cold"] == {**LAYOUTS[name], "start": "cold"}
        assert layouts.cache_start(f"{name}-cold") == "cold"
        built = layouts.build_commands(f"{name}-cold", [hdd, ssd])
        assert built == layouts.build_commands(name, [hdd, ssd])
        # Detached (LVM writes dirty blocks back first), its volume removed, then made and attached
        # again by the build's own last commands: a cache volume on the cache device, the same settings.
        again = layouts.recache_commands(f"{name}-cold", [hdd, ssd], {"bench": LAYOUTS[name]["type"]})
        assert again[:2] == [["lvconvert", "--yes", "--splitcache", "innomatrix/bench"],
                             ["lvremove", "--yes", "innomatrix/cache"]]
        assert again[2:] == built[3:] and again[2][:2] == ["lvcreate", "--yes"] and again[2][-1] == ssd
    assert layouts.cache_start("lvm-backing-only") is None and layouts.cache_start("no-such") is None
    with pytest.raises(LayoutError, match="lvm-stripe has no cache to make anew"):
        layouts.recache_commands("lvm-stripe", [hdd, ssd], attached)


def test_a_remaking_that_stopped_part_way_is_taken_up_where_it_stopped() -> None:
    hdd, ssd = "/dev/vdb", "/dev/nvme0n1"
    attach = layouts.attach_commands(LAYOUTS["lvm-cache-writeback-cold"], ssd)
    # Detached, the cache volume left beside the benchmark's: removed, then made and attached.
    assert layouts.recache_commands("lvm-cache-writeback-cold", [hdd, ssd], {"bench": "linear", "cache": "linear"}) \
        == [["lvremove", "--yes", "innomatrix/cache"], *attach]
    # Removed too: made and attached.
    assert layouts.recache_commands("lvm-cache-writeback-cold", [hdd, ssd], {"bench": "linear"}) == attach
    with pytest.raises(LayoutError, match=r"no volume innomatrix/bench to put a cache in front of \(volumes: cache\)"):
        layouts.recache_commands("lvm-cache-writeback-cold", [hdd, ssd], {"cache": "linear"})
    assert layouts.volume_types("  bench cache\n  other linear \n\n") == {"bench": "cache", "other": "linear"}
    # The cache volume on its own is the suite's: a remaking cut short never blocks the layout's removal.
    assert "innomatrix-cache" in layouts.SUITE_DM_NAMES


@pytest.mark.parametrize("table, fields", [
    ("0 4194304 striped 4 128 252:16 2048 252:32 2048 252:48 2048 252:64 2048",
     {"target": "striped", "stripes": 4, "stripe_kib": 64}),
    ("0 2088960 cache 253:3 253:2 253:1 128 2 metadata2 writeback smq 0",
     {"target": "cache", "stripes": None, "stripe_kib": None, "cache_device": "253:2", "origin_device": "253:1",
      "chunk_kib": 64, "features": ["metadata2", "writeback"], "cache_mode": "writeback", "policy": "smq",
      "policy_args": []}),
    # No mode among the features: dm-cache's default, writethrough.
    ("0 2088960 cache 253:3 253:2 253:1 128 1 metadata2 smq 2 migration_threshold 2048",
     {"target": "cache", "stripes": None, "stripe_kib": None, "cache_device": "253:2", "origin_device": "253:1",
      "chunk_kib": 64, "features": ["metadata2"], "cache_mode": "writethrough", "policy": "smq",
      "policy_args": ["migration_threshold", "2048"]}),
    ("0 2088960 writecache s 253:1 253:2 4096 4 high_watermark 50 low_watermark 45",
     {"target": "writecache", "stripes": None, "stripe_kib": None, "origin_device": "253:1", "cache_device": "253:2",
      "block_bytes": 4096, "settings": ["high_watermark", "50", "low_watermark", "45"]}),
    ("0 2088960 linear 252:16 2048", {"target": "linear", "stripes": None, "stripe_kib": None}),
    # Cut short: what it cannot read stays unread, never a traceback.
    ("0 2088960 cache 253:3 253:2", {"target": "cache", "stripes": None, "stripe_kib": None}),
    ("", {"target": "", "stripes": None, "stripe_kib": None}),
])
def test_a_device_mapper_table_is_read_for_its_layout(table, fields) -> None:
    assert layouts.dm_table_fields(table.split()) == fields


def test_a_layout_is_refused_when_unknown_short_of_members_or_given_a_member_twice(tmp_path) -> None:
    with pytest.raises(LayoutError, match="unknown layout 'raid6'; accepted: md-raid0, md-raid5"):
        layouts.check("raid6", ["/dev/vdb"])
    with pytest.raises(LayoutError, match="md-raid5 needs at least 3 members; 2 given"):
        layouts.check("md-raid5", ["/dev/vdb", "/dev/vdc"])
    # Twice by two names: a stable name and the kernel's.
    link = tmp_path / "virtio-im-m1"
    link.symlink_to("/dev/vdb")
    with pytest.raises(LayoutError, match=f"/dev/vdb is listed twice among the members of md-raid0 \\(as {link} too\\)"):
        layouts.check("md-raid0", [str(link), "/dev/vdb"])


def test_the_suites_arrays_and_volume_groups_carry_its_tag() -> None:
    md = layouts.build_commands("md-raid5", ["/dev/vdb", "/dev/vdc", "/dev/vdd"])
    assert md == [["mdadm", "--create", "/dev/md/md-raid5", "--run", "--force", "--assume-clean", "--level=5",
                   "--raid-devices=3", "--chunk=512K", "--metadata=1.2", "--homehost=innomatrix", "--name=md-raid5",
                   "/dev/vdb", "/dev/vdc", "/dev/vdd"], ["wipefs", "--all", "/dev/md/md-raid5"]]
    lvm = layouts.build_commands("lvm-stripe", ["/dev/vdb", "/dev/vdc"])
    assert ["vgcreate", "--addtag", "innomatrix", "innomatrix", "/dev/vdb", "/dev/vdc"] in lvm
    assert "--stripes=2" in lvm[-1] and "--stripesize=64k" in lvm[-1]


def state(**fields) -> dict:
    return {"member": "/dev/disk/by-id/virtio-im-m1", "name": "vdb", "holders": [], "type": "", **fields}


@pytest.mark.parametrize("fields, reason", [
    ({}, None),
    ({"type": "linux_raid_member", "md_name": "innomatrix:md-raid0"}, None),
    ({"type": "LVM2_member", "vg": "innomatrix", "vg_tags": ["innomatrix"]}, None),
    ({"type": "linux_raid_member", "md_name": "db1:0"},
     "/dev/disk/by-id/virtio-im-m1 is a member of md array db1:0, which the suite did not make"),
    # A user's array on a host named innomatrix (mdadm's default homehost is the hostname).
    ({"type": "linux_raid_member", "md_name": "innomatrix:home"},
     "/dev/disk/by-id/virtio-im-m1 is a member of md array innomatrix:home, which the suite did not make"),
    ({"type": "LVM2_member", "vg": "data", "vg_tags": []},
     "/dev/disk/by-id/virtio-im-m1 is an LVM physical volume of volume group data, which is not the suite's "
     "(innomatrix, tagged innomatrix)"),
    # Named like the suite's but untagged: someone else's.
    ({"type": "LVM2_member", "vg": "innomatrix", "vg_tags": []},
     "/dev/disk/by-id/virtio-im-m1 is an LVM physical volume of volume group innomatrix, which is not the suite's "
     "(innomatrix, tagged innomatrix)"),
    ({"type": "xfs"}, "/dev/disk/by-id/virtio-im-m1 holds a xfs signature; a layout is built only on blank "
                      "members or the suite's own (name it in wipe_device if it may go)"),
    ({"holders": ["dm-3"]}, "/dev/disk/by-id/virtio-im-m1 is held by dm-3, which the suite did not make "
                            "(md, LVM, dm or crypt)"),
    ({"type": "dos partition table"}, "/dev/disk/by-id/virtio-im-m1 holds a dos partition table signature; a layout "
                                      "is built only on blank members or the suite's own (name it in wipe_device if it may go)"),
    ({"partitions": ["vdb1"]}, "/dev/disk/by-id/virtio-im-m1 has partitions (vdb1); a layout is built only on whole, "
                               "blank members (name it in wipe_device if they may go)"),
    ({"type": "LVM2_member", "vg": "", "vg_tags": []},
     "/dev/disk/by-id/virtio-im-m1 is an LVM physical volume in no volume group (an interrupted removal of the "
     "suite's stripe can leave one): if it is the suite's, name it in wipe_device"),
    # What blkid cannot read is never blank, not even with wipe_device.
    ({"unreadable": "blkid -p exited 8: ambivalent result"},
     "/dev/disk/by-id/virtio-im-m1 could not be probed (blkid -p exited 8: ambivalent result); a member that "
     "cannot be read is never taken for blank"),
])
def test_only_blank_members_and_the_suites_own_leftovers_may_be_used(fields, reason) -> None:
    assert layouts.refusal(state(**fields), lambda holder: holder == "md127") == reason


def test_what_wipe_device_lets_go_of_is_the_only_thing_wiped() -> None:
    orphan = state(member="/dev/vdb", type="LVM2_member", vg="", vg_tags=[])
    assert layouts.refusal(orphan, lambda holder: False, may_wipe=True) is None
    unreadable = state(member="/dev/vdc", unreadable="blkid -p exited 4")
    assert layouts.refusal(unreadable, lambda holder: False, may_wipe=True).startswith("/dev/vdc could not be probed")
    states = [orphan, state(member="/dev/vdc", type="dos partition table"), state(member="/dev/vdd", partitions=["vdd1"]),
              state(member="/dev/vde", type="xfs"), state(member="/dev/vdf"),
              state(member="/dev/vdg", type="linux_raid_member", md_name="innomatrix:md-raid0")]
    everyone = {s["member"] for s in states}
    assert layouts.wipe_commands(states, everyone) == [
        ["pvremove", "--yes", "/dev/vdb"], ["wipefs", "--all", "/dev/vdc"], ["wipefs", "--all", "/dev/vdd"],
        ["wipefs", "--all", "/dev/vde"]]
    assert layouts.wipe_commands(states, {"/dev/vde"}) == [["wipefs", "--all", "/dev/vde"]]


def test_a_member_is_read_by_blkid_and_what_it_cannot_read_is_not_blank(tmp_path) -> None:
    # A real partition table (a DOS one, written by hand) read by the real blkid.
    image = tmp_path / "member.img"
    with image.open("wb") as disk:
        disk.truncate(8 << 20)
        disk.seek(446)
        disk.write(bytes([0, 0, 2, 0, 0x83, 0, 0, 0]) + (2048).to_bytes(4, "little") + (8192).to_bytes(4, "little"))
        disk.seek(510)
        disk.write(b"\x55\xaa")
    assert layouts.member_state(str(image))["type"] == "dos partition table"
    blank = tmp_path / "blank.img"
    blank.write_bytes(bytes(1 << 20))
    found = layouts.member_state(str(blank))
    assert (found["type"], found.get("unreadable")) == ("", None)

    # blkid's own failures (4: usage or I/O, 8: two signatures at once) cannot be made on demand.
    def failing_blkid(argv):  # test double: blkid failing
        return subprocess.CompletedProcess(argv, 8, "", "ambivalent result\n")
    assert layouts.member_state(str(blank), failing_blkid)["unreadable"] == "blkid -p exited 8: ambivalent result"


def test_removal_names_only_what_the_suite_made() -> None:
    def runner(argv):
        # md127 is the suite's array, md5 someone else's.
        name = "innomatrix:md-raid0" if argv[-1] == "/dev/md127" else "db1:5"
        return subprocess.CompletedProcess(argv, 0, f"MD_NAME={name}\n", "")

    states = [state(member="/dev/vdb", type="linux_raid_member", md_name="innomatrix:md-raid0", holders=["md127"]),
              state(member="/dev/vdc", type="linux_raid_member", md_name="innomatrix:md-raid0", holders=["md127"]),
              state(member="/dev/vdd")]
    assert layouts.removal_commands(states, runner) == [
        ["mdadm", "--stop", "/dev/md127"],
        ["mdadm", "--zero-superblock", "/dev/vdb"], ["mdadm", "--zero-superblock", "/dev/vdc"]]
    lvm = [state(member="/dev/vdb", type="LVM2_member", vg="innomatrix", vg_tags=["innomatrix"])]
    assert layouts.removal_commands(lvm, runner) == [["vgremove", "--yes", "--force", "innomatrix"],
                                                     ["pvremove", "--yes", "/dev/vdb"]]
    assert layouts.removal_commands([state(member="/dev/vdd")], runner) == []


def test_the_io_hints_are_the_queues_numbers_or_none(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(layouts, "SYS_BLOCK", tmp_path)
    (tmp_path / "md127" / "queue").mkdir(parents=True)
    (tmp_path / "md127" / "queue" / "minimum_io_size").write_text("524288\n")
    (tmp_path / "md127" / "queue" / "optimal_io_size").write_text("1572864\n")
    assert layouts.io_hints("md127") == {"io_min_bytes": 524288, "io_opt_bytes": 1572864}
    # Absent, or not what sysfs writes (ASCII digits): never a number read into something else.
    (tmp_path / "md127" / "queue" / "optimal_io_size").write_text("١٢\n")
    assert layouts.io_hints("md127") == {"io_min_bytes": 524288, "io_opt_bytes": None}
    assert layouts.io_hints("md9") == {"io_min_bytes": None, "io_opt_bytes": None}


@pytest.mark.parametrize("name, uuid, ours", [
    ("innomatrix-bench", "LVM-abc", True),
    # A cache's hidden volumes, as Debian 12's LVM names them (seen in the VM).
    ("innomatrix-bench_corig", "LVM-abc-real", True),
    ("innomatrix-bench_wcorig", "LVM-abc-real", True),
    ("innomatrix-cache_cvol", "LVM-abc", True),
    ("innomatrix-cache_cvol-cdata", "LVM-abc-cdata", True),
    ("innomatrix-cache_cvol-cmeta", "LVM-abc-cmeta", True),
    # Someone's volume in a group that is called innomatrix; a group called innomatrix-data; a
    # device-mapper target of another kind that borrows the name.
    ("innomatrix-home", "LVM-abc", False),
    ("innomatrix--data-bench", "LVM-abc", False),
    ("innomatrix-bench", "CRYPT-LUKS2-abc-innomatrix-bench", False),
    ("", "", False),
])
def test_only_the_volumes_the_suite_makes_hold_a_member_as_its_own(tmp_path, monkeypatch, name, uuid, ours) -> None:
    monkeypatch.setattr(layouts, "SYS_BLOCK", tmp_path)
    (tmp_path / "dm-3" / "dm").mkdir(parents=True)
    (tmp_path / "dm-3" / "dm" / "name").write_text(name + "\n")
    (tmp_path / "dm-3" / "dm" / "uuid").write_text(uuid + "\n")
    assert layouts.holder_is_ours("dm-3") is ours
