"""The access methods are said once (``instore.access``): which protocol each reads through,
which copy the file first, and no other module spells the names that mean nothing else."""

from __future__ import annotations

import re
from pathlib import Path

from instore import access, urls
from instore.site.config import PROTOCOLS

PACKAGE = Path(access.__file__).parent
# "xrootd", "http", "fuse" and "xcache" also name servers, processes and directories
METHOD_SPELLED = re.compile(r"""["'](posix|stage-in)["']""")


def test_posix_and_stage_in_are_spelt_in_the_vocabulary_and_access_only() -> None:
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{n}: {line.strip()}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path not in (PACKAGE / "access.py", PACKAGE / "vocabulary.py")
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if METHOD_SPELLED.search(line)
    ]
    assert found == [], "ask instore.access (POSIX, STAGE_IN, METHODS...) instead"


def test_each_method_says_its_protocol_and_whether_it_copies_first() -> None:
    assert PROTOCOLS == access.NAMES == ("posix", "stage-in", "xrootd", "http", "fuse", "xcache")
    assert {n: m.protocol for n, m in access.METHODS.items()} == {
        "posix": urls.FILE, "stage-in": None, "xrootd": urls.XROOTD, "http": urls.HTTP,
        "fuse": urls.FILE, "xcache": urls.XROOTD}  # fmt: skip
    assert access.STAGE_IN not in access.IN_PLACE and len(access.IN_PLACE) == 5
    assert access.MOUNTED == ("posix", "fuse") and access.DIRECT == ("xrootd", "http")
    assert [n for n, m in access.METHODS.items() if m.cached] == ["xcache"]


def test_urls_built_for_a_server_are_spelt_as_its_protocol_expects() -> None:
    assert urls.url_for(urls.XROOTD, "h", 1094, "/data/f.root") == "root://h:1094//data/f.root"
    assert urls.url_for(urls.HTTP, "h", 80, "/data/f.root") == "http://h:80/data/f.root"
    assert urls.protocol_of(urls.url_for(urls.HTTP, "h", 80, "/f")) == urls.HTTP
