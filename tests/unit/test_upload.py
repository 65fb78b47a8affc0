"""instore site upload: adler32 as storage prints it, skip/copy/mismatch decisions, and a
whole upload to a posix endpoint (copied, then skipped, then a corrupt copy stops it)."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import pytest
from instore.errors import InstoreError
from instore.site import upload
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
        "adler32 of root://h//x.root is 0x0000abce but the local file's is 0x0000abcd: "
        "the copy is corrupt; remove it and rerun upload"
    )
    with pytest.raises(InstoreError, match=r"^size of root://h//x.root is 9 but .* rerun upload$"):
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
    with pytest.raises(InstoreError, match=r"^adler32 of .*/b.root is 0x.* the copy is corrupt"):
        upload.upload(site, files)
