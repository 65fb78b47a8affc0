"""A WLCG token issuer on loopback, for integration tests: keys and signatures by openssl.

``make_key`` makes an RSA key with openssl and its public half as a JWK (``kid``, ``n``, ``e``);
``sign`` makes an RS256 JWT (``openssl dgst -sha256 -sign``, base64url by hand) from claims that
``wlcg_claims`` fills as the WLCG token profile 1.0 asks (iss, aud, sub, iat, nbf, exp, jti,
scope, wlcg.ver). ``serve_issuer`` answers, over https with a certificate of the test CA,
``/.well-known/openid-configuration`` and the JWKS it points to, as a token issuer does, and
counts what it served; it runs in a thread of the test and is shut down however the test ends.

The storage (XRootD 5.5.3 with scitokens-cpp 0.7.3, Debian bookworm) fetches those over https
with libcurl trusting only the system CAs: neither library takes a CA file (scitokens-cpp's
``tls.ca_file`` and XRootD passing its own CA to it came later, xrootd/xrootd#2095), and
Debian's libcurl reads no CA variable (X509_CERT_DIR, X509_CERT_FILE, CURL_CA_BUNDLE,
SSL_CERT_FILE, SSL_CERT_DIR all leave "SSL peer certificate or SSH remote key was not OK").
``trusting`` therefore runs the server in a private mount namespace where the system bundle has
the test CA appended: the machine's trust store is never changed, and the bind mount goes away
with the process.
"""

from __future__ import annotations

import base64
import json
import ssl
import subprocess
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

SCOPE = "storage.read:/ storage.modify:/"
SYSTEM_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")  # libcurl's compiled-in CA file
CONFIG_PATH = "/.well-known/openid-configuration"
JWKS_PATH = "/jwks"


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _int_b64url(value: int) -> str:
    return b64url(value.to_bytes((value.bit_length() + 7) // 8, "big"))


@dataclass(frozen=True)
class SigningKey:
    kid: str
    private: Path  # PEM, only the test reads it

    @property
    def jwk(self) -> dict[str, str]:
        """The public key as a JWK, from the modulus openssl prints (the exponent is 65537)."""
        out = subprocess.run(["openssl", "rsa", "-in", str(self.private), "-noout", "-modulus"],
                             check=True, capture_output=True, text=True).stdout  # fmt: skip
        modulus = int(out.strip().split("=", 1)[1], 16)
        return {"kty": "RSA", "use": "sig", "alg": "RS256", "kid": self.kid,
                "n": _int_b64url(modulus), "e": _int_b64url(65537)}  # fmt: skip


def make_key(directory: Path, kid: str, name: str | None = None) -> SigningKey:
    """A 2048-bit RSA signing key in ``directory/<name or kid>.pem``: two keys under one
    ``kid`` make a forged token that only the signature gives away."""
    path = directory / f"{name or kid}.pem"
    subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048",
                    "-out", str(path)], check=True, capture_output=True)  # fmt: skip
    path.chmod(0o600)
    return SigningKey(kid, path)


def wlcg_claims(issuer: str, audience: str, lifetime_s: float = 1200, **over: Any) -> dict:
    """Claims of a WLCG access token (profile 1.0) reading and writing the whole namespace;
    a negative ``lifetime_s`` makes one that has expired."""
    now = int(time.time())
    claims = {"wlcg.ver": "1.0", "iss": issuer, "aud": audience, "sub": "instore-test-user",
              "iat": now - 60, "nbf": now - 60, "exp": int(now + lifetime_s),
              "jti": str(uuid.uuid4()), "scope": SCOPE}  # fmt: skip
    if lifetime_s < 0:
        claims["iat"] = claims["nbf"] = claims["exp"] - 600
    claims.update(over)
    return claims


def sign(key: SigningKey, claims: dict) -> str:
    """An RS256 JWT of ``claims`` signed with ``key`` (header names its ``kid``)."""
    header = {"alg": "RS256", "typ": "JWT", "kid": key.kid}
    signing_input = ".".join(
        b64url(json.dumps(part, separators=(",", ":")).encode()) for part in (header, claims)
    )
    signature = subprocess.run(["openssl", "dgst", "-sha256", "-sign", str(key.private)],
                               input=signing_input.encode(), check=True,
                               capture_output=True).stdout  # fmt: skip
    return f"{signing_input}.{b64url(signature)}"


def trusting(ca: Path, bundle: Path, cmd: list[str]) -> list[str]:
    """``cmd`` run with ``ca`` added to the system CA bundle it sees, and to nothing else:
    ``bundle`` (system CAs + ``ca``) is bind-mounted over the bundle in a private mount
    namespace, then ``cmd`` is exec'ed (its PID is the one the caller started)."""
    bundle.write_text(SYSTEM_BUNDLE.read_text() + ca.read_text())
    bundle.chmod(0o644)
    script = f'mount --bind "$0" {SYSTEM_BUNDLE} && exec "$@"'
    return ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script,
            str(bundle), *cmd]  # fmt: skip


@dataclass
class Issuer:
    url: str  # https://localhost:PORT, the token's iss
    served: Counter = field(default_factory=Counter)  # path -> requests answered


@contextmanager
def serve_issuer(cert: Path, key: Path, jwks: list[dict[str, str]]) -> Iterator[Issuer]:
    """A token issuer's discovery document and JWKS over https on a free loopback port (the
    certificate must be for localhost); stopped when the block ends, however it ends."""
    issuer = Issuer("")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == CONFIG_PATH:
                body = {"issuer": issuer.url, "jwks_uri": issuer.url + JWKS_PATH}
            elif path == JWKS_PATH:
                body = {"keys": jwks}
            else:
                self.send_error(404)
                return
            data = json.dumps(body).encode()
            issuer.served[path] += 1
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(str(cert), str(key))
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    issuer.url = f"https://localhost:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield issuer
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
