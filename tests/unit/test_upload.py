"""instore site upload: adler32 as storage prints it, skip/copy/mismatch decisions, and a
whole upload to a posix endpoint (copied, then skipped, then a corrupt copy stops it)."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import pytest
from instore.errors import InstoreError
from instore.site import upload
from instore.site.command import upload_summary
from instore.site.config import load_site
from instore.storage import base as storage_base

from tests.conftest import write_real_site


def test_adler32_matches_zlib_over_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = bytes(range(256)) * 5000
    (tmp_path / "f").write_bytes(data)
    monkeypatch.setattr(storage_base, "CHUNK", 1000)  # many chunks: the running value carries over
    assert upload.adler32(tmp_path / "f") == f"{zlib.adler32(data):08x}"
    (tmp_path / "e").write_bytes(b"")
    assert upload.adler32(tmp_path / "e") == "00000001"


def test_compare_absent_equal_and_differing() -> None:
    url = "root://h//x.root"
    assert upload.compare(url, 10, "0000abcd", None) is False
    assert upload.compare(url, 10, "0000abcd", upload.Remote(10, "ABCD")) is True
    with pytest.raises(InstoreError) as err:
        upload.compare(url, 10, "0000abcd", upload.Remote(10, "0000abce"))
    assert str(err.value) == (
        "adler32 of root://h//x.root is 0x0000abce but the local file's is 0x0000abcd -- "
        + upload.REUPLOAD
    )
    with pytest.raises(InstoreError, match=r"^size of root://h//x.root is 9 but .* by hand$"):
        upload.compare(url, 10, "0000abcd", upload.Remote(9, "0000abcd"))
    with pytest.raises(InstoreError, match=r"no adler32 of the copy to compare with"):
        upload.compare(url, 10, "0000abcd", upload.Remote(10, None))


def test_compare_without_a_checksum_compares_the_size_only() -> None:
    url = "root://h//x.root"
    assert upload.compare(url, 10, None, upload.Remote(10, None)) is True
    with pytest.raises(InstoreError, match=r"^size of root://h//x.root is 9 but"):
        upload.compare(url, 10, None, upload.Remote(9, None))


def test_targets_put_root_first_and_each_template_once(tmp_path: Path) -> None:
    site = load_site(write_real_site(tmp_path / "s.yaml", {
        "posix": "/a/{file}", "fuse": "/a/{file}", "xrootd": "root://h//{file}",
    }))  # fmt: skip
    assert upload.targets(site) == [("xrootd", "root://h//{file}"), ("posix", "/a/{file}")]


def test_nothing_is_uploaded_through_an_xcache(tmp_path: Path) -> None:
    """A trial on a GSI site with the user's XCache in front of root:// (2026-11-28): the upload
    'verified' every file through the cache by reading it back (it reports no adler32), 231.6 MB
    in the quick profile, 6.7 GB in the full one, filling the cache before any cold point."""
    site = load_site(write_real_site(tmp_path / "s.yaml", {
        "xrootd": "root://h:1094//{file}", "xcache": "root://cache:1094//{file}",
    }))  # fmt: skip
    assert upload.targets(site) == [("xrootd", "root://h:1094//{file}")]


def test_posix_upload_copies_then_skips_then_stops_on_a_corrupt_copy(tmp_path: Path) -> None:
    files = [tmp_path / "a.root", tmp_path / "b.root"]
    for i, f in enumerate(files):
        f.write_bytes(bytes([i]) * 1000)
    store = tmp_path / "store"
    site = load_site(write_real_site(tmp_path / "s.yaml", {"posix": f"{store}/d/{{file}}"}))
    seen: list[int] = []
    first = upload.upload(site, files, seen.append)
    assert [f["action"] for f in first["files"]] == ["copied", "copied"]  # type: ignore[index]
    assert (store / "d" / "a.root").read_bytes() == files[0].read_bytes() and sum(seen) == 2000
    again = upload.upload(site, files)
    assert [f["action"] for f in again["files"]] == ["present", "present"]  # type: ignore[index]
    upload.write_marker(again, tmp_path / "m" / "upload.json")
    marker = json.loads((tmp_path / "m" / "upload.json").read_text())
    assert marker["files"][0] == {"name": "a.root", "protocol": "posix", "size": 1000,
                                  "adler32": upload.adler32(files[0]), "action": "present",
                                  "checksum_from": "read here"}  # fmt: skip
    (store / "d" / "b.root").write_bytes(b"\x02" * 1000)
    with pytest.raises(
        InstoreError, match=r"^adler32 of .*/b.root is 0x.* no upload of this study"
    ):
        upload.upload(site, files)


def test_the_full_profiles_files_replace_the_quick_ones_an_earlier_upload_placed(
    tmp_path: Path,
) -> None:
    """A site admin's quick study uploads 8 MB files, then the full study's 16 MB files of the
    same names: the upload replaces the copies its own earlier upload placed (its ledger), and
    still stops on a copy it never placed. The full study stopped there, calling the quick
    profile's copy corrupt."""
    store, ledger = tmp_path / "store", tmp_path / "results" / "s" / upload.LEDGER
    site = load_site(write_real_site(tmp_path / "s.yaml", {"posix": f"{store}/{{file}}"}))
    quick, full = tmp_path / "quick", tmp_path / "full"
    for directory, size in ((quick, 800), (full, 1600)):
        directory.mkdir()
        for name in ("ordered-r0.root", "unordered-r0.root"):
            (directory / name).write_bytes(name.encode() * (size // len(name)))
    first = upload.upload(site, sorted(quick.iterdir()), ledger=ledger)
    assert [f["action"] for f in first["files"]] == ["copied", "copied"]  # type: ignore[index]
    (store / "unordered-r0.root").write_bytes(b"someone else's")  # not a copy we placed
    with pytest.raises(InstoreError) as err:
        upload.upload(site, sorted(full.iterdir()), ledger=ledger)
    line = str(err.value)
    assert line.endswith(upload.foreign(site.name)) and "unordered-r0.root" in line
    assert (store / "ordered-r0.root").read_bytes() == (full / "ordered-r0.root").read_bytes()
    (store / "unordered-r0.root").unlink()
    again = upload.upload(site, sorted(full.iterdir()), ledger=ledger)
    assert [f["action"] for f in again["files"]] == ["present", "copied"]  # type: ignore[index]
    for name in ("ordered-r0.root", "unordered-r0.root"):
        assert (store / name).read_bytes() == (full / name).read_bytes()


def test_replace_puts_the_studys_files_over_copies_a_removed_checkout_placed(
    tmp_path: Path,
) -> None:
    """A site admin removed the checkout (its results/ and the upload ledger with it) and ran the
    study again from a fresh clone (2026-11-28): ROOT writes a new file's bytes anew, so every
    copy on the storage differed from the regenerated file and no ledger said whose it was. The
    upload stops and names `--replace`; with it, the copies are replaced and noted."""
    store, ledger = tmp_path / "store", tmp_path / "results" / "s" / upload.LEDGER
    site = load_site(write_real_site(tmp_path / "s.yaml", {"posix": f"{store}/{{file}}"}))
    store.mkdir()
    local = tmp_path / "ordered-r0.root"
    local.write_bytes(b"regenerated" * 100)
    (store / local.name).write_bytes(b"earlier run" * 100)  # same size, other bytes
    with pytest.raises(InstoreError) as err:
        upload.upload(site, [local], ledger=ledger)
    assert f"`instore site upload {site.name} --replace` replaces them" in str(err.value)
    assert (store / local.name).read_bytes() == b"earlier run" * 100  # nothing replaced
    done = upload.upload(site, [local], ledger=ledger, replace=True)
    assert [f["action"] for f in done["files"]] == ["replaced"]  # type: ignore[index]
    line = upload_summary(site.name, done, True, tmp_path / "upload.json")
    assert line.startswith(
        f"site {site.name}, 1 file(s) behind 1 endpoint(s), counted per copy: 0 copied"
    )
    assert "1 replaced (copies of the same name that differed, as --replace asked)" in line
    assert "earlier upload" not in line  # no ledger said they were ours
    assert (store / local.name).read_bytes() == local.read_bytes()
    assert upload.read_ledger(ledger)[str(store / local.name)].size == local.stat().st_size
