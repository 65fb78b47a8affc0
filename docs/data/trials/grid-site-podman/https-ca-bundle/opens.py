"""Four https opens in one process through XrdClHttp, as instore's root engine opens https,
each timed. Usage: opens.py 'https://host:port//dir/{file}'."""

import sys
import time

from instore.rootenv import xrdclhttp
from instore.urls import http_url

files = xrdclhttp()
for name in ("ordered-r0.root", "ordered-r1.root", "ordered-r0.root", "unordered-r0.root"):
    start = time.perf_counter()
    f = files.XrdClHttpFile(http_url(sys.argv[1].replace("{file}", name)))
    took = time.perf_counter() - start
    print(f"{name}: open {took * 1e3:.0f} ms, zombie={f.IsZombie()}", flush=True)
    f.Close()
