"""A real site that takes WLCG bearer tokens only, validated for real: Debian's XRootD 5.5 with
``xrootd-scitokens-plugins`` (XrdAccSciTokens, scitokens-cpp) as its only authorization, XrdHttp
over TLS taking ``Authorization: Bearer``, and root:// with the ``ztn`` security protocol only.
The token issuer is on loopback (tests/integration/token_issuer.py): the storage fetches its
discovery document and JWKS over https and checks each token's RS256 signature, issuer,
audience and expiry against them.

``instore read`` with the uproot engine, holding a token in ``BEARER_TOKEN_FILE`` and no proxy,
reads over https and over root:// (ztn), and its record names a token; a token signed by
another key, an expired one and none are refused by the storage (HTTP 403, ztn failure), and
instore's error says the authentication was refused and names the token, never "regenerate
the file". The root engine reads root:// with the token through ztn too. A good token in a file
others can read goes out over https but never over root:// (ztn keeps it), and instore says so.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.cli import Cli
from tests.integration.grid_site import Pki, job_env, needs_tools, pki_root, xrootd_server
from tests.integration.token_issuer import (
    Issuer,
    make_key,
    serve_issuer,
    sign,
    trusting,
    wlcg_claims,
)

pytestmark = pytest.mark.integration

PLUGIN = Path("/usr/lib/x86_64-linux-gnu/libXrdAccSciTokens-5.so")
AUDIENCE = "https://localhost"
NAME = "ordered.root"


def needs_token_tools() -> None:
    """Skip where the tools are missing (README: `make system` installs them) or not root, or
    where this user has a proxy in the default place (discovery would find it)."""
    needs_tools()
    if Path(f"/tmp/x509up_u{os.getuid()}").exists():
        pytest.skip(f"/tmp/x509up_u{os.getuid()} holds a proxy here; these tests hold a token only")
    if not PLUGIN.is_file():
        pytest.skip("xrootd-scitokens-plugins is not installed (make system)")
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is not installed (make system)")


def token_security(pki: Pki, scitokens_cfg: Path) -> str:
    """Tokens only: XrdAccSciTokens the sole authorization (no "++": no token, no access),
    the bearer header handed to it on https, ztn the only protocol on root://."""
    return (
        f"xrd.tls {pki.hostcert} {pki.hostkey}\nxrd.tlsca certdir {pki.certdir}\n"
        f"ofs.authorize 1\nofs.authlib libXrdAccSciTokens.so config={scitokens_cfg}\n"
        "http.header2cgi Authorization authz\n"
        "xrootd.seclib libXrdSec.so\nsec.protocol ztn\nsec.protbind * only ztn\n"
    )


@dataclass(frozen=True)
class TokenSite:
    pki: Pki
    issuer: Issuer
    root: Path
    port: int  # root:// (ztn)
    http_port: int  # https://
    tokens: dict[str, Path]  # good, other-key, expired: 0600 files; 0644: good, mode 0644

    @property
    def log(self) -> Path:
        return self.root / "se" / "run" / "xrootd.log"

    def url(self, scheme: str) -> str:
        port = self.port if scheme == "root" else self.http_port
        return f"{scheme}://localhost:{port}//{NAME}"

    def env(self, token: str | None) -> dict[str, str]:
        """No proxy anywhere, the test CA trusted, the token (if any) as a grid job finds it."""
        bearer = {} if token is None else {"BEARER_TOKEN_FILE": str(self.tokens[token])}
        return job_env(self.pki, self.root, **bearer)


@contextmanager
def token_server(root: Path, pki: Pki, security: str) -> Iterator[tuple[int, int, Path]]:
    """XRootD as grid_site.xrootd_server runs it, in a mount namespace where the test CA is
    among the system CAs (token_issuer.trusting), its key cache (scitokens-cpp's sqlite under
    $XDG_CACHE_HOME) in ``root/cache`` (not $HOME: the library asks the passwd file)."""
    wrap = functools.partial(trusting, pki.root / "ca.pem", root / "ca-bundle.crt")
    with xrootd_server(root, security, wrap, {"XDG_CACHE_HOME": str(root / "cache")}) as server:
        yield server.port, server.http_port, server.data


def _write_token(path: Path, token: str) -> Path:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(token + "\n")
    return path


