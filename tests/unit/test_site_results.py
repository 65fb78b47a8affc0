"""Calibration follows the results directory the caller names (as `--results`, so
`snakemake --directory` moves it too), never the checkout's. A real site on this machine's
disk: no root, nothing started."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml
from instore.calibration import calibration_path, read_calibration, write_calibration
from instore.cli import main
from instore.errors import InstoreError
from instore.site import live as live_module
from instore.site import open_site, upload, verify
from instore.site import real as real_module
from instore.site.command import after_replacing
from instore.site.config import load_site
from instore.site.live import LiveSite

from tests.conftest import write_real_site


def real_site(tmp_path: Path) -> Path:
    """A POSIX endpoint in tmp_path holding the file calibration reads."""
    store = tmp_path / "store"
    store.mkdir()
    (store / "cal.bin").write_bytes(os.urandom(1 << 16))
    path = write_real_site(tmp_path / "r.yaml", {"posix": f"{store}/{{file}}"}, name="r")
    data = yaml.safe_load(path.read_text())
    data["calibration"] = {"file": "cal.bin"}
    path.write_text(yaml.safe_dump(data))
    return path


def test_conditions_read_the_calibration_of_the_results_directory_given(tmp_path: Path) -> None:
    site, results = real_site(tmp_path), tmp_path / "elsewhere"
    write_calibration(results, "r", {"site": "r", "rtt_ms": 1.5})
    with open_site(site, results=results) as live:
        assert live.conditions()["calibration"] == {"site": "r", "rtt_ms": 1.5}
    with open_site(site, results=tmp_path / "empty") as live:
        assert live.conditions()["calibration"] is None


def test_site_calibrate_writes_under_results_of_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    site = real_site(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["site", "calibrate", str(site)]) == 0
    record = json.loads(capsys.readouterr().out)
    assert Path(record["path"]).resolve() == (tmp_path / "results" / "r" / "calibration.json")
    assert read_calibration(Path("results"), "r")["conditions"]["site"] == "r"


def test_site_calibrate_follows_results_option(tmp_path: Path) -> None:
    site, results = real_site(tmp_path), tmp_path / "out"
    assert main(["site", "calibrate", str(site), "--results", str(results)]) == 0
    assert calibration_path(results, "r").is_file()


def test_damaged_calibration_is_an_error_naming_the_fix(tmp_path: Path) -> None:
    path = calibration_path(tmp_path, "r")
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    with pytest.raises(InstoreError, match="rerun `instore site calibrate r`"):
        read_calibration(tmp_path, "r")


def test_calibration_measures_what_the_site_says_without_asking_its_kind(tmp_path: Path) -> None:
    """The real site names its file and size; it has no fio directory and no cold read."""
    live: LiveSite
    with open_site(real_site(tmp_path)) as live:
        assert live.calibration_file() == ("cal.bin", 1 << 16)
        assert live.fio_target() is None and not live.can_read_cold


def test_preflight_asks_the_site_with_its_own_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`instore site preflight` asks the site, which checks with the site file's
    timeouts.preflight_s (no 5 s of the command's own)."""
    data = yaml.safe_load(real_site(tmp_path).read_text())
    data["timeouts"] = {"preflight_s": 0.5}
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump(data))
    asked: list[tuple[dict[str, str], float]] = []
    monkeypatch.setattr(live_module, "check_all", lambda eps, t: asked.append((eps, t)) or [])
    verified: list[tuple[str, list[str], float]] = []
    monkeypatch.setattr(real_module, "verify_endpoint",
                        lambda tmpl, files, t, memo, notes=None, checksum=True: verified.append((tmpl, [f.name for f in files], t)))  # fmt: skip
    assert main(["site", "preflight", str(path)]) == 0
    assert asked == [({"posix": f"{tmp_path}/store/{{file}}"}, 0.5)]
    assert verified == [(f"{tmp_path}/store/{{file}}", ["cal.bin"], 0.5)]


def test_site_status_of_a_name_that_is_no_site_or_a_real_one_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not `up: false`, which reads as an emulated site that is down."""
    assert main(["site", "status", "nosuchsite"]) == 2
    assert "nosuchsite.yaml: no such site file" in capsys.readouterr().err
    assert main(["site", "status", str(real_site(tmp_path))]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("site r is real: nothing of it runs here to report on -- check its "
                        "endpoints with `instore site preflight r`")  # fmt: skip


def test_a_fio_directory_it_cannot_make_names_the_site_files_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Regression: the trial of 2026-11-27 copied the shipped real-site template, whose
    calibration.posix_dir (/mnt/lustre/...) its grid site does not have; fio's "failed to create
    dir" was answered with "check the directory is writable and has space", which does not say
    that the site file names it, nor that a site without a POSIX mount leaves it out."""
    site = real_site(tmp_path)
    (tmp_path / "not-a-dir").write_text("")
    data = yaml.safe_load(site.read_text())
    data["calibration"].update(posix_dir=str(tmp_path / "not-a-dir" / "cal"), fio_seconds=1)
    site.write_text(yaml.safe_dump(data))
    assert main(["site", "calibrate", str(site), "--results", str(tmp_path / "out")]) != 0
    err = capsys.readouterr().err.strip()
    assert "\n" not in err
    assert f"fio on {tmp_path / 'not-a-dir' / 'cal'} failed" in err
    assert f"calibration.posix_dir in {site} names it" in err and "leave it out" in err


