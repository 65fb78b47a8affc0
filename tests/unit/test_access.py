"""The access methods are said once (``instore.access``): which protocol each reads through,
which copy the file first; and their names are spelt only by the few modules that own a word,
whatever it names there (a method, a storage protocol, a site's process, a package, a cache)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from instore import access, record, urls, vocabulary
from instore.site import config, roles
from instore.site.config import PROTOCOLS

PACKAGE = Path(access.__file__).parent
METHOD_SPELLED = re.compile(rf"""["']({"|".join(map(re.escape, access.NAMES))})["']""")
# The modules that may spell those words, each for what it names: the access methods
# (vocabulary, access), the storage protocols and URL schemes (urls: xrootd, http), an emulated
# site's processes and programs (roles: xrootd, xcache), the XRootD bindings' package name
# (record) and the one kind of cache a site may have (site.config: xcache).
OWNERS = tuple(Path(m.__file__) for m in (vocabulary, access, urls, roles, record, config))


def methods_spelt_outside_their_owners(package: Path = PACKAGE) -> list[str]:
    return [
        f"{path.relative_to(package.parent)}:{n}: {line.strip()}"
        for path in sorted(package.rglob("*.py"))
        if path not in OWNERS
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if METHOD_SPELLED.search(line)
    ]


def test_access_method_names_are_spelt_by_their_owners_only() -> None:
    found = methods_spelt_outside_their_owners()
    assert found == [], (
        "ask instore.access (POSIX, XROOTD, FUSE, METHODS...) for a method, instore.urls for a "
        "storage protocol, instore.site.roles for a site's process or program, "
        "instore.record.XROOTD_PACKAGE for the bindings, instore.site.config.CACHE_KIND"
    )


def test_a_method_spelt_in_another_module_is_found(tmp_path: Path) -> None:
    (tmp_path / "instore").mkdir()
    (tmp_path / "instore" / "other.py").write_text("A = 1\nMOUNT = 'fuse'\n")
    found = methods_spelt_outside_their_owners(tmp_path / "instore")
    assert found == ["instore/other.py:2: MOUNT = 'fuse'"]


def test_the_owners_spell_what_earlier_state_files_and_records_hold() -> None:
    assert (roles.SERVER, roles.CACHE, roles.DELAYER, roles.FUSE_CLIENT) == (
        "xrootd", "xcache", "delay", "xrootdfs")  # fmt: skip
    assert roles.XROOTD_PROGRAM == roles.XROOTD_USER == record.XROOTD_PACKAGE == "xrootd"
    site = json.loads(vocabulary.schema_path("site").read_text())
    assert vocabulary.at(site, "/properties/cache/properties/kind/const") == config.CACHE_KIND


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
