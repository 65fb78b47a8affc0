"""16 concurrent XRootD opens on an emulated lan-hdd site, with and without CPU hogs beside."""
import multiprocessing as mp, os, sys, time, yaml, subprocess
from pathlib import Path
sys.path.insert(0, "/work/main")
from tests.integration.emulated import site_file, torn_down_after
from instore.site import open_site
from instore.site.emulated.names import SiteNames

def opener(url, q, start):
    os.environ["XRD_LOGLEVEL"] = "Debug"; os.environ["XRD_LOGFILE"] = f"/tmp/repro5/cl-{os.getpid()}.log"
    from XRootD import client
    while time.time() < start: time.sleep(0.001)
    f = client.File(); t0 = time.perf_counter()
    st, _ = f.open(url, timeout=30); t1 = time.perf_counter()
    q.put((t1 - t0, st.ok, os.getpid())); f.close()

def hog(stop):
    while not stop.is_set(): pass

tmp = Path("/tmp/repro5/w"); tmp.mkdir(exist_ok=True)
files = []
for k in range(16):
    p = tmp / f"f{k}.root"; p.write_bytes(os.urandom(1 << 20)); files.append(p)
site = site_file(tmp, "itest-repro5", "lan-hdd", ["xrootd"], disk_mb=200)
with torn_down_after(SiteNames("itest-repro5"), "repro"):
    with open_site(site, files=files) as live:
        print("url", live.url("xrootd", files[0].name), flush=True)
        for hogs in (0,):
            stop = mp.Event(); hs = [mp.Process(target=hog, args=(stop,)) for _ in range(hogs)]
            [h.start() for h in hs]
            for rep in range(6):
                live.drop_caches() if hasattr(live, "drop_caches") else None
                q = mp.Queue(); start = time.time() + 0.5
                ps = [mp.Process(target=opener, args=(live.url("xrootd", files[k].name), q, start)) for k in range(16)]
                [p.start() for p in ps]; [p.join() for p in ps]
                got = [q.get() for _ in ps]; ts = sorted(g[0] for g in got)
                print("slow pids", [g[2] for g in got if g[0] > 1])
                print(f"hogs {hogs} rep {rep}: max {ts[-1]:.3f} s, >1 s: {sum(t > 1 for t in ts)}", flush=True)
            stop.set(); [h.join() for h in hs]
        import shutil, glob
        for g in glob.glob(str(SiteNames("itest-repro5").xrootd_dir) + "/**/*.log", recursive=True):
            shutil.copy(g, "/tmp/repro5/server-" + os.path.basename(g))
