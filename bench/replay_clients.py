"""Benchmark: what a replay client costs the machine it runs on.

1. **One client** (issue 22): a trace over a 512 MiB file replayed closed-loop over root:// and
   over http:// against a local XRootD with XrdHttp (Debian's, started here; the file is in the
   page cache, so the storage is not the limit), in two request patterns at about 100 MB/s
   (``PATTERNS``: 1 MiB reads 10 ms apart, and vector reads of 128 x 64 KiB 80 ms apart as
   ROOT's TTreeCache makes them), paced and with no think time. Per run: MB/s moved and the
   client's own CPU (``client_cpu_s``, its XRootD client's threads included) as a share of one
   core. Target: at most 5% of a core at 100 MB/s. The paced root:// replay is repeated
   (``--repeats``, medians quoted), each time beside PyPI xrootd's client alone doing the same
   paced requests (no instore: what the replayer adds to its client) and XRootD's C++ client
   alone (bench/xrdcl_paced.cxx, built here with g++ against Debian's libXrdCl, into one reused
   buffer: the floor of any XrdCl-based replayer). Debian's ``xrdreplay`` replays the unpaced
   trace once: the field's own replayer's CPU per 100 MB.
2. **Many clients** (issue 23): the load section alone on lan-ssd (an emulated site: needs
   root), the study's agc-load trace replayed by 64 clients at once for 10 s (as the study's
   load points run), each on its own copy, over xrootd and over http; from the records: the
   clients' CPU (sum of ``client_cpu_s`` over the replays' span) and the host's busy share over
   the point, both as shares of all cores. Target: the clients' CPU below 50%. Needs the trace
   and the copies a `make study` made (data/files).

Results go to bench/replay_results.json with the machine they ran on.
Usage: python bench/replay_clients.py [--skip-load] [--clients N] [--repeats N]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import yaml
from instore.filenames import trace_dir

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "bench" / "replay_results.json"
MIB = 1 << 20
FILE_MIB = 512


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _xrootd(root: Path) -> tuple[subprocess.Popen[bytes], int, int]:
    """A plain XRootD over ``root/data`` on a free port, XrdHttp on another (stopped by the
    caller, by PID)."""
    data, run = root / "data", root / "run"
    for d in (data, run):
        d.mkdir(parents=True)
        shutil.chown(d, "xrootd")
    root.chmod(0o755)
    port, http_port = _free_port(), _free_port()
    conf = root / "xrootd.cfg"
    conf.write_text(f"xrd.port {port}\nall.export /\noss.localroot {data}\n"
                    f"all.adminpath {run}\nall.pidpath {run}\n"
                    f"xrd.protocol XrdHttp:{http_port} libXrdHttp.so\n")  # fmt: skip
    proc = subprocess.Popen(["xrootd", "-R", "xrootd", "-c", str(conf), "-l", str(run / "log")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)  # fmt: skip
    for _ in range(100):
        with socket.socket() as s, socket.socket() as h:
            if (
                s.connect_ex(("127.0.0.1", port)) == 0
                and h.connect_ex(("127.0.0.1", http_port)) == 0
            ):
                return proc, port, http_port
        time.sleep(0.1)
    proc.kill()
    raise SystemExit("xrootd did not start")


@dataclass(frozen=True)
class Pattern:
    """One request pattern at about 100 MB/s: ``chunks`` of ``chunk`` bytes per request (a plain
    read when 1, a vector read otherwise), one request every ``pace_s`` seconds."""

    name: str
    chunks: int
    chunk: int
    pace_s: float

    @property
    def request_bytes(self) -> int:
        return self.chunks * self.chunk

    @property
    def requests(self) -> int:
        return FILE_MIB * MIB // self.request_bytes

    def ranges(self, k: int) -> list[tuple[int, int]]:
        return [(k * self.request_bytes + i * self.chunk, self.chunk) for i in range(self.chunks)]


PATTERNS = (
    Pattern("1 MiB reads, 10 ms apart", 1, MIB, 0.010),
    # ROOT's TTreeCache fills: the study's agc-rdf trace has vector reads of 121 chunks, 7.6 MB
    Pattern("vector reads of 128 x 64 KiB, 80 ms apart", 128, 64 << 10, 0.080),
)


def _trace(out: Path, url: str, pattern: Pattern, paced: bool) -> Path:
    """A recorder CSV of the pattern's requests over the whole file, paced or back to back."""
    from instore.replay.trace import write_trace

    t, lines, oid = 1_000_000.0, [], "1"

    def line(op: str, start: float, args: str, end: float, resp: str = "") -> str:
        return f'"{oid}","{op}","{start:.9f}","{args}","{end:.9f}","[SUCCESS]","{resp}"'

    lines.append(line("Open", t, f"{url};0;0;0", t + 0.001))
    t += 0.002
    for k in range(pattern.requests):
        ranges = pattern.ranges(k)
        pairs = ";".join(f"{off};{size}" for off, size in ranges)
        op = "Read" if pattern.chunks == 1 else "VectorRead"
        resp = str(pattern.request_bytes) + ("" if op == "Read" else f";{pairs}")
        lines.append(line(op, t, f"{pairs};0", t + 0.0005, resp))
        t += pattern.pace_s if paced else 0.0006
    lines.append(line("Close", t, "0", t + 0.0001))
    meta = {"command": ["synthetic"], "exit_code": 0, "wall_s": t - 1_000_000.0 + 0.001,
            "cpu_s": 0.0, "user_s": 0.0, "sys_s": 0.0, "operations": len(lines)}  # fmt: skip
    return write_trace(out, lines, meta)


