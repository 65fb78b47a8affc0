"""The "What if" page of a site's report: each recorded analysis's predicted CPU efficiency on
this site against RTT, link bandwidth, disk IOPS and clients (``instore.predict``, from the
site's fitted profile, no site up), with the replay and load points measured here drawn on the
same axes, and a sentence per analysis naming the change that would help it most."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from instore.access import XROOTD
from instore.errors import InstoreError
from instore.filenames import choose_recording, recorded_traces, traces_dir
from instore.predict.compiled import Compiled, compile_trace
from instore.predict.model import predict
from instore.predict.profile import Profile, site_profile
from instore.predict.scenario import PART_WORDS, Prediction, Scenario
from instore.replay.trace import load_trace
from instore.report import show
from instore.report.plots import panels
from instore.sweep.store import RecordStore
from instore.vocabulary import TRACE_SECTIONS

PAGE = "whatif"
AXES: dict[str, tuple[str, tuple[float, ...]]] = {
    "rtt_ms": ("RTT (ms)", (0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200)),
    "bandwidth_mbit": ("link (Mbit/s)", (10, 30, 100, 300, 1000, 3000, 10000)),
    "iops": ("disk IOPS", (50, 100, 150, 300, 1000, 3000, 10000, 100000)),
    "clients": ("clients at once", (1, 2, 4, 8, 16, 32, 64)),
}


@dataclass(frozen=True)
class Recorded:
    """A recorded analysis prepared for the model, and the site its trace was recorded on."""

    compiled: Compiled
    recorded_on: str | None


def recordings(data: Path, prefer: Sequence[str] = ()) -> dict[str, Recorded]:
    """The study's recorded traces, one recording of each (that of the first site of
    ``prefer`` that recorded it: ``filenames.choose_recording``), prepared for the model."""
    out = {}
    for name, found in recorded_traces(traces_dir(Path(data))).items():
        try:
            trace = load_trace(choose_recording(found, prefer))
            out[name] = Recorded(compile_trace(trace), trace.recorded_on())
        except InstoreError:
            continue
    return out


def traces(data: Path, prefer: Sequence[str] = ()) -> dict[str, Compiled]:
    """``recordings``, the prepared traces only."""
    return {name: r.compiled for name, r in recordings(data, prefer).items()}


def replayed_from(records: Sequence[dict[str, Any]], site: str) -> list[str]:
    """The sites the traces a site's replay points replayed were recorded on (from its
    records), then the site itself: its pages predict from the same recordings its points
    were measured with."""
    sites = [(r.get("recorded") or {}).get("recorded_on") for r in records
             if isinstance(r.get("recorded"), dict)]  # fmt: skip
    return [*dict.fromkeys(s for s in sites if s), site]


@dataclass(frozen=True)
class SitePage:
    """What a site's What-if page draws from, read once for its three parts (the advice,
    the curves, the validation): the profile (or why there is none), the site's records and
    the recordings its points replayed."""

    site: str
    data: Path
    profile: Profile | None
    problem: InstoreError | None
    records: list[dict[str, Any]] = field(default_factory=list)
    traces: dict[str, Compiled] = field(default_factory=dict)


def load(site: str, results: str | Path, data: str | Path) -> SitePage:
    """Read the site's profile, records and traces once."""
    try:
        profile, problem = site_profile(Path(results), site), None
    except InstoreError as err:
        return SitePage(site, Path(data), None, err)
    records = RecordStore(Path(results), site).current()
    return SitePage(site, Path(data), profile, problem, records,
                    traces(Path(data), replayed_from(records, site)))  # fmt: skip


def _at(profile: Profile, c: Compiled, protocol: str, axis: str, value: float) -> Prediction:
    if axis == "clients":
        return predict(c, profile, Scenario(protocol=protocol, clients=int(value)))
    return predict(c, profile.with_changes(**{axis: value}), Scenario(protocol=protocol))


def _here(profile: Profile, axis: str) -> float | None:
    """The site's own value on an axis (where its measured points sit)."""
    return {"rtt_ms": profile.rtt_ms.value, "bandwidth_mbit": profile.bandwidth_mbit.value,
            "iops": profile.disk_iops, "clients": 1.0}[axis]  # fmt: skip


