"""A fresh XRootD connection: open, SMALL reads of 4 kB, then one read of N bytes, each timed.

Run in a fresh process per line (the client keeps one connection per server for the
process's life, so a second read in the same process finds the window grown):

    python read_after_open.py N SMALL

``extra``: the large read's time beyond one RTT (100.5 ms here) and its bytes at 12.5 MB/s.
"""

import sys
import time

from XRootD import client

URL = "root://10.213.111.2:1094//data/blob16.bin"  # the emulated site's storage address
RTT_S, RATE = 0.1005, 12.5e6

n, small = int(sys.argv[1]), int(sys.argv[2])
f = client.File()
t0 = time.perf_counter()
f.open(URL)
t1 = time.perf_counter()
for k in range(small):
    f.read(k * 100000, 4000)
t2 = time.perf_counter()
_, data = f.read(2000000, n)
t3 = time.perf_counter()
extra = t3 - t2 - n / RATE - RTT_S
print(n, small, f"open {t1 - t0:.3f} small {t2 - t1:.3f} big {t3 - t2:.3f}",
      f"rate-only {n / RATE:.3f} extra {extra:.3f}")  # fmt: skip