# The same paced requests by PyPI xrootd's client alone: what any Python replayer over root://
# pays on this machine before its own code. argv: URL, requests, pace (s), chunks, chunk bytes;
# prints CPU s and wall s.
CLIENT_ALONE = """
import ctypes, resource, sys, time
from XRootD import client
libc = ctypes.CDLL("libc.so.6"); libc.mallopt(-3, 64 << 20); libc.mallopt(-1, 256 << 20)
url, pace = sys.argv[1], float(sys.argv[3])
requests, chunks, chunk = int(sys.argv[2]), int(sys.argv[4]), int(sys.argv[5])
size = chunks * chunk
f = client.File(); assert f.open(url)[0].ok
def cpu():
    u = resource.getrusage(resource.RUSAGE_SELF); return u.ru_utime + u.ru_stime
c0, t0 = cpu(), time.perf_counter()
for k in range(requests):
    time.sleep(pace)
    if chunks == 1:
        status, data = f.read(k * size, size, timeout=60)
        assert status.ok and len(data) == size
    else:
        status, info = f.vector_read([(k * size + i * chunk, chunk) for i in range(chunks)], timeout=60)
        assert status.ok and info.size == size
print(cpu() - c0, time.perf_counter() - t0)
"""


def _argv(url: str, pattern: Pattern) -> list[str]:
    return [url, *map(str, (pattern.requests, pattern.pace_s, pattern.chunks, pattern.chunk))]


def _client_alone(url: str, pattern: Pattern) -> dict:
    done = subprocess.run([sys.executable, "-c", CLIENT_ALONE, *_argv(url, pattern)],
                          capture_output=True, text=True, check=True)  # fmt: skip
    cpu, wall = map(float, done.stdout.split())
    return _row(pattern, "XRootD client alone (PyPI xrootd)", "xrootd", wall, cpu)


def _build_xrdcl_paced(build: Path) -> Path:
    """bench/xrdcl_paced.cxx against Debian's XRootD client (headers and libXrdCl)."""
    exe = build / "xrdcl_paced"
    subprocess.run(["g++", "-O2", "-std=c++17", str(REPO / "bench" / "xrdcl_paced.cxx"),
                    "-o", str(exe), "-I/usr/include/xrootd", "-lXrdCl"], check=True)  # fmt: skip
    return exe


def _cxx_client_alone(exe: Path, url: str, pattern: Pattern) -> dict:
    done = subprocess.run([str(exe), *_argv(url, pattern)], capture_output=True, text=True,
                          check=True)  # fmt: skip
    cpu, wall = map(float, done.stdout.split())
    return _row(pattern, "XRootD C++ client alone (Debian's)", "xrootd", wall, cpu)


