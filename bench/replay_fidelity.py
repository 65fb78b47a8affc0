"""Benchmark: does a replay predict a real analysis's wall time on other storage?

For each recorded analysis of the study (the profile's ``traces:``), a trace is recorded first
as `make study` records it (``instore record --warm-up 1`` on lan-ssd over root://), so the
trace and the runs it is compared with see the machine in the same state (``--study-traces``:
replay the traces `make study` left in data/files/traces/lan-ssd/ instead; this VM's CPU drifts by
10-20% over hours, and a trace keeps the CPU of its hour). Then on each emulated site asked
for: the site is brought up with the analysis's file; the real analysis runs there over
root:// (``instore record --site``: its wall is the truth) and the lan-ssd trace is replayed
there closed-loop (``instore replay --site``), each with the data cold and the software warm
(the caches dropped, then the analysis run once on a local copy, as a site's CVMFS cache holds its software),
each trace recorded ``--recordings`` times (3) and the one of median CPU kept,
alternating, ``--runs`` times.
Reported: the medians and the predicted / real ratio (target: within 15%). With ``--xcache`` on a site that has one, the
replay and the real run also go through its XCache, warmed by a first read.

Multi-threaded rows (issue 32): the RDataFrame analysis with ``--threads 2`` (``EnableImplicitMT(2)``),
recorded the same way (``agc-rdf-mt2``); its replay issues the streams of its threads side by
side, and beside it the same trace replayed ``--serialise`` (one request after another, as the
replay did before it knew streams) shows what a serialising replay would have predicted
(target: within 10%, and closer than the serialising replay wherever the two differ by more
than the real run's spread). Single-stream traces replay the same either way, so their rows
run no serialising replay. ``--traces`` measures some traces only, keeping the other traces'
rows of the results file (each row says when it was measured); the file is rewritten after
every row, so a run cut short keeps what it measured.

``--wan-rtt MS`` adds the WAN site at another round trip (its config with ``network.rtt_ms``
changed, under the name ``wan-rtt<MS>``): a replay must follow the storage's latency, not only
the one it was checked at.

Beside the replay, the model (issue 39, ``instore predict``): each real job predicted from the
trace and its site's profile (``--profiles``: a results directory with each site's
``profile.json``, as `make study` fits them; the WAN site at another round trip is the WAN
profile with that RTT; the trace's own lan-ssd profile, where there is one, gives the client
CPU it was recorded with), kept in each row as ``model_wall_s`` and the rest of
``instore.predict.validate.predict_job``'s keys, or ``model_error`` saying why not.
``--model-only`` adds them to the rows of an earlier run whose traces still exist (its
``--study-traces`` run's), measuring nothing.

Results go to bench/fidelity_results.json with the machine they ran on. Needs root and a
finished `make study` (its traces, files and profiles). Usage:
  python bench/replay_fidelity.py [--sites lan-hdd wan] [--wan-rtt 50] [--runs 3] [--xcache]
                                 [--study-traces] [--traces agc-rdf-mt2 ...] [--profiles DIR]
                                 [--keep-traces DIR] [--out FILE]
  python bench/replay_fidelity.py --model-only [--profiles DIR] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import yaml
from instore.filenames import trace_dir

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "data" / "files"
OUT = REPO / "bench" / "fidelity_results.json"
# The multi-threaded analyses (not in the study's traces: item 1 of issue 32 adds threads to
# the study): a study trace's analysis and file set, run with these arguments added.
MT_TRACES = {"agc-rdf-mt2": ("agc-rdf", ["--threads", "2"])}
# A site variant (``--wan-rtt``) -> the site whose profile it is, and what changed
VARIANTS: dict[str, tuple[str, dict[str, float]]] = {}
RECORDED_ON = "lan-ssd"  # where the traces are recorded first (record_trace)


def instore(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "instore.cli", *args], capture_output=True,
                          text=True, check=False, cwd=REPO)  # fmt: skip


def threads(spec: dict) -> int:
    """The threads the analysis runs with (its --threads argument; none: 1)."""
    args = spec.get("args", [])
    return int(args[args.index("--threads") + 1]) if "--threads" in args else 1


def job(spec: dict, tree: str) -> list[str]:
    """The analysis's command, before the file's URL."""
    return [sys.executable, str(REPO / spec["analysis"]), "--tree", tree, *spec.get("args", [])]


def drop_caches(spec: dict, tree: str, local_copy: Path) -> None:
    """The data read cold, the software warm (as a site's CVMFS cache holds it): drop every
    cache, then run the analysis once on the local copy of its file, which loads ROOT's
    libraries and modules and the JIT's; the site serves another copy, on its own disk."""
    os.sync()
    Path("/proc/sys/vm/drop_caches").write_text("3\n")
    subprocess.run([*job(spec, tree), str(local_copy)], capture_output=True, check=True)


class RunFailed(Exception):
    pass


def real_run(
    site: str, protocol: str, file: Path, spec: dict, tree: str, out: Path
) -> tuple[float, float]:
    """The analysis itself on the site (recorded, so its wall is measured the same way)."""
    done = instore("record", "--site", site, "--protocol", protocol, "--file", str(file),
                   "--out", str(out), "--", *job(spec, tree))  # fmt: skip
    if done.returncode != 0:
        lines = [ln for ln in done.stderr.splitlines() if "Error" in ln or "error" in ln]
        raise RunFailed(f"the analysis failed on {site} over {protocol}: "
                        f"{(lines or done.stderr.splitlines() or ['?'])[0]}")  # fmt: skip
    meta = json.loads((out / "trace.json").read_text())
    return float(meta["wall_s"]), float(meta["cpu_s"])


def replayed(site: str, protocol: str, trace: Path, *extra: str) -> dict:
    done = instore("replay", str(trace), "--site", site, "--protocol", protocol, "--record-only",
                   *extra)  # fmt: skip
    if done.returncode != 0:
        raise RunFailed(f"replay failed on {site}: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout)


def record_trace(spec: dict, tree: str, out: Path) -> Path:
    """The analysis's trace, recorded as `make study` records it (workflow/rules/traces.smk)."""
    from instore.filenames import replica_name

    file = DATA / replica_name("ordered", 0, spec["fileset"])
    done = instore("record", "--warm-up", "1", "--site", "lan-ssd", "--protocol", "xrootd",
                   "--file", str(file), "--out", str(out), "--", *job(spec, tree))  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"recording {spec['analysis']} failed: {done.stderr[-500:]}")
    meta = json.loads((out / "trace.json").read_text())
    print(f"recorded {out.name}: wall {meta['wall_s']:.2f} s, CPU {meta['cpu_s']:.2f} s",
          flush=True)  # fmt: skip
    return out


def record_median(spec: dict, tree: str, out: Path, times: int) -> Path:
    """The analysis recorded ``times`` times; the recording whose CPU is the median is kept as
    ``out`` (the others are removed), its trace.json listing every recording's CPU
    (``cpu_s_recordings``). One recording's CPU is one sample of a job whose CPU varies by
    10-30% from run to run on these VMs (2026-12-02: 2.64 s recorded, 2.0-2.8 s in 25 runs of
    coffea), and the model's CPU is the recording's."""
    if times <= 1:
        return record_trace(spec, tree, out)
    takes = [record_trace(spec, tree, out.with_name(f"{out.name}.take{k}")) for k in range(times)]
    cpu = {t: json.loads((t / "trace.json").read_text())["cpu_s"] for t in takes}
    chosen = sorted(takes, key=lambda t: cpu[t])[len(takes) // 2]
    if out.exists():
        shutil.rmtree(out)
    chosen.rename(out)
    for t in takes:
        if t != chosen:
            shutil.rmtree(t)
    meta_path = out / "trace.json"
    meta = json.loads(meta_path.read_text())
    meta["cpu_s_recordings"] = [cpu[t] for t in takes]
    meta_path.write_text(json.dumps(meta, indent=1) + "\n")
    print(f"kept {out.name}: CPU {cpu[chosen]:.2f} s, the median of "
          f"{', '.join(f'{cpu[t]:.2f}' for t in takes)} s", flush=True)  # fmt: skip
    return out


STREAM_KEYS = ("streams", "streams_in_trace", "overlapping_requests", "overlapping_side_by_side",
               "overlapping_serialised", "overlapping_replayed")  # fmt: skip


def measure(site: str, protocol: str, name: str, trace: Path, spec: dict, tree: str,
            runs: int) -> dict:  # fmt: skip
    """``runs`` times, alternating: the real analysis, its replay and (a trace of several
    streams) its serialising replay, each with the data cold and the software warm."""
    file = DATA / json.loads((trace / "trace.json").read_text())["recorded_on"]["files"][0]
    real, pred, serial, cpu, streams = [], [], [], [], []
    load_before = os.getloadavg()  # the machine's load: other work on it slows the real job
    with tempfile.TemporaryDirectory(prefix="instore-fidelity-") as tmp:
        for k in range(runs):
            drop_caches(spec, tree, file)
            wall, used = real_run(site, protocol, file, spec, tree, Path(tmp) / f"r{k}")
            real.append(wall)
            cpu.append(used)
            drop_caches(spec, tree, file)
            rec = replayed(site, protocol, trace)
            pred.append(rec["wall_s"])
            streams.append({key: rec.get(key) for key in STREAM_KEYS})
            if rec.get("streams_in_trace", 1) > 1:
                drop_caches(spec, tree, file)
                serial.append(replayed(site, protocol, trace, "--serialise")["wall_s"])
    r, p = statistics.median(real), statistics.median(pred)
    recorded_cpu = json.loads((trace / "trace.json").read_text())["cpu_s"]
    row = {"trace": name, "trace_dir": str(trace), "site": site_label(site), "protocol": protocol, "real_wall_s": real,
           "real_cpu_s": cpu, "recorded_cpu_s": recorded_cpu,
           "replay_wall_s": pred, "real_median_s": r, "replay_median_s": p,
           "predicted_over_real": p / r, "replay_streams": streams, "threads": threads(spec),
           "serial_replay_wall_s": serial or None,
           "serial_over_real": statistics.median(serial) / r if serial else None,
           "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "load_avg_before": load_before, "load_avg_after": os.getloadavg()}  # fmt: skip
    also = f", serialised {statistics.median(serial):.2f} s" if serial else ""
    print(
        f"{name} on {site_label(site)} over {protocol}: real {r:.2f} s (CPU {statistics.median(cpu):.2f} "
        f"s; recorded {recorded_cpu:.2f} s), replay {p:.2f} s{also}, ratio {p / r:.3f}",
        flush=True,
    )
    return row


def model(site: str, protocol: str, trace: Path, profiles: Path, row: dict) -> dict:
    """The model's prediction of the real job from its trace and the site's profile, or why
    there is none (``model_error``); and beside it, as a diagnostic, the model given the CPU
    the real runs spent (``model_at_runs_cpu_wall_s``: the worker's CPU ``runs_cpu_speed``
    times as fast as the recording's, their median CPU against the recorded): what is left
    between it and the real wall is the storage's part of the error."""
    from instore.errors import InstoreError
    from instore.predict.profile import profile_path, read_profile, site_profile
    from instore.predict.validate import predict_job

    name = site_label(site) if site not in VARIANTS else site
    base, changes = VARIANTS.get(name, (name, {}))
    try:
        profile = site_profile(profiles, base).with_changes(**changes)
        here = profile_path(profiles, RECORDED_ON)
        recorded_on = read_profile(here) if here.is_file() else None
        out = predict_job(trace, profile, protocol, recorded_on)
        speed = row["recorded_cpu_s"] / statistics.median(row["real_cpu_s"])
        at_runs = predict_job(trace, profile, protocol, recorded_on, cpu_speed=speed)
        return out | {"runs_cpu_speed": speed, "model_at_runs_cpu_wall_s": at_runs["model_wall_s"]}
    except InstoreError as err:
        return {"model_error": f"{err} ({err.fix})"}


def wan_at(rtt_ms: float, directory: Path) -> str:
    """The WAN site's config at another round trip, written to ``directory``; its path."""
    cfg = yaml.safe_load((REPO / "config" / "sites" / "wan.yaml").read_text())
    cfg["name"] = f"wan-rtt{rtt_ms:g}"
    cfg["network"]["rtt_ms"] = rtt_ms
    cfg["disk"]["size_mb"] = 1024  # the two traces' files only
    path = directory / f"{cfg['name']}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    VARIANTS[cfg["name"]] = ("wan", {"rtt_ms": rtt_ms})
    return str(path)


def site_label(site: str) -> str:
    """The name a site (given by name or by its file's path) is up under."""
    from instore.site.config import site_name

    return site_name(site)


def has_cache(site: str) -> bool:
    from instore.site.config import load_site

    return load_site(site).cache is not None


def warm_cache(site: str, spec: dict, file: Path, tree: str) -> None:
    """Read the file once through the site's XCache, so every measured run finds it warm."""
    with tempfile.TemporaryDirectory(prefix="instore-fidelity-warm-") as tmp:
        real_run(site, "xcache", file, spec, tree, Path(tmp) / "warm")


def measure_site(
    site: str, args: argparse.Namespace, traces: dict, dirs: dict[str, Path], tree: str,
    save: Callable[[dict], None],
) -> None:  # fmt: skip
    """Every trace on one site (brought up for it and down after), over xrootd and its XCache;
    each row handed to ``save`` as soon as it is measured."""
    files = sorted({str(DATA / json.loads((dirs[n] / "trace.json").read_text())
                        ["recorded_on"]["files"][0]) for n in traces})  # fmt: skip
    up = instore("site", "up", site, "--files", *files)
    if up.returncode != 0:
        raise SystemExit(f"instore site up {site}: {up.stderr[-500:]}")
    try:
        protocols = ["xrootd"] + (["xcache"] if args.xcache and has_cache(site) else [])
        for protocol in protocols:
            for name, spec in traces.items():
                try:
                    if protocol == "xcache" and name == next(iter(traces)):
                        warm_cache(site, spec, Path(files[0]), tree)
                    row = measure(site, protocol, name, dirs[name], spec, tree, args.runs)
                    row |= model(site, protocol, dirs[name], args.profiles, row)
                    said = (f"model {row['model_wall_s']:.2f} s ("
                            f"{row['model_wall_s'] / row['real_median_s']:.3f} of real)"
                            if "model_wall_s" in row else row["model_error"])  # fmt: skip
                    print(f"  {said}", flush=True)
                    save(row)
                except RunFailed as err:  # kept, with why: a result, not a crash
                    print(err, flush=True)
                    save({"trace": name, "site": site_label(site), "protocol": protocol,
                          "error": str(err),
                          "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})  # fmt: skip
    finally:
        down = instore("site", "down", site)
        if down.returncode != 0:
            print(f"instore site down {site}: {down.stderr.strip()}", flush=True)


def model_only(profiles: Path, out: Path) -> None:
    """The model's columns added to the kept rows whose trace still exists (no run)."""
    kept = json.loads(out.read_text())
    for r in kept["rows"]:
        if "error" in r:
            continue
        trace = Path(r.get("trace_dir") or "")
        if r["site"].startswith("wan-rtt"):
            VARIANTS[r["site"]] = ("wan", {"rtt_ms": float(r["site"].removeprefix("wan-rtt"))})
        if not (trace / "trace.json").is_file():
            r["model_error"] = f"its trace {trace} is gone (a temporary recording)"
            continue
        r |= model(r["site"], r["protocol"], trace, profiles, r)
    out.write_text(json.dumps(kept, indent=1) + "\n")
    print(f"written {out}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sites", nargs="+", default=["lan-hdd", "wan"])
    ap.add_argument("--wan-rtt", type=float, action="append", default=[],
                    help="also the WAN site at this round trip (ms; repeatable)")  # fmt: skip
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--xcache", action="store_true", help="also through the site's XCache")
    ap.add_argument("--study-traces", action="store_true",
                    help="replay the traces make study recorded (data/files/traces/lan-ssd/) instead of "
                    "recording them first")  # fmt: skip
    ap.add_argument("--profiles", type=Path, default=REPO / "results",
                    help="a results directory with each site's profile.json (default: "
                    "results, as make study fits them)")  # fmt: skip
    ap.add_argument("--out", type=Path, default=OUT,
                    help="the results file (default: bench/fidelity_results.json, which the "
                    "Results page reads)")  # fmt: skip
    ap.add_argument("--model-only", action="store_true",
                    help="add the model's predictions to the rows of the last run whose "
                    "traces still exist, measuring nothing")  # fmt: skip
    ap.add_argument("--keep-traces", type=Path, default=None,
                    help="record the traces into this directory and keep them (default: a "
                    "temporary one, gone when the run ends), so --model-only can predict "
                    "its rows again later")  # fmt: skip
    ap.add_argument("--recordings", type=int, default=3,
                    help="record each trace this many times and keep the one whose CPU is the "
                    "median (default: 3; 1: one recording, as before 2026-12-02)")  # fmt: skip
    ap.add_argument("--traces", nargs="+", default=None,
                    help="measure these traces only (default: all), keeping the other traces' "
                    "rows of the results file")  # fmt: skip
    args = ap.parse_args()
    if args.model_only:
        model_only(args.profiles, args.out)
        return
    study = yaml.safe_load((REPO / "config" / "study.yaml").read_text())["profiles"]["full"]
    analyses = ("agc-rdf", "agc-uproot", "agc-coffea")  # the load trace is uproot's again
    traces = {n: s for n, s in study["traces"].items() if n in analyses}
    traces |= {
        n: {**study["traces"][base], "args": extra} for n, (base, extra) in MT_TRACES.items()
    }
    if args.traces:
        unknown = set(args.traces) - set(traces)
        if unknown:
            raise SystemExit(f"no trace {', '.join(sorted(unknown))}: one of {', '.join(traces)}")
        traces = {n: s for n, s in traces.items() if n in args.traces}
    if args.study_traces and set(traces) & set(MT_TRACES):
        raise SystemExit("make study records no multi-threaded trace: drop --study-traces")
    kept = json.loads(args.out.read_text()) if args.traces and args.out.exists() else {"rows": []}
    old = [{"measured_at": kept.get("measured_at"), **r} for r in kept["rows"]
           if r["trace"] not in traces]  # fmt: skip
    tree = "Events"
    with tempfile.TemporaryDirectory(prefix="instore-fidelity-sites-") as variants:
        if args.study_traces:
            dirs = {n: trace_dir(DATA, RECORDED_ON, n) for n in traces}
        else:
            into = args.keep_traces or Path(variants)
            into.mkdir(parents=True, exist_ok=True)
            dirs = {n: record_median(s, tree, into / n, args.recordings)
                    for n, s in traces.items()}  # fmt: skip
        recorded = {**kept.get("recorded", {}),
                    **{n: json.loads((d / "trace.json").read_text()) for n, d in dirs.items()}}  # fmt: skip
        rows: list[dict] = []

        def save(row: dict) -> None:
            rows.append(row)
            args.out.write_text(json.dumps({
                "machine": {"host": platform.node(), "cpus": os.cpu_count(),
                            "kernel": platform.release()},
                "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "runs": args.runs, "traces": "make study's" if args.study_traces else "recorded first",
                "commands": [" ".join(["python", "bench/replay_fidelity.py", *sys.argv[1:]])],
                "recordings": args.recordings,
                "recorded": {n: {k: m.get(k) for k in ("start_unix", "wall_s", "cpu_s", "warm_up",
                                                       "cpu_s_recordings") if k in m}
                             for n, m in recorded.items()},
                "rows": [*old, *rows]}, indent=1) + "\n")  # fmt: skip

        sites = [*args.sites, *(wan_at(rtt, Path(variants)) for rtt in args.wan_rtt)]
        for site in sites:
            measure_site(site, args, traces, dirs, tree, save)
    print(f"written {args.out}")


if __name__ == "__main__":
    main()
