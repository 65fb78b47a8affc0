"""The preflight of a real site: each copy checksummed once, then, sweep after sweep (one per
section), compared by size; `instore site preflight` always checks in full."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from instore.site import PreflightError, load_site
from instore.site import verify as verify_module
from instore.site.command import PROGRESS
from instore.site.real import open_real
from instore.site.session import site_as_it_is
from instore.storage import base as storage_base

from tests.conftest import write_real_site


@pytest.fixture
def posix_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    local, remote = tmp_path / "local", tmp_path / "remote"
    local.mkdir()
    remote.mkdir()
    for name in ("a.root", "b.root"):
        body = b"root" + os.urandom(4096)
        (local / name).write_bytes(body)
        (remote / name).write_bytes(body)
    summed: list[Path] = []
    real_adler32 = storage_base.adler32

    def counting(path: Path) -> str:
        summed.append(Path(path))
        return real_adler32(path)

    monkeypatch.setattr(storage_base, "adler32", counting)
    site = load_site(write_real_site(tmp_path / "local.yaml", {"posix": f"{remote}/{{file}}"}))
    files = sorted(local.glob("*.root"))
    return {"site": site, "files": files, "remote": remote, "summed": summed,
            "results": tmp_path / "results"}  # fmt: skip


def _remote_sums(env: dict) -> int:
    return sum(p.parent == env["remote"] for p in env["summed"])


def test_a_sweep_checksums_each_copy_once_then_compares_its_size(posix_site: dict) -> None:
    open_real(posix_site["site"], posix_site["files"], posix_site["results"])
    assert _remote_sums(posix_site) == 2
    assert (posix_site["results"] / "local" / "verified.json").is_file()
    open_real(posix_site["site"], posix_site["files"], posix_site["results"])
    assert _remote_sums(posix_site) == 2, "the second sweep asks for sizes only"


def test_a_sweep_says_what_it_checks_before_the_long_wait(
    posix_site: dict, caplog: pytest.LogCaptureFixture
) -> None:
    """A full profile's first sweep of a grid site checksummed 216 copies for 68 s, and its log
    said only "site mysite open (68.4 s)" afterwards."""
    caplog.set_level("INFO")
    open_real(posix_site["site"], posix_site["files"], posix_site["results"])
    assert ("site local: checking 2 test files behind 1 endpoint(s): size and adler32 of each "
            "copy" in caplog.text)  # fmt: skip


def test_site_preflight_all_says_what_it_checks_before_the_long_wait(posix_site: dict) -> None:
    """`instore site preflight --all` checksummed every copy and said nothing until it ended."""
    data = posix_site["files"][0].parent
    done = subprocess.run([sys.executable, "-m", "instore.cli", "site", "preflight",
                           str(posix_site["site"].path), "--all", "--data", str(data)],
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    told = [i for i, ln in enumerate(lines) if ln.startswith(
        PROGRESS + "site local: checking 2 test files behind 1 endpoint(s)")]  # fmt: skip
    assert told and told[0] < lines.index("site local: ok"), done.stderr


def test_a_copy_whose_size_changed_since_it_was_verified_stops_the_sweep(posix_site: dict) -> None:
    open_real(posix_site["site"], posix_site["files"], posix_site["results"])
    copy = posix_site["remote"] / "b.root"
    copy.write_bytes(copy.read_bytes()[:100])
    with pytest.raises(PreflightError, match=r"size of .*b\.root is 100 but the local file's is"):
        open_real(posix_site["site"], posix_site["files"], posix_site["results"])


def test_a_new_local_file_version_is_checksummed_again(posix_site: dict) -> None:
    open_real(posix_site["site"], posix_site["files"], posix_site["results"])
    local = posix_site["files"][0]
    os.utime(local, ns=(local.stat().st_atime_ns, local.stat().st_mtime_ns + 10**9))
    open_real(posix_site["site"], posix_site["files"], posix_site["results"])
    assert _remote_sums(posix_site) == 3


def test_site_preflight_always_checksums_every_copy(posix_site: dict) -> None:
    open_real(posix_site["site"], posix_site["files"], posix_site["results"])
    before = _remote_sums(posix_site)
    copy = posix_site["remote"] / "a.root"
    body = bytearray(copy.read_bytes())
    body[-1] ^= 0xFF  # same size, other content
    copy.write_bytes(bytes(body))
    failures = site_as_it_is(posix_site["site"], posix_site["results"]).check(posix_site["files"])
    assert _remote_sums(posix_site) == before + 1  # the first difference ends the check
    assert len(failures) == 1 and "adler32 of" in failures[0] and "a.root" in failures[0]


def test_verified_copies_that_cannot_be_kept_cost_a_warning_not_the_sweep(
    posix_site: dict, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    results = tmp_path / "not-a-dir"
    results.write_text("a file where the results directory should be")
    open_real(posix_site["site"], posix_site["files"], results)
    assert "could not keep the verified copies" in caplog.text


def test_size_only_rechecks_do_not_renew_a_verification(
    posix_site: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sweeps more often than every 12 h still checksum each copy once every 12 h."""
    now = [1_000_000.0]
    monkeypatch.setattr(verify_module.time, "time", lambda: now[0])
    open_real(posix_site["site"], posix_site["files"], posix_site["results"])
    now[0] += 11 * 3600
    open_real(posix_site["site"], posix_site["files"], posix_site["results"])
    assert _remote_sums(posix_site) == 2
    now[0] += 2 * 3600  # 13 h after the full check, 2 h after the size-only one
    open_real(posix_site["site"], posix_site["files"], posix_site["results"])
    assert _remote_sums(posix_site) == 4