def _xrdreplay(trace: Path, pattern: Pattern) -> dict:
    """Debian's xrdreplay on the same trace: the field's own replayer, its CPU from rusage."""
    before, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    subprocess.run(["xrdreplay", "-s", str(trace / "xrdcl.csv")], capture_output=True, check=True)
    wall, after = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = sum(getattr(after, k) - getattr(before, k) for k in ("ru_utime", "ru_stime"))
    return _row(pattern, f"xrdreplay {_xrootd_version()}, unpaced", "xrootd", wall, cpu)


def _xrootd_version() -> str:
    """The installed XRootD's version (``xrootd -v`` prints ``v5.5.3``), as xrdreplay's."""
    done = subprocess.run(["xrootd", "-v"], capture_output=True, text=True, check=True)
    return (done.stdout or done.stderr).strip().removeprefix("v")


def _replayed(trace: Path, url: str, pattern: Pattern, run: str, protocol: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "instore.cli", "replay", str(trace), "--target", url,
         "--record-only"], capture_output=True, text=True, check=True)  # fmt: skip
    rec = json.loads(done.stdout)
    assert rec["bytes_read"] == FILE_MIB * MIB, rec["bytes_read"]
    return _row(pattern, run, protocol, rec["wall_s"], rec["client_cpu_s"])


def _row(pattern: Pattern, run: str, protocol: str, wall: float, cpu: float) -> dict:
    nbytes = FILE_MIB * MIB
    return {"pattern": pattern.name, "run": run, "protocol": protocol,
            "mb_per_s": nbytes / 1e6 / wall, "wall_s": wall, "client_cpu_s": cpu,
            "cpu_share_of_a_core": cpu / wall, "cpu_s_per_100_mb": cpu / nbytes * 1e8}  # fmt: skip


def _say(row: dict) -> None:
    print(f"one client, {row['pattern']}, {row['run']}, {row['protocol']}: "
          f"{row['mb_per_s']:.0f} MB/s, CPU {row['cpu_share_of_a_core']:.1%} of a core "
          f"({row['client_cpu_s']:.3f} s in {row['wall_s']:.2f} s)", flush=True)  # fmt: skip


def _one_pattern(root: Path, cxx: Path, urls: dict[str, str], pattern: Pattern,
                 repeats: int) -> list[dict]:  # fmt: skip
    rows: list[dict] = []

    def add(row: dict) -> None:
        rows.append(row)
        _say(row)

    tag = f"{pattern.chunks}x{pattern.chunk}"
    paced = _trace(root / f"paced-{tag}", urls["xrootd"], pattern, paced=True)
    unpaced = _trace(root / f"unpaced-{tag}", urls["xrootd"], pattern, paced=False)
    for k in range(repeats):  # alternating, so a noisy moment hits all three
        add(_replayed(paced, urls["xrootd"], pattern, "replay, paced", "xrootd") | {"repeat": k})
        add(_client_alone(urls["xrootd"], pattern) | {"repeat": k})
        add(_cxx_client_alone(cxx, urls["xrootd"], pattern) | {"repeat": k})
    add(_replayed(paced, urls["http"], pattern, "replay, paced", "http"))
    for protocol, url in urls.items():
        add(_replayed(unpaced, url, pattern, "replay, no think time", protocol))
    add(_xrdreplay(unpaced, pattern))
    return rows


def one_client(repeats: int) -> list[dict]:
    results = []
    with tempfile.TemporaryDirectory(prefix="instore-bench-replay-") as tmp:
        root = Path(tmp)
        root.chmod(0o755)  # the server runs as xrootd
        proc, port, http_port = _xrootd(root / "srv")
        try:
            cxx = _build_xrdcl_paced(root)
            path = root / "srv" / "data" / "seq.bin"
            with path.open("wb") as f:
                for _ in range(FILE_MIB):
                    f.write(os.urandom(MIB))
            path.read_bytes()  # into the page cache: the storage is not what is measured
            urls = {"xrootd": f"root://127.0.0.1:{port}//seq.bin",
                    "http": f"http://127.0.0.1:{http_port}//seq.bin"}  # fmt: skip
            for pattern in PATTERNS:
                results += _one_pattern(root, cxx, urls, pattern, repeats)
        finally:
            proc.kill()
            proc.wait()
    return results


