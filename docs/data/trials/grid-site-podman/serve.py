"""Keep the test suite's grid site up for a trial by hand: a fresh PKI (CA, host and user
certificates, a SHA-256 proxy), XRootD 5.5 with GSI on root:// and XrdHttp over TLS, a
grid-mapfile and an authdb (tests/integration/grid_site.py). Run as root from the checkout:

    .venv/bin/python docs/data/trials/grid-site-podman/serve.py OUT_DIR

It writes OUT_DIR/site.env (the two ports, the CA directory and the proxy) and serves until
SIGTERM; the server is stopped by PID and its directory removed on the way out."""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path

from tests.integration.grid_site import grid_security, pki_root, xrootd_server


def main(out: Path) -> None:
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with (
        pki_root("instore-trial-site-") as (root, pki),
        xrootd_server(root / "site", security=grid_security(pki)) as server,
    ):
        out.mkdir(parents=True, exist_ok=True)
        (out / "site.env").write_text(
            f"ROOT_PORT={server.port}\nHTTP_PORT={server.http_port}\n"
            f"CERTDIR={pki.certdir}\nPROXY={pki.proxy}\nDATA={server.data}\n"
        )
        print(f"serving: {server.url('root')} {server.url('https')}", flush=True)
        stop.wait()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