def measured(records: Sequence[dict[str, Any]], protocol: str) -> pd.DataFrame:
    """The replay and load points among a site's records over ``protocol``: trace, clients,
    median predicted CPU efficiency (the recorded CPU over the replay's wall)."""
    groups: dict[tuple[str, int], list[float]] = {}
    jobs: dict[str, set[Any]] = {}
    for r in records:
        if r.get("section") not in TRACE_SECTIONS or r.get("protocol") != protocol:
            continue
        if r.get("status") != "ok" or r.get("predicted_cpu_efficiency") is None:
            continue
        jobs.setdefault(str(r.get("point_key")), set()).add(r.get("job"))
    for r in records:
        key = str(r.get("point_key"))
        if key in jobs and r.get("protocol") == protocol and r.get("status") == "ok":
            eff = r.get("predicted_cpu_efficiency")
            if isinstance(eff, int | float):
                groups.setdefault((str(r["trace"]), len(jobs[key])), []).append(float(eff))
    rows = [{"trace": t, "clients": n, "cpu_efficiency": statistics.median(v)}
            for (t, n), v in groups.items()]  # fmt: skip
    return pd.DataFrame(rows, columns=["trace", "clients", "cpu_efficiency"])


def curves(page: SitePage, protocol: str = XROOTD) -> None:
    """Predicted efficiency per analysis on four axes, the measured points on them."""
    profile, found, site = page.profile, page.traces, page.site
    if profile is None:
        err = page.problem
        show.note(f"No prediction: {err} ({err.fix})." if err else "No prediction.")
        return
    if not found:
        show.note(f"No recorded trace under {traces_dir(page.data)}: nothing to predict.")
        return
    protocol = protocol if protocol in profile.protocols else profile.protocol(None)[0]
    points = measured(page.records, protocol)
    fig, axes = panels(len(AXES), width=4.2)
    for k, (name, c) in enumerate(found.items()):
        color = f"C{k}"
        for ax, (axis, (label, values)) in zip(axes, AXES.items(), strict=True):
            effs = [_at(profile, c, protocol, axis, v).cpu_efficiency_per_core for v in values]
            ax.plot(values, [100 * e for e in effs], color=color, label=name)
            mine = points[points["trace"] == name]
            if axis == "clients":
                ax.plot(mine["clients"], 100 * mine["cpu_efficiency"] / c.threads, "o", color=color)
            elif (here := _here(profile, axis)) is not None:
                alone = mine[mine["clients"] == 1]["cpu_efficiency"]
                ax.plot([here] * len(alone), 100 * alone / c.threads, "o", color=color)
                ax.axvline(here, color="grey", linewidth=0.6, linestyle=":")
            ax.set_xscale("log")
            ax.set_xlabel(label)
            ax.set_ylim(0, 105)
    axes[0].set_ylabel("predicted CPU efficiency per core (%)")
    axes[0].legend(fontsize=7, loc="lower left")
    show._display(show.figure_markup(fig, "fig-whatif-curves", f"Each recorded analysis's CPU efficiency on {site} over "
            f"{protocol}, predicted from the site's profile with one parameter changed at a "
            "time (lines); dots: the replay (1 client) and load points measured here; dotted: "
            "the site's own value."))  # fmt: skip


def _changes(profile: Profile) -> dict[str, tuple[dict[str, float], Scenario]]:
    rtt = profile.rtt_ms.value or 0.0
    bw = profile.bandwidth_mbit.value or 0.0
    iops = profile.disk_iops or 0.0
    out: dict[str, tuple[dict[str, float], Scenario]] = {
        f"a shorter round trip ({rtt / 4:g} ms)": ({"rtt_ms": rtt / 4}, Scenario()),
        f"a 10x faster link ({bw * 10:g} Mbit/s)": ({"bandwidth_mbit": bw * 10}, Scenario()),
    }
    if iops:
        out[f"4x the disk's IOPS ({iops * 4:.0f})"] = ({"iops": iops * 4}, Scenario())
    if profile.xcache is not None:
        out["a warm XCache"] = ({}, Scenario(xcache="warm"))
    return out