@pytest.fixture(scope="module")
def site(small_files: dict[str, Path]) -> Iterator[TokenSite]:
    needs_token_tools()
    with pki_root("instore-tokens-") as (root, pki):
        keys = root / "keys"
        keys.mkdir(mode=0o700)
        key, forged = make_key(keys, "instore-test"), make_key(keys, "instore-test", "forged")
        with serve_issuer(pki.hostcert, pki.hostkey, [key.jwk]) as issuer:
            cfg = root / "scitokens.cfg"
            cfg.write_text(f"[Global]\naudience = {AUDIENCE}\n\n[Issuer instore-test]\n"
                           f"issuer = {issuer.url}\nbase_path = /\n")  # fmt: skip
            tokens = {
                "good": sign(key, wlcg_claims(issuer.url, AUDIENCE)),
                "other-key": sign(forged, wlcg_claims(issuer.url, AUDIENCE)),
                "expired": sign(key, wlcg_claims(issuer.url, AUDIENCE, lifetime_s=-600)),
            }
            files = {name: _write_token(root / f"bt-{name}", tok) for name, tok in tokens.items()}
            files["0644"] = _write_token(root / "bt-0644", tokens["good"])
            files["0644"].chmod(0o644)  # readable by others: ztn will not send it
            security = token_security(pki, cfg)
            with token_server(root / "se", pki, security) as (port, http_port, data):
                shutil.copy(small_files["ordered"], data / NAME)
                (data / NAME).chmod(0o644)
                yield TokenSite(pki, issuer, root, port, http_port, files)


def _read(
    cli: Cli, site: TokenSite, scheme: str, token: str | None, engine: str = "uproot"
) -> tuple:
    """``instore read`` of the site's file: (exit status, its run record, stderr)."""
    proc = cli("read", site.url(scheme), "--engine", engine, "--timeout", "30",
               env=site.env(token))  # fmt: skip
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    assert lines, f"no run record: {proc.stdout[-2000:]} {proc.stderr[-2000:]}"
    return proc.returncode, json.loads(lines[-1]), proc.stderr


def _status(site: TokenSite, token: str | None) -> int:
    """What the storage itself answers a GET of the file over https with this token."""
    ctx = ssl.create_default_context(cafile=str(site.pki.root / "ca.pem"))
    req = urllib.request.Request(site.url("https"), headers={"Range": "bytes=0-99"})
    if token is not None:
        req.add_header("Authorization", f"Bearer {site.tokens[token].read_text().strip()}")
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=30) as resp:
            return resp.status
    except urllib.error.HTTPError as err:
        return err.code


def test_the_storage_takes_the_token_and_fetched_the_issuers_keys(site: TokenSite) -> None:
    assert _status(site, "good") == 206
    assert site.issuer.served["/.well-known/openid-configuration"] >= 1
    assert site.issuer.served["/jwks"] >= 1, "the signature was checked against the JWKS"


# Why XrdAccSciTokens refused each token (its log line): the signature, then the expiry.
REASONS = {"other-key": "Failed to deserialize SciToken: evp verify final failed",
           "expired": "Failed to deserialize SciToken: token verification failed: token expired"}  # fmt: skip


@pytest.mark.parametrize("token", ["other-key", "expired", None])
def test_the_storage_refuses_a_bad_or_missing_token(site: TokenSite, token: str | None) -> None:
    seen = site.log.stat().st_size
    assert _status(site, token) in (401, 403)
    with site.log.open() as log:
        log.seek(seen)
        said = log.read()
    assert "Unable to open /" + NAME in said and "permission denied" in said, said
    if token is not None:
        assert REASONS[token] in said, said


@pytest.mark.parametrize("scheme", ["https", "root"])
def test_uproot_reads_with_the_token_and_records_its_kind(
    site: TokenSite, scheme: str, cli: Cli
) -> None:
    status, record, stderr = _read(cli, site, scheme, "good")
    assert status == 0, (record.get("error"), stderr[-2000:])
    assert record["error"] is None and record["bytes_read"] > 1_000_000
    assert record["provenance"]["credential"] == {"kind": "token"}
    text = json.dumps(record)
    token = site.tokens["good"].read_text().strip()
    assert token not in text and token.split(".")[2] not in text, "no token in the record"


