"""16 XRootD opens at once on an emulated lan-hdd site, round after round, with and without CPU
hogs beside (README.md). Run as root from a checkout: .venv/bin/python repro.py."""

from __future__ import annotations

import multiprocessing as mp
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
from instore.site import open_site
from instore.site.emulated.names import SiteNames

from tests.integration.emulated import site_file, torn_down_after

CLIENTS = 16
ROUNDS = 5


def opener(url: str, out: mp.Queue, start: float) -> None:
    from XRootD import client

    while time.time() < start:
        time.sleep(0.001)
    f = client.File()
    t0 = time.perf_counter()
    status, _ = f.open(url, timeout=30)
    out.put((time.perf_counter() - t0, status.ok))
    f.close()


def hog(stop: mp.Event) -> None:
    while not stop.is_set():
        pass


def one_round(urls: list[str]) -> list[float]:
    out: mp.Queue = mp.Queue()
    start = time.time() + 0.5
    procs = [mp.Process(target=opener, args=(u, out, start)) for u in urls]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    return sorted(out.get()[0] for _ in procs)


def main() -> None:
    work = Path("/tmp/instore-dns-5s")
    work.mkdir(exist_ok=True)
    files = []
    for k in range(CLIENTS):
        path = work / f"f{k}.root"
        path.write_bytes(os.urandom(1 << 20))
        files.append(path)
    site = site_file(work, "itest-repro5", "lan-hdd", ["xrootd"], disk_mb=200)
    with torn_down_after(SiteNames("itest-repro5"), "repro"), open_site(site, files=files) as live:
        urls = [live.url("xrootd", f.name) for f in files]
        for hogs in (0, 4, 8):
            stop = mp.Event()
            busy = [mp.Process(target=hog, args=(stop,)) for _ in range(hogs)]
            for b in busy:
                b.start()
            for rep in range(ROUNDS):
                took = one_round(urls)
                slow = sum(t > 1 for t in took)
                print(f"hogs {hogs} rep {rep}: max {took[-1]:.3f} s, >1 s: {slow}", flush=True)
            stop.set()
            for b in busy:
                b.join()


if __name__ == "__main__":
    main()
