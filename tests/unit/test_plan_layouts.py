"""Storage layouts in the plan: one pass per layout and member count and filesystem, each under
its own directory, its key naming the layout, its parameters and the members it is built over."""

from __future__ import annotations

import dataclasses

import pytest

from innomatrix import layout, plan
from innomatrix.plan import PlanError
from test_plan import CTX, ctx, knobs

DEVICES = ctx(member_ids=("serial:m1", "serial:m2", "serial:m3", "serial:m4"))


def test_a_layout_runs_for_each_member_count_over_the_first_devices() -> None:
    the_plan = plan.expand(knobs(filesystems="xfs", variants="A", layouts="plain,md-raid0", members="1,2,4"), DEVICES, {})
    assert [(p["storage"]["layout"], p["storage"]["members"], p["filesystem"]) for p in the_plan["passes"]] == [
        ("plain", 1, "xfs"), ("md-raid0", 1, "xfs"), ("md-raid0", 2, "xfs"), ("md-raid0", 4, "xfs")]
    assert [p["name"] for p in the_plan["passes"]] == ["xfs", "md-raid0-m1 xfs", "md-raid0-m2 xfs", "md-raid0-m4 xfs"]
    assert [p["storage"].get("member_ids") for p in the_plan["passes"]] == [
        None, ["serial:m1"], ["serial:m1", "serial:m2"], ["serial:m1", "serial:m2", "serial:m3", "serial:m4"]]
    paths = [cell["path"] for cell in the_plan["cells"]]
    assert paths == ["db1/xfs/oltp/A/bp-64M/t4/r1", "db1/md-raid0-m1/xfs/oltp/A/bp-64M/t4/r1",
                     "db1/md-raid0-m2/xfs/oltp/A/bp-64M/t4/r1", "db1/md-raid0-m4/xfs/oltp/A/bp-64M/t4/r1"]
    # The report reads each path back to the cell it stands for.
    assert [(w["layout"], w["members"]) for w in map(layout.parse, paths)] == [
        ("plain", 1), ("md-raid0", 1), ("md-raid0", 2), ("md-raid0", 4)]
    assert the_plan["cells"][3]["dataset"]["path"].startswith("db1/md-raid0-m4/xfs/oltp/dataset-")


def test_no_member_count_means_every_device() -> None:
    the_plan = plan.expand(knobs(filesystems="ext4", layouts="lvm-stripe"), DEVICES, {})
    assert [p["storage"]["members"] for p in the_plan["passes"]] == [4]


def test_the_filesystem_on_a_layout_is_aligned_to_its_stripe_before_the_users_options() -> None:
    the_plan = plan.expand(knobs(layouts="md-raid5", members=[4], mkfs_options={"xfs": "-m reflink=1"}), DEVICES, {})
    assert {p["filesystem"]: p["mkfs_options"] for p in the_plan["passes"]} == {
        "ext4": "-E stride=128,stripe_width=384", "xfs": "-d su=512k,sw=3 -m reflink=1"}
    # mke2fs keeps only its last -E: the user's extended options join the alignment's.
    ext4 = {"ext4": "-E lazy_itable_init=0 -O ^has_journal -Enodiscard", "xfs": ""}
    the_plan = plan.expand(knobs(layouts="md-raid5", members=[4], filesystems="ext4", mkfs_options=ext4), DEVICES, {})
    assert [p["mkfs_options"] for p in the_plan["passes"]] == [
        "-E stride=128,stripe_width=384,lazy_itable_init=0,nodiscard -O ^has_journal"]


def test_the_key_names_the_layout_its_members_and_who_they_are() -> None:
    def key(knob_changes: dict, context: plan.Context = DEVICES) -> str:
        return plan.expand(knobs(filesystems="xfs", **knob_changes), context, {})["cells"][0]["key"]

    plain = key({})
    raid0 = key({"layouts": "md-raid0", "members": [2]})
    assert len({plain, raid0, key({"layouts": "lvm-stripe", "members": [2]}),
                key({"layouts": "md-raid0", "members": [4]})}) == 4
    # Other disks in the same places: other results.
    assert key({"layouts": "md-raid0", "members": [2]}, dataclasses.replace(DEVICES, member_ids=(
        "serial:m9", "serial:m2", "serial:m3", "serial:m4"))) != raid0
    # The plain device's key does not depend on the host's devices list.
    assert key({}, CTX) == plain