def test_an_xcaches_copies_are_checked_by_size_not_read_back_through_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sweep's check of a site with an XCache in front of its root:// (the trial of
    2026-11-28): the storage's copies by size and adler32, the cache's by size only, since an
    XCache reports no adler32 and reading each copy back through it would fill it."""
    local = tmp_path / "ordered-r0.root"
    local.write_bytes(b"root" + bytes(100))
    path = write_real_site(tmp_path / "r.yaml", {
        "xrootd": "root://se:1094//d/{file}", "xcache": "root://cache:1094//d/{file}",
    }, name="r")  # fmt: skip
    asked: dict[str, str | None] = {}

    def found(url: str, size: int, checksum: str | None) -> upload.Copy:
        asked[url] = checksum
        return upload.Copy(size, None)

    monkeypatch.setattr(verify.upload, "found", found)
    monkeypatch.setattr(verify, "first_bytes", lambda url, t: verify.ROOT_MAGIC)
    site = real_module.RealLive(load_site(path), [local.name], tmp_path)
    assert site.check_files([local]) == []
    assert asked["root://se:1094//d/ordered-r0.root"] == verify.local_adler32(local)
    assert asked["root://cache:1094//d/ordered-r0.root"] is None


def _cached_site(tmp_path: Path, purge: bool) -> Path:
    """A real site with an XCache in front of its root://, and a purge command that empties it
    (it leaves a mark) where ``purge``."""
    path = write_real_site(tmp_path / "r.yaml", {
        "xrootd": "root://se:1094//d/{file}", "xcache": "root://cache:1094//d/{file}",
    }, name="r")  # fmt: skip
    if purge:
        data = yaml.safe_load(path.read_text())
        data["tuning"] = {"xcache_purge": ["touch", str(tmp_path / "purged")]}
        path.write_text(yaml.safe_dump(data))
    return path


def test_an_xcache_holding_an_older_copy_is_emptied_and_checked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The trial of 2026-11-28, the quick profile and then the full one: the full profile's
    upload replaced ordered-r0.root at the origin (15.4 MB where the quick one's was 7.8 MB),
    and the XCache still served the quick one's copy; the check stopped the sweep telling the
    user to upload again, which changes nothing behind a cache. With a purge command a sweep's check
    empties the cache and looks again (a preflight only says so); without one it says the cache
    is stale."""
    local = tmp_path / "ordered-r0.root"
    local.write_bytes(b"root" + bytes(100))
    purged = tmp_path / "purged"

    def found(url: str, size: int, checksum: str | None) -> upload.Copy:
        if "cache" in url and not purged.exists():  # the quick profile's copy, smaller
            raise upload.CopyDiffers(url, "size", upload.Remote(size // 2, None), str(size))
        return upload.Copy(size, None)

    monkeypatch.setattr(verify.upload, "found", found)
    monkeypatch.setattr(verify, "first_bytes", lambda url, t: verify.ROOT_MAGIC)
    bare = real_module.RealLive(load_site(_cached_site(tmp_path, purge=False)), [], tmp_path)
    (line,) = bare.check_files([local])
    assert line.startswith("xcache root://cache:1094//d/{file}: size of ")
    assert upload.STALE_CACHE in line and "instore site upload" not in line
    configured = load_site(_cached_site(tmp_path, purge=True))
    preflight = real_module.RealLive(configured, [], tmp_path)  # a preflight changes nothing
    assert upload.STALE_CACHE in preflight.check_files([local])[0] and not purged.exists()
    sweep = real_module.RealLive(configured, [], tmp_path, empties_stale_cache=True)
    assert sweep.check_files([local]) == [] and purged.exists()


def test_an_upload_that_replaced_copies_empties_the_sites_xcache(tmp_path: Path) -> None:
    """A same-size copy replaced at the origin would pass the cache's size check with another
    file's bytes: after an upload that replaced any, the XCache is emptied, or the user told."""
    record = {"files": [{"action": "replaced"}, {"action": "copied"}]}
    quiet = after_replacing(load_site(_cached_site(tmp_path, purge=False)), record)
    assert quiet is not None and "may still hold the 1 copies the upload replaced" in quiet
    done = after_replacing(load_site(_cached_site(tmp_path, purge=True)), record)
    assert done is not None and done.startswith("site r: emptied its XCache")
    assert (tmp_path / "purged").exists()
    copied = {"files": [{"action": "copied"}]}
    assert after_replacing(load_site(_cached_site(tmp_path, purge=True)), copied) is None


def test_a_real_sites_points_carry_the_rtt_its_calibration_probed(tmp_path: Path) -> None:
    """A real site's link is not ours to set, but its points say at what RTT they ran (the
    caching section compares its methods there): the calibration's probe, none before it."""
    site = load_site(real_site(tmp_path))
    results = tmp_path / "results"
    assert real_module.RealLive(site, [], results).set_conditions(None, None) == {}
    write_calibration(results, site.name, {"rtt_ms": 0.107})
    live = real_module.RealLive(site, [], results)
    assert live.set_conditions(None, None) == {"rtt_ms_measured": 0.107}
    with pytest.raises(InstoreError, match="only set on emulated links"):
        live.set_conditions(25.0, None)
