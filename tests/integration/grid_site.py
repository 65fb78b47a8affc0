"""A grid storage element as WLCG sites configure one, for integration tests.

``make_pki`` makes, with openssl, a CA (in ``certificates/<hash>.0``), a host certificate
(CN=localhost), a user certificate and RFC 3820 proxies signed with SHA-256, as voms-proxy-init
makes them: a valid one and an expired one; and one from ``xrdgsiproxy init`` (signed with SHA-1).
``xrootd_server`` runs Debian's XRootD 5.5 on free loopback ports and stops it by PID, however
the test ends. ``GRID_SECURITY`` is the configuration of a site: GSI only on root://, XrdHttp
over TLS (``xrd.tls``, ``xrd.tlsca``) taking the proxy as client certificate, the user's DN
mapped by a grid-mapfile and authorised by an authdb; an anonymous https client gets 403."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

USER_DN = "/DC=test/CN=Instore Test User"
TOOLS = ("xrootd", "xrdcp", "xrdfs", "xrdgsiproxy", "openssl")


def needs_tools() -> None:
    """Skip where the tools are missing (README: `make system` installs them) or not root."""
    for tool in TOOLS:
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (make system)")
    if os.geteuid() != 0:
        pytest.skip("xrootd -R xrootd needs root")


def needs_xrootd() -> None:
    """Skip where Debian's xrootd is missing or the tests are not root (xrootd -R xrootd)."""
    if shutil.which("xrootd") is None or os.geteuid() != 0:
        pytest.skip("needs Debian's xrootd and root (xrootd -R xrootd): make system")


@contextmanager
def readable_tmp(prefix: str) -> Iterator[Path]:
    """A temporary directory the xrootd user can read (pytest's own are private to root);
    removed on the way out, whatever happened inside."""
    root = Path(tempfile.mkdtemp(prefix=prefix))
    root.chmod(0o755)  # the xrootd user reads the host certificate and the data
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _ssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _signed(cwd: Path, name: str, subject: str, ext: str) -> None:
    """A key (traditional RSA PEM, which XRootD 5.5 reads) and a certificate signed by the CA."""
    _ssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}key.pem", "-out",
         f"{name}.csr", "-subj", subject, cwd=cwd)  # fmt: skip
    _ssl("rsa", "-in", f"{name}key.pem", "-traditional", "-out", f"{name}key.pem", cwd=cwd)
    (cwd / f"{name}.ext").write_text(ext)
    _ssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
         "-CAcreateserial", "-out", f"{name}cert.pem", "-days", "2", "-sha256", "-extfile",
         f"{name}.ext", cwd=cwd)  # fmt: skip


_PROXY_CA = """[ca]
default_ca = proxy
[proxy]
database = index.txt
new_certs_dir = .
serial = serial
default_md = sha256
policy = anything
unique_subject = no
[anything]
domainComponent = optional
commonName = optional
"""
_PROXY_EXT = ("basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,"
              "keyEncipherment\nproxyCertInfo=critical,language:id-ppl-inheritAll\n")  # fmt: skip


def make_proxy(root: Path, out: Path, start: str, end: str, serial: int) -> Path:
    """An RFC 3820 proxy of the user certificate, signed with SHA-256, valid from ``start`` to
    ``end`` (``YYYYMMDDHHMMSSZ``; ``openssl ca`` can backdate, ``x509 -req`` cannot)."""
    work = root / f"proxy-{serial}"
    work.mkdir()
    (work / "ca.cnf").write_text(_PROXY_CA)
    (work / "index.txt").write_text("")
    (work / "serial").write_text(f"{serial:02x}\n")
    (work / "p.ext").write_text(_PROXY_EXT)
    _ssl("req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", "key.pem", "-out", "p.csr",
         "-subj", f"{USER_DN}/CN={serial}", cwd=work)  # fmt: skip
    _ssl("rsa", "-in", "key.pem", "-traditional", "-out", "key.pem", cwd=work)
    _ssl("ca", "-config", "ca.cnf", "-cert", str(root / "usercert.pem"), "-keyfile",
         str(root / "userkey.pem"), "-in", "p.csr", "-out", "cert.pem", "-startdate", start,
         "-enddate", end, "-extfile", "p.ext", "-batch", "-notext", "-preserveDN", cwd=work)  # fmt: skip
    parts = [(work / n).read_text() for n in ("cert.pem", "key.pem")]
    out.write_text("".join(parts) + (root / "usercert.pem").read_text())
    out.chmod(0o600)
    return out


