"""URL schemes said once: WebDAV spellings become the http(s) that HTTP clients know."""

from __future__ import annotations

import pytest
from instore.urls import HTTP_SCHEMES, XROOTD_SCHEMES, http_url


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("davs://se.example.org:443//store/f.root", "https://se.example.org:443//store/f.root"),
        ("dav://se//f.root", "http://se//f.root"),
        ("https://se//f.root", "https://se//f.root"),
        ("root://se//f.root", "root://se//f.root"),
        ("/data/f.root", "/data/f.root"),
    ],
)
def test_http_url_turns_webdav_schemes_into_http(url: str, expected: str) -> None:
    assert http_url(url) == expected


def test_the_scheme_families_do_not_overlap() -> None:
    assert not set(HTTP_SCHEMES) & set(XROOTD_SCHEMES)
