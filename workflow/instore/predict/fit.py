"""Fitting a site's profile from its own measurements: the calibration (RTT probe, fio,
whole-file copies) and the payload sections' records (layout, cache, protocols, readahead,
jobfill). Never the replay, load or caching points: those validate the model.

What each parameter comes from:

- ``rtt_ms``: the calibration's probe (the emulated link's configured RTT where none).
- ``bandwidth_mbit``: an emulated site's configured link; a real site's fastest whole-file
  copy in the calibration.
- ``tcp_window_kb``: where the fastest whole-file copy came below 80% of the link and the RTT
  is above 1 ms, the window that copy's rate implies (rate x RTT); with no copy calibrated, one
  flow's rate fitted jointly with the protocols' request times over the payload points; else
  it does not bind.
- ``disk_seq_mb_per_s`` and ``disk_random_ms``: the calibration's fio (1 MiB sequential, 4 KiB
  random: 1000 / IOPS); the emulated disk's limits, or a fast disk, where fio did not run.
- ``disk_burst_ios``: an emulated disk's IOPS throttle (the kernel's blkio throttle) lets a
  slice's worth of requests (IOPS x 100 ms) through at once after it idles; a real disk none.
  The fit charges a cold payload point the disk's time as the model does (``DiskRule``): its
  block device's requests (counted where the site can read them, else one per read call) less
  those the burst passes (refilled while the job computes, at most once between two of its
  read calls after the open: the open's own come before the loop's CPU), and its bytes at the
  sequential rate.
- ``disk_parallel``: the calibration's fio random reads at queue depth 16 over those at 1 (how
  many requests the disk serves side by side: an SSD several); 1 where fio ran only at 1.
- each protocol's ``request_ms``: least squares over that protocol's payload points of their
  time away from CPU after the open (wall - user - sys - the open's wait) against their
  read calls after the open (``payload.reads_after_open``), after the round trips, disk and
  transfer the other parameters give (TCP's ramp included: ``payload.ramp_of``; clipped at
  0), per engine, the least of the engines' (the server's, which every client pays); its
  ``open_round_trips``: the points' median open time off CPU over the RTT (the open's own
  CPU, a TLS or GSI handshake, is in the job's CPU already).
- a FUSE mount's ``in_flight_kb``: its reads go to the server it mounts (xrootdfs: the site's
  XRootD, whose ``request_ms`` it takes), but the kernel sends an application's read as 128 kB
  requests with only a few in flight, so its bytes flow slower than the link's: the rate its
  payload points' bytes came at, after their round trips, server time and disk, times the RTT.
  A vector read is one request per chunk, in turn (the replay's preads through the mount).
- ``client_cpu_request_us`` and ``client_cpu_mb_ms``: least squares of the payload points' CPU
  against their read calls and MB read, within groups of points doing the same work (layout,
  branches, entries, events) so that only how they read differs.
- the XCache's block size (the site's configuration) and local rate (its calibration's warm
  read through the cache).

Each fitted parameter's ``fit`` says over how many points of which sections, and the median
absolute relative error of the time it explains; the profile's ``fit_quality`` is the whole
payload model's against every point's wall.
"""

from __future__ import annotations

import json
import math
import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from instore.access import FUSE, HTTP, POSIX, XCACHE, XROOTD
from instore.calibration import read_calibration
from instore.errors import InstoreError
from instore.predict.disk import DiskRule
from instore.predict.given import burst, copy_rates, disk, link, parallel, xcache
from instore.predict.payload import (
    away_of,
    cpu_of,
    fixed_terms,
    io_terms,
    open_wait_of,
    payload_wall,
    reads_after_open,
)
from instore.predict.profile import Param, Profile, Protocol
from instore.vocabulary import PAYLOAD_FIT_SECTIONS

