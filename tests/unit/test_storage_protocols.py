"""One table of URL schemes (``instore.urls``) and one storage per protocol keyed on it: no other
module spells a scheme or dispatches on one, WebDAV and xroot spellings reach the same storage
and readers as https and root, each protocol's reader and operations are reached through the
one table, and a storage that reports no adler32 has it computed by reading the copy back."""

from __future__ import annotations

import re
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from instore import urls
from instore.errors import InstoreError
from instore.storage import Checksum, open_reader, storage_for
from instore.storage import base as storage_base
from instore.storage.base import Storage
from instore.storage.file import FileReader, FileStorage
from instore.storage.http import HTTPStorage
from instore.storage.xrootd import XRootDStorage
from instore.study import Point
from instore.sweep.jobs import job_argv

PACKAGE = Path(urls.__file__).parent
# Scheme names that are nothing else in this code base ("root" and "http" are also an engine's
# and a site protocol's names), a path-or-file tuple, and a parsed scheme compared with literals
# (comparing it with the table's own XROOTD_SCHEMES or HTTP_SCHEMES is asking the table).
SCHEME_SPELLED = re.compile(
    r"""["'](roots|xroots?|davs?|https)(://)?["']|\(\s*["']["']\s*,\s*["']file["']\s*\)"""
    r"""|\.scheme\s*(==|!=)\s*["']|\.scheme\s+(not\s+)?in\s*[(\[{]|\.scheme\.startswith\("""
)


def test_scheme_names_are_spelt_in_urls_only() -> None:
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{n}: {line.strip()}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "urls.py" or path.parent != PACKAGE
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if SCHEME_SPELLED.search(line)
    ]
    assert found == [], "ask instore.urls (protocol_of, is_local, is_tls...) instead"


@pytest.mark.parametrize(
    ("url", "protocol", "storage"),
    [
        ("/data/f.root", "file", FileStorage),
        ("file:///data/f.root", "file", FileStorage),
        ("root://se//f.root", "xrootd", XRootDStorage),
        ("xroot://se//f.root", "xrootd", XRootDStorage),
        ("roots://se//f.root", "xrootd", XRootDStorage),
        ("https://se//f.root", "http", HTTPStorage),
        ("davs://se//f.root", "http", HTTPStorage),
        ("DAVS://se//f.root", "http", HTTPStorage),
    ],
)
def test_each_spelling_reaches_its_protocols_storage(
    url: str, protocol: str, storage: type
) -> None:
    assert urls.protocol_of(url) == protocol
    assert type(storage_for(url)) is storage


def test_an_unknown_scheme_is_one_line_and_a_value_error() -> None:
    with pytest.raises(InstoreError, match=r"^gsiftp://se/f: unknown URL scheme 'gsiftp' -- use"):
        storage_for("gsiftp://se/f")
    with pytest.raises(ValueError, match="unknown URL scheme"):
        open_reader("gsiftp://se/f", 1)


def test_tokens_go_over_tls_only_and_ports_default_by_scheme() -> None:
    assert [urls.is_tls(u) for u in ("https://h/", "davs://h/", "http://h/", "dav://h/")] == [
        True, True, False, False]  # fmt: skip
    assert urls.default_port("xroot://h//f") == 1094 and urls.default_port("davs://h/f") == 443


def test_stage_in_of_any_remote_spelling_uses_xrdcp(tmp_path: Path) -> None:
    point = Point(section="protocols", layout="ordered", protocol="stage-in")
    for url, tool in (("xroot://se//f.root", "xrdcp"), ("davs://se//f.root", "xrdcp"),
                      ("/data/f.root", "cp")):  # fmt: skip
        argv = job_argv(point, url, "events", tmp_path)
        assert argv[argv.index("--stage-in") + 1] == tool, url


def test_a_storage_without_checksums_has_the_copy_read_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = bytes(range(256)) * 9000
    copy = tmp_path / "copy.root"
    copy.write_bytes(data)
    monkeypatch.setattr(storage_base, "CHUNK", 100_000)  # several reads through the reader
    reads: list[list[tuple[int, int]]] = []
    real = FileReader.read_ranges

    def counted(self: FileReader, ranges: list[tuple[int, int]]) -> list[bytes]:
        reads.append(ranges)
        return real(self, ranges)

    monkeypatch.setattr(FileReader, "read_ranges", counted)
    summed = Storage.checksum(FileStorage(), str(copy))  # the base: no reported adler32
    assert summed == Checksum(f"{zlib.adler32(data):08x}", "read back", len(data))
    assert len(reads) == 24 and reads[-1] == [(2_300_000, len(data))]
    assert summed.note() == (
        "checksum: the endpoint reports none; computed by reading the copy back (2.3 MB)"
    )
    assert FileStorage().checksum(str(copy)).note() is None, "a path is read here: nothing to say"


def test_the_http_storage_loads_no_diagnosis() -> None:
    """The HTTP storage takes the credentials' hand-off (certificate, headers) and nothing
    more; the diagnosis of a refusal (which asks the storage again) stays unloaded."""
    code = ("import sys, instore.storage.http as h, instore.credentials as c; "
            "c.discover(); print(sorted(m for m in sys.modules if m.startswith("
            "('instore.credentials.', 'instore.storage.diagnosis'))))")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['instore.credentials.discovery', 'instore.credentials.handoff']"