def advice(page: SitePage, protocol: str = XROOTD) -> pd.DataFrame | None:
    """Per analysis: where its time goes and the change that would help it most, as a table
    and a sentence each (None: the site has no profile)."""
    profile, found, site = page.profile, page.traces, page.site
    if profile is None:
        return None
    protocol = protocol if protocol in profile.protocols else profile.protocol(None)[0]
    rows = []
    for name, c in found.items():
        now = predict(c, profile, Scenario(protocol=protocol))
        tried = {}
        for label, (changes, sc) in _changes(profile).items():
            sc = Scenario(protocol=protocol, xcache=sc.xcache)
            tried[label] = predict(c, profile.with_changes(**changes), sc).cpu_efficiency_per_core
        best = max(tried, key=lambda k: tried[k])
        least = min(tried, key=lambda k: tried[k])
        waits = now.waits_on
        share = now.breakdown[waits] / now.wall_s if now.wall_s else 0.0
        gain = tried[best] - now.cpu_efficiency_per_core
        if gain < 0.02:
            sentence = (f"{name} is bound by its own CPU here ({now.cpu_efficiency_per_core:.0%}"
                        " per core): no change to the storage helps it by 2 points or more.")  # fmt: skip
        else:
            sentence = (f"{name} waits most on {PART_WORDS.get(waits, waits)} ({share:.0%} of "
                        f"its wall): {best} helps it most ({now.cpu_efficiency_per_core:.0%} to "
                        f"{tried[best]:.0%} per core); {least} the least ({tried[least]:.0%}).")  # fmt: skip
        show.note(sentence)
        rows.append({"analysis": name, "efficiency": now.cpu_efficiency_per_core,
                     "waits most on": PART_WORDS.get(waits, waits), "best change": best,
                     "efficiency with it": tried[best]})  # fmt: skip
    frame = pd.DataFrame(rows)
    if len(frame):
        show.table(frame, f"The change that would help each analysis most on {site} ({protocol})",
                   percent=("efficiency", "efficiency with it"))  # fmt: skip
    return frame


def _checks(profile: Profile, records: Sequence[dict[str, Any]], data: Path,
            ) -> tuple[list[Any], list[Any], list[str]]:  # fmt: skip
    """The site's replay and load points against their prediction, its held-out caching
    points, and the points that could not be predicted (why)."""
    from instore.predict.validate import TraceFinder, check_held_out, check_site

    checks, skipped = check_site(profile, records, TraceFinder(traces_dir(Path(data))))
    return checks, check_held_out(profile, records), skipped


def _measured_cell(c: Any) -> str:
    """A point's measured wall: its median and, over several runs, their range and count."""
    if c.walls > 1 and c.measured_lo_s is not None and c.measured_hi_s is not None:
        return (f"{c.measured_wall_s:.3g} [{c.measured_lo_s:.3g}, {c.measured_hi_s:.3g}] "
                f"({c.walls})")  # fmt: skip
    return f"{c.measured_wall_s:.3g} (1)"


def _check_rows(checks: Sequence[Any]) -> pd.DataFrame:
    return pd.DataFrame([{"section": c.section, "trace": c.trace,
                          "protocol": c.protocol + (f" ({c.xcache})" if c.xcache else ""),
                          "clients": c.clients,
                          "measured wall (s): median [range] (runs)": _measured_cell(c),
                          "predicted wall (s)": c.predicted_wall_s, "error": f"{c.error:+.1%}",
                          "waits most on (model)": PART_WORDS.get(c.waits_on, "-")}
                         for c in sorted(checks, key=lambda c: -abs(c.error))])  # fmt: skip


def validation(page: SitePage, worst: int = 5) -> None:
    """The measured replay and load points of this site against their prediction: the
    error's distribution, every point, the worst explained from their records, and the
    held-out caching points apart."""
    import html as _html

    from instore.predict.validate import summary, verdict

    profile, site = page.profile, page.site
    if profile is None:
        return
    checks, held, skipped = _checks(profile, page.records, page.data)
    if not checks:
        show.note("No replay or load point measured here could be predicted to check the "
                  "model against" + (f" ({'; '.join(skipped)})" if skipped else "") + ".")  # fmt: skip
    else:
        s = summary(checks, worst)
        show._display('<a id="whatif-validation"></a>')  # show.table's keys are the sections'
        show.table(_check_rows(checks), f"Predicted against measured, the replay and load "
                   f"points of {site} (never fitted on): {verdict(s)}. Worst first.")  # fmt: skip
        items = "".join(f"<li>{_html.escape(w['section'])} {_html.escape(w['trace'])} "
                        f"{_html.escape(w['protocol'])}, {w['clients']} client(s): "
                        f"{_html.escape(w['why'])}</li>" for w in s["worst"])  # fmt: skip
        show._display(f"<p><b>The {len(s['worst'])} worst predicted, and what their records "
                      f"say</b></p><ol class=\"instore-worst\">{items}</ol>")  # fmt: skip
        if skipped:
            show.note(f"Not predicted: {'; '.join(skipped)}.")
    if held:
        h = summary(held)
        show.table(_check_rows(held), "Held out: the caching section's direct points at RTTs "
                   f"and links the fit never saw, the profile retuned to each: {verdict(h)}")  # fmt: skip