def _stamp(offset_s: float) -> str:
    return time.strftime("%Y%m%d%H%M%SZ", time.gmtime(time.time() + offset_s))


@dataclass(frozen=True)
class Pki:
    root: Path
    certdir: Path
    proxy: Path  # SHA-256, valid for a day (as voms-proxy-init makes them)
    expired_proxy: Path
    sha1_proxy: Path  # from xrdgsiproxy init 5.5: accepted by GSI, refused by OpenSSL for TLS

    @property
    def hostcert(self) -> Path:
        return self.root / "hostcert.pem"

    @property
    def hostkey(self) -> Path:
        return self.root / "hostkey.pem"


def make_pki(root: Path) -> Pki:
    """CA in certificates/<hash>.0, host cert CN=localhost, user cert and its proxies."""
    _ssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
         "-days", "2", "-sha256", "-subj", "/DC=test/CN=Instore Test CA", cwd=root)  # fmt: skip
    certdir = root / "certificates"
    certdir.mkdir()
    digest = subprocess.run(["openssl", "x509", "-hash", "-noout", "-in", "ca.pem"], cwd=root,
                            check=True, capture_output=True, text=True).stdout.strip()  # fmt: skip
    shutil.copy(root / "ca.pem", certdir / f"{digest}.0")
    usage = "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n"
    _signed(root, "host", "/DC=test/CN=localhost",
            usage + "subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n")  # fmt: skip
    _signed(root, "user", USER_DN, usage + "extendedKeyUsage=clientAuth\n")
    (root / "userkey.pem").chmod(0o400)
    shutil.chown(root / "hostkey.pem", "xrootd")
    (root / "hostkey.pem").chmod(0o400)
    proxy = make_proxy(root, root / "x509up", _stamp(-300), _stamp(86400), 11)
    expired = make_proxy(root, root / "x509up-expired", "20200101000000Z", "20200102000000Z", 12)
    sha1 = root / "x509up-sha1"
    subprocess.run(["xrdgsiproxy", "init", "-cert", str(root / "usercert.pem"), "-key",
                    str(root / "userkey.pem"), "-certdir", str(certdir), "-out", str(sha1)],
                   cwd=root, check=True, capture_output=True)  # fmt: skip
    return Pki(root, certdir, proxy, expired, sha1)


@contextmanager
def pki_root(prefix: str) -> Iterator[tuple[Path, Pki]]:
    """A temporary directory the xrootd user can read, holding a fresh PKI in pki/; removed
    on the way out, whatever happened inside."""
    with readable_tmp(prefix) as root:
        pki_dir = root / "pki"
        pki_dir.mkdir(mode=0o755)
        yield root, make_pki(pki_dir)


