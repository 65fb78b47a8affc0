"""Small reads through the jobs' own readers, one protocol after another: the median and 90th
percentile time of N reads per size at random offsets of a file already in the server's page
cache. Usage: python small-reads.py [-n N] URL [URL ...] (root:// and http:// URLs of one file)."""

import argparse
import random
import statistics
import time

from instore.storage import open_reader


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-n", type=int, default=300, help="reads per size")
    parser.add_argument("urls", nargs="+")
    args = parser.parse_args()
    for url in args.urls:
        reader = open_reader(url, 30)
        rng = random.Random(3)
        for size in (64, 16384, 262144):
            lat = []
            for _ in range(args.n):
                off = rng.randrange(0, reader.size - size)
                t = time.perf_counter()
                reader.read_ranges([(off, off + size)])
                lat.append(time.perf_counter() - t)
            p90 = sorted(lat)[int(0.9 * args.n)]
            print(f"{url.split(':')[0]} {size} B: median {1e3 * statistics.median(lat):.3f} ms, "
                  f"90th percentile {1e3 * p90:.3f} ms")  # fmt: skip
        reader.close()


if __name__ == "__main__":
    main()