def _site_profiles(results: Path, sites: Sequence[str]) -> dict[str, Profile]:
    """The profiles of ``sites`` that have one (none given: every site under results)."""
    from instore.predict.profile import FILE_NAME

    names = list(sites) or sorted(p.parent.name for p in Path(results).glob(f"*/{FILE_NAME}"))
    out = {}
    for name in names:
        try:
            out[name] = site_profile(Path(results), name)
        except InstoreError:
            continue
    return out


RECORDED_ON = "recorded on"


def sites_grid(results: str | Path, data: str | Path, sites: Sequence[str]) -> pd.DataFrame:
    """Analyses by sites: each recorded analysis's predicted CPU efficiency per core on each
    site with a profile (its default protocol), and the site its recording was made on."""
    return _sites_grid(Path(results), Path(data), sites)[0]


def _sites_grid(
    results: Path, data: Path, sites: Sequence[str]
) -> tuple[pd.DataFrame, dict[str, Profile]]:
    """``sites_grid``'s table and the profiles its columns are: the overview names them."""
    profiles = _site_profiles(results, sites)
    return _grid_frame(recordings(data, list(profiles)), profiles), profiles


def _grid_frame(found: dict[str, Recorded], profiles: dict[str, Profile]) -> pd.DataFrame:
    """One row per analysis: one recording of it (``recordings``) predicted on every site."""
    rows = []
    for name, rec in found.items():
        row: dict[str, Any] = {"analysis": name, RECORDED_ON: rec.recorded_on or "-"}
        for site, profile in profiles.items():
            row[site] = predict(rec.compiled, profile).cpu_efficiency_per_core
        rows.append(row)
    return pd.DataFrame(rows, columns=["analysis", RECORDED_ON, *profiles])


def _trust(profile: Profile, results: Path, data: Path) -> str:
    """How far a site's column is trusted: its fit, and its measured points predicted."""
    from instore.predict.validate import summary

    q = profile.fit_quality or {}
    fitted = (f"fitted on {q['points']} payload points (median error {q['median_abs_error']:.1%})"
              if q.get("median_abs_error") is not None else f"{profile.kind}, not fitted on "
              "payload points")  # fmt: skip
    checks, _, _ = _checks(profile, RecordStore(results, profile.site).current(), data)
    if not checks:
        return f"{profile.site}: {fitted}; no replay or load point measured there to check it"
    s = summary(checks)
    return (f"{profile.site}: {fitted}; {s['points_within_10pct']} of {s['points']} of its replay "
            f"and load points predicted within 10% (median error {s['median_abs_error']:.1%})")  # fmt: skip


def grid(site: str, results: str | Path, data: str | Path, sites: Sequence[str] = ()) -> None:
    """The overview's grid: every recorded analysis's predicted CPU efficiency per core on
    every site with a profile (this one marked), with how far each column is trusted and
    which recording each row was predicted from."""
    frame, profiles = _sites_grid(Path(results), Path(data), sites)
    if frame.empty or not profiles:
        what = "no recorded trace" if frame.empty else "no site has a profile"
        show.note(f"No analyses-by-sites prediction: {what} under {results} and {data}.")
        return
    names = {s: f"{s} ({profiles[s].protocol(None)[0]})" + (" (this site)" if s == site else "")
             for s in profiles}  # fmt: skip
    frame = frame.rename(columns=names)
    show._display('<a id="whatif-grid"></a>')
    show.table(frame, "Analyses by sites: each recorded analysis's CPU efficiency per core "
               "predicted from the profile of every site under the results (no site up; "
               "`instore predict --all`), over the site's default protocol. "
               "The What-if page has this site's curves and its measured points.",
               percent=tuple(names.values()))  # fmt: skip
    show.note("Each row is predicted on every site from one recording of the analysis (its "
              f"\"{RECORDED_ON}\" column: the first of these sites that recorded it, else the "
              "first by name): the job's CPU and think times as that recording measured them, "
              "its reads served by each site's profile. How far each column is trusted: "
              + "; ".join(_trust(p, Path(results), Path(data)) for p in profiles.values())
              + ".")  # fmt: skip
