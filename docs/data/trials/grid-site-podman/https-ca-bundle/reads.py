"""Ten 64 kB reads of one open file over https through XrdClHttp, as instore's root engine
opens https: their wall and the process's CPU. Usage: reads.py 'https://host:port//dir/{file}'
(the proxy in X509_USER_PROXY, the CAs in X509_CERT_DIR)."""

import ctypes
import sys
import time

from instore.rootenv import xrdclhttp
from instore.urls import http_url

READS, SIZE = 10, 65536
f = xrdclhttp().XrdClHttpFile(http_url(sys.argv[1].replace("{file}", "ordered-r1.root")))
buf = ctypes.create_string_buffer(SIZE)
wall, cpu = time.perf_counter(), time.process_time()
for i in range(READS):
    f.ReadBuffer(buf, i * 1_000_000, SIZE)
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
print(f"{READS} reads: {wall * 1e3:.0f} ms wall, {cpu * 1e3:.0f} ms CPU", flush=True)