def job_env(pki: Pki, runtime_dir: Path, **over: str) -> dict[str, str]:
    """A grid job's environment on a site of this PKI: none of this machine's credentials
    (``X509_*``, ``BEARER_*``, ``XDG_RUNTIME_DIR``: a token under /run/user would be found),
    the test CA trusted, ``runtime_dir`` where a job looks for a token, one connection retry;
    then ``over`` (a proxy, a token file)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("X509_", "BEARER_", "XDG_RUNTIME_DIR"))}  # fmt: skip
    env.update(X509_CERT_DIR=str(pki.certdir), XDG_RUNTIME_DIR=str(runtime_dir),
               XRD_CONNECTIONRETRY="1")  # fmt: skip
    env.update(over)  # after: a test may replace any of them (another CA directory)
    return env


def grid_security(pki: Pki) -> str:
    """GSI only on root://, XrdHttp over TLS with client certificates, DN -> user by a
    grid-mapfile, reads and writes authorised for that user only."""
    gridmap, authdb = pki.root / "grid-mapfile", pki.root / "authdb"
    gridmap.write_text(f'"{USER_DN}" instoreuser\n')
    authdb.write_text("u instoreuser / a\n")
    return (
        f"xrd.tls {pki.hostcert} {pki.hostkey}\nxrd.tlsca certdir {pki.certdir}\n"
        f"http.gridmap {gridmap}\nxrootd.seclib libXrdSec.so\n"
        f"sec.protocol gsi -certdir:{pki.certdir} -cert:{pki.hostcert} -key:{pki.hostkey} "
        f"-crl:0 -gridmap:{gridmap} -gmapopt:2 -vomsat:0 -dlgpxy:0 -ca:1\n"
        f"sec.protbind * only gsi\nofs.authorize 1\nacc.authdb {authdb}\n"
    )


def free_port() -> int:
    return free_ports(1)[0]


def free_ports(count: int) -> list[int]:
    """``count`` distinct free ports: each socket stays bound until all are chosen."""
    socks = [socket.socket() for _ in range(count)]
    try:
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in socks]
    finally:
        for sock in socks:
            sock.close()


# A start under load (CI builds Apptainer and the SIF beside the tests) can take tens of
# seconds; seen once on 2026-11-28: a GSI server not answering within 15 s beside the SIF build.
START_S = 60.0


def _answers(port: int, proc: subprocess.Popen[bytes], deadline_s: float = START_S) -> bool:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if proc.poll() is not None:
            return False
        try:
            with socket.create_connection(("localhost", port), timeout=1):
                return True
        except OSError:
            time.sleep(0.2)
    return False


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL after 10 s: the server is gone when this returns."""
    if proc.poll() is not None:
        return
    os.kill(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


@dataclass(frozen=True)
class Server:
    port: int  # root://
    http_port: int  # XrdHttp: https:// with grid_security, else http://
    data: Path

    def url(self, scheme: str, sub: str = "") -> str:
        port = self.port if scheme == "root" else self.http_port
        return f"{scheme}://localhost:{port}//{sub}{{file}}"


@contextmanager
def xrootd_server(
    root: Path,
    security: str = "",
    wrap: Callable[[list[str]], list[str]] | None = None,
    env: dict[str, str] | None = None,
    chksum: bool = True,
) -> Iterator[Server]:
    """XRootD with XrdHttp over a directory the server may write, computing adler32 (unless
    ``chksum`` is False, as many sites run it), on free ports; stopped by PID on exit, whatever
    happened inside. ``wrap`` turns the command into the one to start (it must exec xrootd, so
    the PID stays the server's); ``env`` is added to the server's environment; ``root/cache``
    is a directory the server may write."""
    data, run, cache = root / "data", root / "run", root / "cache"
    root.mkdir(mode=0o755, exist_ok=True)
    root.chmod(0o755)
    for d in (data, run, cache):
        d.mkdir()
        shutil.chown(d, "xrootd")
    log, launch = run / "xrootd.log", run / "launch.err"  # launch: what a wrapper complained
    for attempt in (1, 2):
        port, http_port = free_ports(2)
        conf = root / "xrootd.cfg"
        conf.write_text(f"xrd.port {port}\nall.export /\noss.localroot {data}\nall.adminpath {run}\n"
                        f"all.pidpath {run}\n{'xrootd.chksum adler32' if chksum else ''}\n"
                        f"xrd.protocol XrdHttp:{http_port} libXrdHttp.so\n{security}")  # fmt: skip
        cmd = ["xrootd", "-R", "xrootd", "-c", str(conf), "-l", str(log)]
        with launch.open("wb") as err:
            # A session of its own, as instore starts its servers: xrootd signals its own
            # process group (SIGHUP, seen killing the whole test session), which must not be
            # pytest's.
            proc = subprocess.Popen(wrap(cmd) if wrap else cmd, env={**os.environ, **(env or {})},
                                    stdout=subprocess.DEVNULL, stderr=err,
                                    start_new_session=True)  # fmt: skip
        # Both ports: XrdHttp's listener comes up after the root:// one, and a request sent in
        # between is refused (seen in a fresh clone's run on a loaded machine: the token site's
        # first https request, "Connection refused", with its root:// port answering).
        silent = next((p for p in (port, http_port) if not _answers(p, proc)), None)
        if silent is None:
            break
        state = "running" if proc.poll() is None else f"exited with {proc.returncode}"
        said = [f.read_text()[-2000:] for f in (log, launch) if f.exists()]
        stop(proc)
        if attempt == 1 and proc.returncode is not None and proc.returncode < 0 and not any(
            t.strip() for t in said
        ):  # fmt: skip
            # XRootD 5.5.3 died once of a general protection fault in libc at its start, before
            # its first log line, beside a loaded fresh-clone CI (0 of 40 starts since, idle):
            # not the behaviour under test, so a second start, said on stderr
            print(f"xrootd died of signal {-proc.returncode} at its start, before its first "
                  "log line: starting it again", file=sys.stderr)  # fmt: skip
            continue
        pytest.fail(f"xrootd did not answer on port {silent} within {START_S:g} s ({state}): "
                    f"{' | '.join(said)}")  # fmt: skip
    try:
        yield Server(port, http_port, data)
    finally:
        stop(proc)
