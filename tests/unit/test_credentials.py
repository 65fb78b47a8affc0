"""Grid credentials: discovery by the grid's conventions, what jobs get, what records keep, and
one-line errors that name the fix. A self-signed certificate stands in for a proxy."""

from __future__ import annotations

import datetime as dt
import stat
import subprocess
from pathlib import Path

import pytest
from instore import credentials
from instore.errors import InstoreError
from instore.storage import diagnosis
from instore.sweep.jobs import access_for

TOKEN = "eyJ-secret-token-value"


def make_proxy(path: Path) -> Path:
    """A PEM certificate and key in one file, as a proxy is (openssl)."""
    key = path.with_suffix(".key")
    cmd = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
           "-out", str(path), "-subj", "/DC=test/CN=Test User", "-days", "1"]  # fmt: skip
    subprocess.run(cmd, check=True, capture_output=True)
    path.write_text(path.read_text() + key.read_text())
    path.chmod(0o600)
    return path


def test_token_discovery_follows_the_wlcg_order(tmp_path: Path) -> None:
    file_token = tmp_path / "tok"
    file_token.write_text(" from-file \n")
    xdg = tmp_path / "xdg"
    xdg.mkdir()
    (xdg / "bt_u7").write_text("from-xdg")
    env = {"BEARER_TOKEN": "from-env", "BEARER_TOKEN_FILE": str(file_token),
           "XDG_RUNTIME_DIR": str(xdg)}  # fmt: skip
    assert credentials.find_token(env, 7) == ("from-env", None)
    del env["BEARER_TOKEN"]
    assert credentials.find_token(env, 7) == ("from-file", file_token)
    del env["BEARER_TOKEN_FILE"]
    assert credentials.find_token(env, 7) == ("from-xdg", xdg / "bt_u7")


def test_proxy_defaults_to_tmp_x509up_uid(tmp_path: Path) -> None:
    creds = credentials.discover({}, uid=4242)
    assert creds.proxy == Path("/tmp/x509up_u4242") and not creds.proxy_found
    assert credentials.describe(creds) is None


def test_a_token_never_shows_in_repr_or_in_a_job_command(tmp_path: Path) -> None:
    creds = credentials.discover({"BEARER_TOKEN": TOKEN}, uid=0)
    assert TOKEN not in repr(creds)
    job = credentials.for_job(True, tmp_path / "creds", creds)
    assert TOKEN not in repr(job), "handed over as a file, never as a value"
    assert job.env == {"BEARER_TOKEN_FILE": "/instore/creds/token"}
    (host, inside), = job.binds  # fmt: skip
    assert inside == "/instore/creds/token" and host.read_text().strip() == TOKEN
    assert stat.S_IMODE(host.stat().st_mode) == 0o600
    assert stat.S_IMODE(host.parent.stat().st_mode) == 0o700