@pytest.mark.parametrize("changes, context, message", [
    ({"layouts": "md-raid0"}, CTX,
     "layouts: md-raid0 is built over the host's devices, and db1 lists none; give the host devices: "
     "[/dev/disk/by-id/…, …]"),
    ({"layouts": "md-raid0", "members": "2,8"}, DEVICES, "members: md-raid0 over 8 members needs 8 devices; db1 lists 4"),
    ({"layouts": "md-raid5", "members": "2"}, DEVICES, "members: md-raid5 needs at least 3 members; members asks 2"),
    ({"layouts": "raid6"}, DEVICES, "layouts: unknown raid6; accepted: plain, md-raid0, md-raid5, md-raid10, lvm-stripe, "
                                    "lvm-backing-only, lvm-cache-device-only, lvm-cache-writeback, lvm-cache-writethrough, "
                                    "lvm-writecache, bcache-writeback, bcache-writethrough, lvm-cache-writeback-cold, "
                                    "lvm-cache-writethrough-cold, lvm-writecache-cold, bcache-writeback-cold, "
                                    "bcache-writethrough-cold"),
    ({"layouts": "lvm-cache-writeback"}, ctx(member_ids=("serial:hdd",)),
     "members: lvm-cache-writeback over 2 members needs 2 devices (the backing and the cache device, in that order); "
     "db1 lists 1"),
    ({"layouts": "md-raid0", "members": "2,02"}, DEVICES, "members: 2 and 02 are the same value; list each once"),
])
def test_a_layout_the_host_cannot_build_is_refused_in_one_line(changes, context, message) -> None:
    with pytest.raises(ValueError) as raised:
        plan.expand(knobs(**changes), context, {})
    assert str(raised.value) == message
    assert isinstance(raised.value, (PlanError, plan.KnobError))


def test_the_plan_says_what_it_would_build() -> None:
    lines = plan.describe(plan.expand(knobs(layouts="md-raid0", members=[2]), DEVICES, {}))
    assert ("would build md-raid0 over 2 member(s) (serial:m1, serial:m2): mkfs.xfs -d su=512k,sw=2; "
            "mkfs.ext4 -E stride=128,stripe_width=256; a layout the suite left on them is removed first, never reassembled; "
            "removed when its passes end") in lines


def test_seed_000s_three_way_comparison_is_one_matrix_over_the_backing_and_the_cache_device() -> None:
    # A cache layout is over the first two devices whatever `members` sweeps (the stripe's 1 and 4
    # here), backing first: the backing device alone, the cache device alone and the cache in front
    # of the backing device sit side by side under one member count, so the report compares them.
    names = "lvm-stripe,lvm-backing-only,lvm-cache-device-only,lvm-cache-writeback"
    the_plan = plan.expand(knobs(filesystems="xfs", layouts=names, members="1,4"), DEVICES, {})
    assert [(p["storage"]["layout"], p["storage"]["members"], p["storage"]["member_ids"]) for p in the_plan["passes"]] == [
        ("lvm-stripe", 1, ["serial:m1"]), ("lvm-stripe", 4, ["serial:m1", "serial:m2", "serial:m3", "serial:m4"]),
        ("lvm-backing-only", 2, ["serial:m1", "serial:m2"]), ("lvm-cache-device-only", 2, ["serial:m1", "serial:m2"]),
        ("lvm-cache-writeback", 2, ["serial:m1", "serial:m2"])]
    # No stripe: nothing to align to.
    assert {p["mkfs_options"] for p in the_plan["passes"][2:]} == {""}
    lines = plan.describe(the_plan)
    assert ("would build lvm-cache-writeback over 2 member(s) (backing: serial:m1, cache: serial:m2); "
            "a layout the suite left on them is removed first, never reassembled; removed when its passes end") in lines
    # Each layout is its own result: no key is shared between them.
    keys = {name: {cell["key"] for cell in the_plan["cells"] if cell["layout"] == name} for name in names.split(",")}
    assert sum(map(len, keys.values())) == len(set().union(*keys.values()))