def many_clients(clients: int) -> list[dict]:
    data = REPO / "data" / "files"
    study = yaml.safe_load((REPO / "config" / "study.yaml").read_text())
    full = study["profiles"]["full"]
    trace = full["traces"]["agc-load"]
    if not (trace_dir(data, trace.get("site", "lan-ssd"), "agc-load") / "trace.json").exists():
        raise SystemExit("no data/files/traces/lan-ssd/agc-load: run `make study` first")
    load = {"trace": ["agc-load"], "fill": [clients], "protocol": ["xrootd", "http"],
            "fixed_time_s": full["sections"]["load"]["fixed_time_s"]}  # fmt: skip
    profile = {**{k: full[k] for k in ("files", "filesets", "traces")}, "sites": ["lan-ssd"],
               "repetitions": 1, "timeout_s": 300, "retries": 0, "sections": {"load": load}}  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="instore-bench-load-") as tmp:
        path = Path(tmp) / "study.yaml"
        path.write_text(yaml.safe_dump({"profile": "b", "profiles": {"b": profile}}))
        results = Path(tmp) / "results"
        subprocess.run([sys.executable, "-m", "instore.cli", "sweep", "--site", "lan-ssd",
                        "--study", str(path), "--data", str(data), "--results", str(results),
                        "--runtime", "podman", "--no-progress"], check=True)  # fmt: skip
        table = pd.read_parquet(results / "lan-ssd" / "load.parquet")
    return [_load_point(rows, trace) for _, rows in table.groupby("protocol")]


def _load_point(rows: pd.DataFrame, trace: dict) -> dict:
    from instore.report.load import active_span

    span = active_span(rows)
    cores = os.cpu_count() or 1
    out = {"protocol": rows["protocol"].iloc[0], "clients": len(rows),
           "failed": int((rows["status"] != "ok").sum()), "trace": trace, "span_s": span,
           "clients_cpu_share": float(rows["client_cpu_s"].sum()) / span / cores,
           "client_cpu_ms_per_read": float(rows["client_cpu_s"].sum() / rows["read_calls"].sum() * 1e3),
           "host_cpu_busy": float(rows["host_cpu_busy"].iloc[0]),
           "xrootd_cpu_share": float(rows["xrootd_cpu_share"].iloc[0]),
           "median_predicted_cpu_efficiency": float(rows["predicted_cpu_efficiency"].median()),
           "open_p95_s": float(rows["open_s"].quantile(0.95))}  # fmt: skip
    print(
        f"{out['clients']} clients on lan-ssd over {out['protocol']}: clients' CPU "
        f"{out['clients_cpu_share']:.1%} of the host, host busy {out['host_cpu_busy']:.1%} over "
        f"the point, {out['failed']} failed"
    )
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--skip-load", action="store_true", help="only the one-client part")
    p.add_argument("--clients", type=int, default=64)
    p.add_argument("--repeats", type=int, default=5,
                   help="paced root:// runs, each beside the XRootD client alone (default: 5)")  # fmt: skip
    args = p.parse_args()
    before = json.loads(OUT.read_text()) if OUT.exists() else {}
    result = {"machine": {"host": platform.node(), "cpus": os.cpu_count(),
                          "kernel": platform.release(), "python": platform.python_version()},
              "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "one_client": one_client(args.repeats)}  # fmt: skip
    if not args.skip_load:
        result["many_clients"] = many_clients(args.clients)
    elif "many_clients" in before:  # kept from the run that measured them, and said so
        result["many_clients"] = before["many_clients"]
        result["many_clients_measured_at"] = before.get("many_clients_measured_at",
                                                        before.get("measured_at"))  # fmt: skip
    OUT.write_text(json.dumps(result, indent=1) + "\n")
    print(f"written {OUT}")


if __name__ == "__main__":
    main()
