import random, statistics, sys, time
from instore.storage import open_reader
N = 60
for url in ("root://10.213.55.2:1094//data/f.bin", "http://10.213.55.2:8000/data/f.bin"):
    r = open_reader(url, 30)
    rng = random.Random(3)
    for size in (64, 16384, 262144):
        lat = []
        for _ in range(N):
            off = rng.randrange(0, 60_000_000)
            t = time.perf_counter(); r.read_ranges([(off, off + size)]); lat.append(time.perf_counter() - t)
        print(url.split(':')[0], size, "median %.3f ms p90 %.3f ms" % (1e3*statistics.median(lat), 1e3*sorted(lat)[int(0.9*N)]))
    r.close()