def test_jobs_get_the_proxy_and_cas_read_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proxy = make_proxy(tmp_path / "x509up")
    cas = tmp_path / "certificates"
    cas.mkdir()
    for name in ("BEARER_TOKEN", "BEARER_TOKEN_FILE", "XDG_RUNTIME_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("X509_USER_PROXY", str(proxy))
    monkeypatch.setenv("X509_CERT_DIR", str(cas))
    host = access_for([], {}, tmp_path, tmp_path / "scratch", False, container=False)
    assert host.env["X509_USER_PROXY"] == str(proxy) and host.env["X509_CERT_DIR"] == str(cas)
    boxed = access_for([], {}, tmp_path, tmp_path / "scratch", False, container=True)
    assert boxed.env["X509_USER_PROXY"] == "/instore/creds/proxy"
    binds = {b.target: b for b in boxed.binds}
    assert binds["/instore/creds/proxy"].path == proxy.resolve()
    assert not binds["/instore/creds/proxy"].writable
    assert not binds["/instore/creds/certificates"].writable


def test_record_keeps_kind_subject_and_expiry_only(tmp_path: Path) -> None:
    proxy = make_proxy(tmp_path / "x509up")
    creds = credentials.discover({"X509_USER_PROXY": str(proxy)}, uid=0)
    described = credentials.describe(creds)
    assert described is not None and set(described) == {"kind", "subject", "expires"}
    assert described["kind"] == "x509" and described["subject"] == "/DC=test/CN=Test User"
    expires = dt.datetime.fromisoformat(str(described["expires"]))
    assert expires > dt.datetime.now(dt.UTC)
    assert "PRIVATE KEY" not in str(described) and str(proxy) not in str(described)


def test_an_expired_proxy_is_refused_in_one_line_naming_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proxy = make_proxy(tmp_path / "x509up")
    expired = dt.datetime(2020, 1, 1, tzinfo=dt.UTC)  # this openssl cannot backdate a cert
    monkeypatch.setattr(
        credentials.discovery, "proxy_info", lambda p: credentials.ProxyInfo("/CN=x", expired)
    )
    monkeypatch.setenv("X509_USER_PROXY", str(proxy))
    monkeypatch.setenv("X509_CERT_DIR", str(tmp_path))
    with pytest.raises(InstoreError) as info:
        credentials.require("x509", "gsi")
    text = str(info.value)
    assert f"X.509 proxy {proxy} expired at 2020-01-01" in text
    assert "voms-proxy-init or xrdgsiproxy init" in text and "\n" not in text


def test_a_missing_credential_is_refused_and_none_needs_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("X509_USER_PROXY", str(tmp_path / "none"))
    for name in ("BEARER_TOKEN", "BEARER_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    with pytest.raises(InstoreError, match=r"no X\.509 proxy at .*voms-proxy-init"):
        credentials.require("x509", "gsi")
    if not Path(f"/tmp/bt_u{credentials.discovery._uid()}").exists():
        with pytest.raises(InstoreError, match="no bearer token found"):
            credentials.require("token", "gsi")
    credentials.require("none", "gsi")


@pytest.mark.parametrize(
    "message",
    [
        "xrootd open failed for root://h//f: [FATAL] Auth failed: No protocols left to try",
        "OSError: HTTP 401 for HEAD https://h/f",
        "OSError: HTTP 403 for a range request to https://h/f",
        "xrdcp root://h//f failed (exit 52): [FATAL] Auth failed: No protocols left to try",
    ],
)
def test_auth_refusals_say_so_and_name_the_fix(
    message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("X509_USER_PROXY", str(tmp_path / "none"))
    monkeypatch.delenv("BEARER_TOKEN", raising=False)
    monkeypatch.delenv("BEARER_TOKEN_FILE", raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    line = diagnosis.explain("root://h//f", message)
    assert line is not None and line.startswith("authentication refused by root://h//f")
    assert "voms-proxy-init" in line and "regenerate" not in line


def test_other_errors_pass_unchanged() -> None:
    assert diagnosis.explain("/data/f.root", "Auth failed") == "Auth failed", "local: as is"
    assert diagnosis.explain("root://h//f", "short read at offset 3") == "short read at offset 3"
    assert diagnosis.explain("root://h//f", None) is None


def test_held_says_the_proxy_subject_and_time_left_never_the_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proxy = make_proxy(tmp_path / "x509up")
    now = dt.datetime(2026, 1, 1, 12, 0, tzinfo=dt.UTC)
    expires = now + dt.timedelta(hours=3, minutes=7, seconds=30)
    monkeypatch.setattr(
        credentials.discovery, "proxy_info", lambda p: credentials.ProxyInfo("/CN=u", expires)
    )
    creds = credentials.Credentials(proxy, True, tmp_path, None, token=TOKEN)
    assert credentials.held(creds, now) == "X.509 proxy /CN=u, 3h07m left and a bearer token"
    bare = credentials.Credentials(tmp_path / "none", False, None, None)
    assert credentials.held(bare, now) == "no credential"


@pytest.mark.parametrize(("digest", "weak"), [("sha1", True), ("sha256", False)])
def test_a_proxy_signed_with_sha1_is_named_as_unusable_over_https(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, digest: str, weak: bool
) -> None:
    """xrdgsiproxy 5.5 signs proxies with SHA-1, which OpenSSL 3 will not present over TLS:
    the refusal names the digest, not the server, so the admin makes a new proxy."""
    key, cert = tmp_path / "k.pem", tmp_path / "x509up"
    cmd = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
           "-out", str(cert), f"-{digest}", "-subj", "/CN=u", "-days", "1"]  # fmt: skip
    subprocess.run(cmd, check=True, capture_output=True)
    assert credentials.proxy_digest(cert) == digest
    line = credentials.weak_proxy_line(cert)
    assert (line is not None) == weak
    if weak:
        assert "signed with SHA1" in str(line) and "voms-proxy-init" in str(line)
    monkeypatch.setenv("X509_USER_PROXY", str(cert))
    monkeypatch.setenv("X509_CERT_DIR", str(tmp_path))
    hint = diagnosis.auth_hint("https://se.example.org//f.root")
    assert ("signed with SHA1" in hint) == weak
    assert "signed with" not in diagnosis.auth_hint("root://se.example.org//f.root")


def test_a_dangling_proxy_variable_is_named_when_a_token_is_refused_over_xrootd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The XRootD client cannot set up TLS with X509_USER_PROXY naming no file, and then
    sends no token: the line says so instead of blaming the token."""
    token = tmp_path / "bt"
    token.write_text(TOKEN)
    token.chmod(0o600)
    monkeypatch.setenv("BEARER_TOKEN_FILE", str(token))
    monkeypatch.delenv("BEARER_TOKEN", raising=False)
    monkeypatch.setenv("X509_USER_PROXY", str(tmp_path / "gone"))
    hint = diagnosis.auth_hint("root://se.example.org//f.root")
    assert hint.startswith(f"X509_USER_PROXY names {tmp_path / 'gone'}, which does not exist")
    assert TOKEN not in hint
    assert "bearer token" in diagnosis.auth_hint("https://se.example.org//f.root")
    monkeypatch.delenv("X509_USER_PROXY")
    creds = credentials.Credentials(tmp_path / "gone", False, None, None, TOKEN, token)
    assert "refused the bearer token" in diagnosis.auth_hint("root://se//f.root", creds)
