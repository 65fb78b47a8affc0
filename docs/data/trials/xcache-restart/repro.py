"""Loop the XCache cold restart and warm read of test_warm_state_fills_a_purged_cache_off_the_clock
(README.md beside this file). Usage, as root, from the repository root:
PYTHONPATH=.:workflow .venv/bin/python docs/data/trials/xcache-restart/repro.py N"""

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from instore.site import open_site

from tests.integration.test_site_xcache import BLOB, BLOB_MB, site_config

tmp = Path(tempfile.mkdtemp())
blob = tmp / BLOB
blob.write_bytes(os.urandom(BLOB_MB << 20))
with open_site(site_config(), files=[blob], results=tmp) as live:
    for i in range(int(sys.argv[1])):
        t0 = time.perf_counter()
        live.prepare_cache("cold", [BLOB])
        t1 = time.perf_counter()
        live.prepare_cache("warm", [BLOB])
        t2 = time.perf_counter()
        print(f"{i}: cold {t1 - t0:.2f} s, warm {t2 - t1:.2f} s", flush=True)
        if t2 - t1 > 20:  # keep the cache's logs of a stalled read
            shutil.copytree(live.names.xcache_dir, f"/tmp/xc-stall-{i}", dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("store*", "*.dat"))  # fmt: skip
