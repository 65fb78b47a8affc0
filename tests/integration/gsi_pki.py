"""Grid PKI for integration tests, made with openssl: a CA in certificates/<hash>.0, a host
certificate (CN=localhost), a user certificate and its proxy (xrdgsiproxy init); and helpers to
start an XRootD server on a free port and wait until it answers."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path


def _ssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _signed(cwd: Path, name: str, subject: str, ext: str) -> None:
    """A key (traditional RSA PEM, which XRootD 5.5 reads) and a certificate signed by the CA."""
    _ssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}key.pem", "-out",
         f"{name}.csr", "-subj", subject, cwd=cwd)  # fmt: skip
    _ssl("rsa", "-in", f"{name}key.pem", "-traditional", "-out", f"{name}key.pem", cwd=cwd)
    (cwd / f"{name}.ext").write_text(ext)
    _ssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
         "-CAcreateserial", "-out", f"{name}cert.pem", "-days", "2", "-extfile", f"{name}.ext",
         cwd=cwd)  # fmt: skip


def _pki(root: Path) -> tuple[Path, Path]:
    """CA in certificates/<hash>.0, host cert CN=localhost, user cert and its proxy."""
    _ssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
         "-days", "2", "-subj", "/DC=test/CN=Instore Test CA", cwd=root)  # fmt: skip
    certdir = root / "certificates"
    certdir.mkdir()
    digest = subprocess.run(["openssl", "x509", "-hash", "-noout", "-in", "ca.pem"], cwd=root,
                            check=True, capture_output=True, text=True).stdout.strip()  # fmt: skip
    shutil.copy(root / "ca.pem", certdir / f"{digest}.0")
    usage = "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n"
    _signed(root, "host", "/DC=test/CN=localhost",
            usage + "subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n")  # fmt: skip
    _signed(root, "user", "/DC=test/CN=Instore Test User", usage + "extendedKeyUsage=clientAuth\n")
    (root / "userkey.pem").chmod(0o400)
    shutil.chown(root / "hostkey.pem", "xrootd")
    (root / "hostkey.pem").chmod(0o400)
    proxy = root / "x509up"
    subprocess.run(["xrdgsiproxy", "init", "-cert", str(root / "usercert.pem"), "-key",
                    str(root / "userkey.pem"),
                    "-certdir", str(certdir), "-out", str(proxy)], cwd=root, check=True,
                   capture_output=True)  # fmt: skip
    return certdir, proxy


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _answers(port: int, pid: int, deadline_s: float = 15.0) -> bool:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        try:
            os.waitpid(pid, os.WNOHANG)
            with socket.create_connection(("localhost", port), timeout=1):
                return True
        except ChildProcessError:
            return False
        except OSError:
            time.sleep(0.2)
    return False
