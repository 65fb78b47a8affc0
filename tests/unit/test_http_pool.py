"""The HTTP client's per-open and per-request costs (what a replay client's CPU is made of)."""

from __future__ import annotations

from pathlib import Path

from instore.credentials.discovery import Credentials
from instore.credentials.handoff import pool_for
from instore.storage import http

CREDS = Credentials(proxy=Path("/nonexistent/x509up"), proxy_found=False, cert_dir=None,
                    voms_dir=None)  # fmt: skip


def test_plain_http_builds_no_tls_context_and_https_does() -> None:
    """A TLS context loads the system's CAs (30 ms of CPU): a replay paid it at every pass."""
    assert "ssl_context" not in pool_for("http://h:8443//f.root", 5, CREDS).connection_pool_kw
    assert "ssl_context" in pool_for("https://h:8443//f.root", 5, CREDS).connection_pool_kw


def test_later_opens_in_one_process_reuse_its_pool_and_a_child_gets_its_own(monkeypatch) -> None:
    """Opens reuse the process's connection (as XRootD's client keeps its channel); a forked
    child must not share its parent's sockets."""
    monkeypatch.setattr(http, "_POOLS", {})
    first = http._shared_pool("http://h:8443//a.root", 5.0, CREDS)
    assert http._shared_pool("http://h:8443//b.root", 5.0, CREDS) is first
    assert http._shared_pool("http://h:8443//a.root", 9.0, CREDS) is not first
    monkeypatch.setattr(http.os, "getpid", lambda: -1)
    assert http._shared_pool("http://h:8443//a.root", 5.0, CREDS) is not first


def test_request_target_keeps_the_double_slash_and_the_query() -> None:
    assert http._request_target("http://h:8443//data/f.root") == "//data/f.root"
    assert http._request_target("https://h/f.root?authz=x") == "/f.root?authz=x"
