"""The filesystem axis: a point may ask for the emulated disk made with another file system;
the sweep then brings the site up again on such a disk for those points, and only for them."""

from __future__ import annotations

from instore.site import load_site
from instore.study import Point, expand, load_study
from instore.sweep.runner import disk_variants


def test_points_of_another_filesystem_run_on_a_site_rebuilt_with_it() -> None:
    site = load_site("lan-hdd")
    assert site.disk is not None and site.disk.filesystem == "ext4"
    todo = [
        (Point(section="load", fill=4), "a"),
        (Point(section="filesystem", filesystem="ext4"), "b"),
        (Point(section="filesystem", filesystem="xfs"), "c"),
        (Point(section="filesystem", filesystem="xfs", fill=16), "d"),
    ]
    variants = disk_variants(site, todo)
    # the site's own file system first, with the points that ask for it by name: one bring-up
    assert [[k for _, k in points] for _, points in variants] == [["a", "b"], ["c", "d"]]
    assert variants[0][0] is site
    rebuilt = variants[1][0]
    assert rebuilt.disk is not None and rebuilt.disk.filesystem == "xfs"
    assert rebuilt.disk.read_iops == site.disk.read_iops  # only the file system changes
    assert rebuilt.name == site.name


def test_no_points_no_bring_up() -> None:
    assert disk_variants(load_site("lan-hdd"), []) == []


def test_the_filesystem_axis_is_outermost_so_each_disk_is_made_once() -> None:
    study = load_study(overrides={"profile": "full"})
    points = expand(study, "filesystem")
    systems = [p.filesystem for p in points]
    assert systems == sorted(systems, key=systems.index)  # one run per file system
    assert set(systems) == {"ext4", "xfs"} and {p.fill for p in points} == {16, 64}