# How each protocol sends reads (not fitted: the protocol's mechanics). XrdHttp reads a range
# from its disk in 128 kB pieces: a whole 15.4 MB file over HTTP took lan-hdd's disk 121
# requests, over XRootD 29 (the block layer's 512 kB), and the replays' 306, 171 and 200 disk
# requests over HTTP are what their chunks split at 128 kB give (302, 163 and 203; 2026-11-28)
MECHANICS: dict[str, dict[str, Any]] = {
    FUSE: {"vector": False},
    POSIX: {"vector": False},
    HTTP: {"server_read_kb": 128.0},
}
MOUNTED = {FUSE: XROOTD}  # the protocol a mount's reads travel by (the emulated sites' xrootdfs)
GROUP_KEYS = ("layout", "branches", "entry_fraction", "events", "file_size", "engine",
              "pattern_cpu_us")  # fmt: skip


def conditions_of(record: dict[str, Any]) -> dict[str, Any]:
    cond = record.get("conditions")
    if isinstance(cond, str):
        try:
            cond = json.loads(cond)
        except ValueError:
            return {}
    return cond if isinstance(cond, dict) else {}


def payload_records(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records a profile is fitted on: completed jobs of the payload sections, with a
    protocol, a wall and read calls."""
    out = []
    for r in records:
        if r.get("section") not in PAYLOAD_FIT_SECTIONS or r.get("status", "ok") != "ok":
            continue
        if r.get("kind") == "replay" or not r.get("protocol") or not r.get("wall_s"):
            continue
        if r.get("read_calls") is None or r.get("bytes_read") is None:
            continue
        out.append(r)
    return out


def _median_abs_rel(pred: np.ndarray, meas: np.ndarray) -> float | None:
    ok = meas > 0
    if not ok.any():
        return None
    return float(np.median(np.abs(pred[ok] - meas[ok]) / meas[ok]))


def _sections(points: Sequence[dict[str, Any]]) -> str:
    return "+".join(sorted({str(r["section"]) for r in points}))


# Within groups doing the same work, a column of the client-CPU fit whose points differ by less
# than this share of their group's mean tells nothing: 13 bytes more or less of 15 MB once gave
# 1.8 s of CPU per MB. A share, so that files of any size are judged alike.
MIN_SPREAD = 0.05


def fit_client_cpu(points: Sequence[dict[str, Any]]) -> tuple[Param, Param]:
    """The client's CPU per request (us) and per MB (ms), from points doing the same work; a
    column the points do not vary (``MIN_SPREAD``) is not fitted and says so."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for r in points:
        groups[tuple(r.get(k) for k in GROUP_KEYS)].append(r)
    rows, shares, y = [], [], []
    for members in groups.values():
        if len(members) < 2:
            continue
        calls = np.array([float(r["read_calls"]) for r in members])
        mb = np.array([float(r["bytes_read"]) / 1e6 for r in members])
        cpu = np.array([cpu_of(r) for r in members])
        rows.extend(zip(calls - calls.mean(), mb - mb.mean(), strict=True))
        shares.append([np.ptp(c) / max(c.mean(), 1e-12) for c in (calls, mb)])
        y.extend(cpu - cpu.mean())
    x = np.array(rows).reshape(-1, 2)
    spread = np.max(shares, axis=0) if shares else np.zeros(2)
    used = [bool(spread[0] >= MIN_SPREAD), bool(spread[1] >= MIN_SPREAD)]
    if len(y) < 3 or not any(used):
        none = "default: 0 (no payload points doing the same work with different reads)"
        return Param(0.0, none), Param(0.0, none)
    coef = np.zeros(2)
    fitted, *_ = np.linalg.lstsq(x[:, used], np.array(y), rcond=None)
    coef[used] = np.clip(fitted, 0.0, None)
    resid = np.array(y) - x @ coef
    fit = {"points": len(y), "sections": _sections(points),
           "median_abs_residual_s": float(np.median(np.abs(resid))),
           "median_abs_cpu_difference_s": float(np.median(np.abs(y))) or 1.0}  # fmt: skip
    src = f"{_sections(points)}: CPU against read calls and MB within groups doing the same work"
    unused = ("default: 0 (the points doing the same work made {} within {:.0%} of each "
              "other: nothing to fit it on)")  # fmt: skip
    per_call = (Param(float(coef[0]) * 1e6, src, fit) if used[0]
                else Param(0.0, unused.format("read calls", MIN_SPREAD)))  # fmt: skip
    per_mb = (Param(float(coef[1]) * 1e3, src, fit) if used[1]
              else Param(0.0, unused.format("reads of bytes", MIN_SPREAD)))  # fmt: skip
    return per_call, per_mb


def fit_per_byte(points: Sequence[dict[str, Any]], rtt_s: float, disk: DiskRule,
                 link_rate: float = 0.0) -> float | None:  # fmt: skip
    """One flow's seconds per byte, fitted jointly with each protocol's time per request over
    the remote payload points (least squares), where the points tell them apart (their bytes
    and read calls vary independently); None where they do not. TCP's ramp is taken at the
    link's rate (``link_rate``): a ramp counted as bytes would make the flow look slower."""
    remote = [r for r in points if r["protocol"] != POSIX and r["protocol"] not in MOUNTED]
    names = sorted({str(r["protocol"]) for r in remote})
    if len(remote) < len(names) + 2:
        return None
    x = np.array([[reads_after_open(r) * (r["protocol"] == n) for n in names]
                  + [float(r["bytes_read"])] for r in remote])  # fmt: skip
    if np.linalg.matrix_rank(x / np.maximum(x.max(axis=0), 1e-12)) < x.shape[1]:
        return None
    y = np.array([away_of(r) - fixed_terms(r, rtt_s, disk, link_rate) for r in remote])
    coef, *_ = np.linalg.lstsq(x, y, rcond=None)
    return float(coef[-1]) if coef[-1] > 0 else None


def fit_protocols(points: Sequence[dict[str, Any]], rtt_s: float, per_byte: float,
                  disk: DiskRule) -> dict[str, Protocol]:  # fmt: skip
    """Each protocol's server time per request, by least squares over its points, and its
    open's round trips (the median of its points' open times over the RTT); a mount's server
    time is the protocol's it mounts, and its bytes in flight are fitted instead."""
    by_proto: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in points:
        by_proto[str(r["protocol"])].append(r)
    out: dict[str, Protocol] = {}
    for name, members in sorted(by_proto.items(), key=lambda kv: kv[0] in MOUNTED):
        trips = _open_round_trips(name, members, rtt_s)
        mounted = out.get(MOUNTED.get(name, ""))
        if name in MOUNTED and mounted is not None:
            server = mounted.request_ms
            request = Param(server.value, f"the protocol it mounts ({MOUNTED[name]}): {server.source}",
                            server.fit)  # fmt: skip
            in_flight = fit_in_flight(members, rtt_s, per_byte, disk, (server.value or 0.0) / 1e3)
            out[name] = Protocol(request, open_round_trips=trips, in_flight_kb=in_flight,
                                 **MECHANICS.get(name, {}))  # fmt: skip
            continue
        calls = np.array([reads_after_open(r) for r in members])
        away = np.array([away_of(r) for r in members])
        base = np.array([io_terms(r, rtt_s, per_byte, disk) for r in members])
        by_engine = _per_engine(members, away - base)
        engine, x = min(by_engine.items(), key=lambda kv: kv[1])
        err = _median_abs_rel(base + calls * x, away)
        fit = {"points": len(members), "sections": _sections(members),
               "median_abs_error": err,
               "by_engine_ms": {e: v * 1e3 for e, v in sorted(by_engine.items())}}  # fmt: skip
        src = f"{_sections(members)}: {len(members)} {name} points, time off CPU against read calls"
        if len(by_engine) > 1:
            src += f" (the {engine} engine's: the least of the engines')"
        out[name] = Protocol(Param(x * 1e3, src, fit), open_round_trips=trips,
                             **MECHANICS.get(name, {}))  # fmt: skip
    return dict(sorted(out.items()))


def _per_engine(members: Sequence[dict[str, Any]], resid: np.ndarray) -> dict[str, float]:
    """Each engine's time per read call in ``resid`` (least squares through 0, clipped at 0),
    over the engines with at least two points where any has (one point's slope is its noise).

    The server's time per request is what every client pays; what one engine pays beyond
    another on the same protocol and server is its own client's (seen on lan-hdd, 2026-11-28:
    ROOT over https through XrdClHttp 30 ms off CPU per read call, uproot's 0), and a replay
    or another engine does not pay it: the protocol takes the least."""
    rows: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(members):
        rows[str(r.get("engine") or "")].append(i)
    if any(len(ix) > 1 for ix in rows.values()):
        rows = {e: ix for e, ix in rows.items() if len(ix) > 1}
    out = {}
    for engine, ix in rows.items():
        calls = np.array([reads_after_open(members[i]) for i in ix])
        denom = float(np.dot(calls, calls))
        out[engine] = max(0.0, float(np.dot(resid[ix], calls)) / denom) if denom > 0 else 0.0
    return out


def _open_round_trips(name: str, members: Sequence[dict[str, Any]], rtt_s: float) -> Param | None:
    opens = [open_wait_of(r) for r in members if r.get("open_s")]
    if not opens or rtt_s <= 0 or name == POSIX:
        return None
    return Param(statistics.median(opens) / rtt_s,
                 f"{_sections(members)}: the median open time off CPU of {len(opens)} {name} "
                 "points over the RTT", {"points": len(opens)})  # fmt: skip


def fit_in_flight(members: Sequence[dict[str, Any]], rtt_s: float, per_byte: float,
                  disk: DiskRule, server_s: float) -> Param | None:  # fmt: skip
    """The bytes a mount's read keeps in flight: the rate its points' bytes came at, after their
    round trips, server time and disk, times the RTT. None where that rate is the link's flow
    (it does not bind) or nothing is left to explain."""
    if rtt_s <= 0:
        return None
    calls = np.array([reads_after_open(r) for r in members])
    size = np.array([float(r["bytes_read"]) for r in members])
    away = np.array([away_of(r) for r in members])
    base = np.array([fixed_terms(r, rtt_s, disk) for r in members]) + calls * server_s
    spent = float(np.clip(away - base, 0.0, None).sum())
    if spent <= 0 or size.sum() <= 0:
        return None
    rate = float(size.sum()) / spent
    if rate >= 0.8 / per_byte:
        return None
    err = _median_abs_rel(base + size / rate, away)
    return Param(rate * rtt_s / 1024,
                 f"{_sections(members)}: the rate of {len(members)} points' bytes after their "
                 f"round trips, server time and disk ({rate / 1e6:.2f} MB/s) x RTT",
                 {"points": len(members), "sections": _sections(members), "mb_per_s": rate / 1e6,
                  "median_abs_error": err})  # fmt: skip


def fit_profile(site: str, calibration: dict[str, Any] | None,
                records: Sequence[dict[str, Any]]) -> Profile:  # fmt: skip
    """The site's profile from its calibration and its records (only the payload sections'
    are used)."""
    points = payload_records(records)
    cond = conditions_of(points[0]) if points else {}
    calib = calibration or cond.get("calibration") or {}
    emulation = cond.get("emulation") or calib.get("conditions", {}).get("emulation") or {}
    if not calib and not emulation and not points:
        raise InstoreError(
            f"site {site}: no calibration and no site description to fit a profile from",
            f"run `instore site calibrate {site}` and its sweeps first",
        )
    net = emulation.get("network") or {}
    if calib.get("rtt_ms") is not None:
        rtt = Param(float(calib["rtt_ms"]), "calibration: the RTT probe")
    elif net.get("rtt_ms_measured") or net.get("rtt_ms_target"):
        rtt = Param(float(net.get("rtt_ms_measured") or net["rtt_ms_target"]),
                    "site configuration: the emulated link's RTT")  # fmt: skip
    else:
        rtt = Param(0.2, "default: no RTT probe, a LAN's")
    bw, window = link(calib, emulation, rtt.value or 0.0)
    seq, rand = disk(calib, emulation)
    burst_ios = burst(emulation)
    rtt_s, bw_b = (rtt.value or 0.0) / 1000.0, (bw.value or 1.0) * 1e6 / 8.0
    disk_of = DiskRule(seq=(seq.value or 1.0) * 1e6, seek_s=(rand.value or 0.0) / 1000.0,
                       burst_ios=float(burst_ios.value or 0.0))  # fmt: skip
    notes = []
    if not calib:
        notes.append("no calibration: RTT, link and disk are the site's configuration or defaults")
    if not points:
        notes.append("no payload points: every protocol's server time is 0 (fit after the sweeps)")
    if window.value is None and not copy_rates(calib) and rtt_s > 0.001:  # no copy showed it
        per_byte = fit_per_byte(points, rtt_s, disk_of, bw_b)
        if per_byte is not None and 1.0 / per_byte < 0.8 * bw_b:
            kb = rtt_s / per_byte / 1024
            window = Param(kb, f"{_sections(points)}: one flow's rate fitted with the protocols' "
                           f"request times over {len(points)} payload points ({1e-6 / per_byte:.2f}"
                           " MB/s) x RTT", {"points": len(points), "mb_per_s": 1e-6 / per_byte})  # fmt: skip
    flow = bw_b
    if window.value and rtt_s > 0:  # one flow is no faster than its window per round trip
        flow = min(bw_b, window.value * 1024 / rtt_s)
    protocols = fit_protocols(points, rtt_s, 1.0 / flow, disk_of)
    for name in cond.get("protocols") or []:
        if name not in protocols and name != XCACHE:
            protocols[name] = Protocol(Param(0.0, "default: no payload point of this protocol"),
                                       **MECHANICS.get(name, {}))  # fmt: skip
    if not protocols:
        protocols[XROOTD] = Protocol(Param(0.0, "default: no payload point"))
    cpu_req, cpu_mb = fit_client_cpu(points)
    workers = cond.get("workers") or {}
    readahead = (emulation.get("disk") or {}).get("readahead_kb")
    profile = Profile(
        site=site, kind="fitted", rtt_ms=rtt, bandwidth_mbit=bw, tcp_window_kb=window,
        disk_seq_mb_per_s=seq, disk_random_ms=rand, disk_burst_ios=burst_ios,
        disk_parallel=parallel(calib),
        client_cpu_request_us=cpu_req,
        client_cpu_mb_ms=cpu_mb, protocols=protocols, xcache=xcache(calib, emulation),
        cores=int(workers.get("cores") or 1),
        readahead_kb=float(readahead) if readahead and not math.isnan(float(readahead)) else 128.0,
        notes=notes,
    )  # fmt: skip
    if not points:
        return profile
    pred = np.array([payload_wall(r, profile) for r in points])
    meas = np.array([float(r["wall_s"]) for r in points])
    quality = {"points": len(points), "sections": _sections(points),
               "median_abs_error": _median_abs_rel(pred, meas),
               "within_10pct": float(np.mean(np.abs(pred - meas) <= 0.1 * meas))}  # fmt: skip
    return replace(profile, fit_quality=quality)


def fit_site(results: Path, site: str) -> Profile:
    """Fit ``site``'s profile from ``results/<site>/``."""
    from instore.sweep.store import RecordStore

    records = RecordStore(Path(results), site).current()
    return fit_profile(site, read_calibration(Path(results), site), records)
