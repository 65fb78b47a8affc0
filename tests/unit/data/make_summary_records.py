"""Regenerate summary_records.jsonl: real `instore read` records shaped like sweep rows.

The summary and report tests need rows as `instore sweep` writes them. Every measured number
here comes from an actual `instore read` of a file `instore generate` wrote; only the point
columns (which knobs the read used) and the site labels are added, as the sweep would.
Needs ROOT and xrootd (XrdHttp); run from the repository root:

    .venv/bin/python tests/unit/data/make_summary_records.py
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import asdict, replace
from pathlib import Path

from instore.study.grid import Point

OUT = Path(__file__).with_name("summary_records.jsonl")
XRD_PORT, HTTP_PORT = 21094, 28000
FILES = {"events": 3000, "cluster_mb": 0.2, "seed": 1}
JSON_FIELDS = ("read_size_hist", "counters", "provenance")


def generate(root: Path) -> Path:
    files = root / "files"
    subprocess.run(
        ["instore", "generate", "--events", "3000", "--cluster-mb", "0.2", "--out", str(files)],
        check=True,
    )
    return files


def start_xrootd(root: Path, files: Path) -> subprocess.Popen[bytes]:
    """A local xrootd with XrdHttp so the protocol rows are real root:// and http:// reads."""
    adm = root / "xrd"
    adm.mkdir()
    user = pwd.getpwnam("xrootd")
    os.chown(adm, user.pw_uid, user.pw_gid)
    os.chmod(root, 0o755)
    cfg = adm / "xrootd.cfg"
    cfg.write_text(
        f"all.export / r/o\noss.localroot {files}\nxrd.port {XRD_PORT}\n"
        f"xrd.protocol XrdHttp:{HTTP_PORT} libXrdHttp.so\nall.adminpath {adm}\nall.pidpath {adm}\n"
    )
    proc = subprocess.Popen(["xrootd", "-R", "xrootd", "-c", str(cfg), "-l", str(adm / "log")])
    for _ in range(100):
        try:
            with socket.create_connection(("127.0.0.1", HTTP_PORT), timeout=1):
                return proc
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("xrootd did not start")


def url(files: Path, point: Point) -> str:
    name = f"{point.layout}-r0.root"
    if point.protocol == "xrootd":
        return f"root://127.0.0.1:{XRD_PORT}//{name}"
    if point.protocol == "http":
        return f"http://127.0.0.1:{HTTP_PORT}/{name}"
    return str(files / name)


def command(files: Path, point: Point, scratch: Path, extra: list[str]) -> list[str]:
    cmd = ["instore", "read", url(files, point), *point.read_args(), *extra]
    if point.protocol == "stage-in":
        cmd += ["--stage-in", "cp", "--scratch", str(scratch)]
    return cmd


def run_point(files: Path, point: Point, site: dict, extra: list[str]) -> list[dict]:
    """Run the point's jobs together, as the sweep does, and shape each record as a row."""
    scratch = Path(tempfile.mkdtemp(dir=files.parent))
    started = time.monotonic()
    procs = [
        subprocess.Popen(command(files, point, scratch, extra), stdout=subprocess.PIPE, text=True)
        for _ in range(point.jobs)
    ]
    outs = [p.communicate()[0] for p in procs]
    outer = time.monotonic() - started
    shutil.rmtree(scratch, ignore_errors=True)
    records = [_parse(out) for out in outs]
    return [row(point, job, rec, site, outer) for job, rec in enumerate(records) if rec]


def _parse(out: str) -> dict | None:
    """A read that crashed before printing its record leaves no row (the sweep records it)."""
    try:
        return json.loads(out)
    except json.JSONDecodeError:
        print("skipped a job that printed no record")
        return None


def row(point: Point, job: int, record: dict, site: dict, outer: float) -> dict:
    conditions = {"site": site["name"], "kind": "real", "profile": site["profile"],
                  "description": site["description"], "emulation": {}, "calibration": None}  # fmt: skip
    out = {**asdict(point), "point_key": point.key(site["name"], FILES), "job": job,
           "node": "localhost", "site": site["name"], "site_kind": "real",
           "site_profile": site["profile"], "conditions": json.dumps(conditions),
           "status": "failed" if record.get("error") else "ok", "attempts": 1,
           "runtime": "none", "image_digest": None, "container_startup_s": None,
           "outer_wall_s": outer}  # fmt: skip
    for key, value in record.items():
        out.setdefault(key, json.dumps(value) if key in JSON_FIELDS else value)
    return out


def points() -> list[Point]:
    """A small grid per section, shaped like config/study.yaml's quick profile."""
    grid: list[Point] = []
    for rep in (0, 1):
        for layout in ("unordered", "by-branch", "ordered"):
            for cache in (0.0, None):
                grid.append(Point("layout", layout=layout, cache_mb=cache, repetition=rep))
    for layout in ("unordered", "ordered"):
        for cache in (0.0, 2.0, None):
            grid.append(Point("cache", layout=layout, cache_mb=cache, protocol="xrootd"))
    for proto in ("posix", "stage-in", "xrootd", "http"):
        for engine in ("root", "uproot"):
            grid.append(Point("protocols", protocol=proto, engine=engine))
    for branches in ("all", "fraction:0.1"):
        for ra in (16, 1024):
            grid.append(Point("readahead", branches=branches, cache_mb=0.0, readahead_kb=ra))
    for fill in (1, 2, 4):
        grid.append(Point("jobfill", fill=fill, cpu_us=200.0))
    return grid


SITES = (
    ({"name": "fixture-cold", "profile": "local-cold",
      "description": "this machine, page cache dropped before each read"}, []),
    ({"name": "fixture-warm", "profile": "local-warm",
      "description": "this machine, files left in the page cache"}, ["--warm"]),
)  # fmt: skip


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="instore-fixture-"))
    files = generate(root)
    xrd = start_xrootd(root, files)
    rows: list[dict] = []
    try:
        for site, extra in SITES:
            grid = points() if not extra else [p for p in points() if p.section != "layout"]
            for point in grid:
                rows += run_point(files, point, site, extra)
        missing = replace(Point("protocols", layout="missing"), repetition=0)
        rows += run_point(files, missing, SITES[0][0], [])
    finally:
        xrd.terminate()
        xrd.wait()
        shutil.rmtree(root, ignore_errors=True)
    OUT.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    print(f"wrote {len(rows)} rows to {OUT}")


if __name__ == "__main__":
    main()