def test_the_root_engine_reads_root_with_the_token_through_ztn(site: TokenSite, cli: Cli) -> None:
    status, record, stderr = _read(cli, site, "root", "good", engine="root")
    assert status == 0, (record.get("error"), stderr[-2000:])
    assert record["error"] is None and record["bytes_read"] > 1_000_000
    assert record["provenance"]["credential"] == {"kind": "token"}


@pytest.mark.parametrize("scheme", ["https", "root"])
@pytest.mark.parametrize("token", ["other-key", "expired"])
def test_a_refused_token_is_said_to_be_refused(
    site: TokenSite, scheme: str, token: str, cli: Cli
) -> None:
    status, record, _ = _read(cli, site, scheme, token)
    assert status == 1
    assert record["error"] == (f"authentication refused by {site.url(scheme)}: the server "
                               "refused the bearer token; get one (e.g. oidc-token or "
                               "htgettoken) and export BEARER_TOKEN_FILE with the scopes it "
                               "needs")  # fmt: skip
    assert record["provenance"]["credential"] == {"kind": "token"}


@pytest.mark.parametrize("engine", ["uproot", "root"])
def test_a_token_file_others_can_read_is_named_for_root(
    site: TokenSite, engine: str, cli: Cli
) -> None:
    """XrdSecztn keeps a token whose file is not 0600 ("excessive permissions"); the client
    then only says "No protocols left to try": the fix is the file's mode, not a new token.
    https sends the same file."""
    loose = site.tokens["0644"]
    assert _read(cli, site, "https", "0644")[0] == 0
    status, record, _ = _read(cli, site, "root", "0644", engine)
    assert status == 1
    assert record["error"] == (f"authentication refused by {site.url('root')}: bearer token file "
                               f"{loose} can be read by others, so XRootD's ztn client never "
                               f"sends it; chmod 600 {loose}")  # fmt: skip


@pytest.mark.parametrize("scheme", ["https", "root"])
def test_no_token_is_said_to_be_missing(site: TokenSite, scheme: str, cli: Cli) -> None:
    if Path(f"/tmp/bt_u{os.getuid()}").exists():
        pytest.skip(f"/tmp/bt_u{os.getuid()} holds a token here (WLCG discovery finds it)")
    status, record, _ = _read(cli, site, scheme, None)
    assert status == 1
    error = record["error"]
    assert error.startswith(f"authentication refused by {site.url(scheme)}: "), error
    assert "no bearer token" in error and "regenerate" not in error
    assert record["provenance"]["credential"] is None


def _stage_in(cli: Cli, site: TokenSite, scheme: str, scratch: Path) -> tuple:
    proc = cli("read", site.url(scheme), "--engine", "root", "--stage-in", "xrdcp",
               "--scratch", str(scratch), "--timeout", "60", env=site.env("good"))  # fmt: skip
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    assert lines, (proc.stdout[-2000:], proc.stderr[-2000:])
    return proc.returncode, json.loads(lines[-1])


def test_stage_in_copies_over_root_with_the_token(
    site: TokenSite, cli: Cli, tmp_path: Path
) -> None:
    """Stage-in (instore.storage.fetch: xrdcp) with a token only, as a grid job of a token site
    stages its input: ztn hands xrdcp the token; the job then reads the copy whole."""
    status, record = _stage_in(cli, site, "root", tmp_path / "scratch")
    assert status == 0 and record["error"] is None and record["events"] > 0, record["error"]
    assert record["provenance"]["credential"] == {"kind": "token"}
    assert record["stage_in_s"] > 0 and record["bytes_read"] > 1_000_000


def test_stage_in_over_davs_with_a_token_names_xrdcps_http_plugin_not_the_token(
    site: TokenSite, cli: Cli, tmp_path: Path
) -> None:
    """xrdcp refused https:// without --allow-http ("https file protocol is not supported"),
    and with it, its XrdClHttp 5.5 sends no bearer token: the storage's refusal then read as
    "the server refused the bearer token; get one", the wrong fix. It says the real cause."""
    status, record = _stage_in(cli, site, "davs", tmp_path / "scratch")
    assert status == 1
    assert "its HTTP plug-in (XrdClHttp 5.5) sends an X.509 proxy only" in record["error"]
    assert "stage in over root://" in record["error"] and "get one" not in record["error"]
