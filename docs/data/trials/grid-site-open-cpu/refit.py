"""The trial site's profile fitted from its current records twice, with the open's CPU
(open_cpu_s, as recorded) and without it (as before 898280a): the payload fit's quality, the
protocols' server time and open round trips, and the replay and load points predicted.
Usage: python refit.py RESULTS TRACES SITE"""

import sys
from pathlib import Path

from instore.calibration import read_calibration
from instore.predict.fit import fit_profile
from instore.predict.validate import TraceFinder, check_site, summary
from instore.sweep.store import RecordStore

results, traces, site = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
records = RecordStore(results, site).current()
calib = read_calibration(results, site)
have = [r for r in records if r.get("open_cpu_s") is not None]
print(f"{len(records)} current records, {len(have)} with open_cpu_s")
for label, recs in (
    ("with open_cpu_s", records),
    ("without (before)", [{k: v for k, v in r.items() if k != "open_cpu_s"} for r in records]),
):
    prof = fit_profile(site, calib, recs)
    q = prof.fit_quality or {}
    print(
        f"== {label}: fit on {q.get('points')} payload points, median error "
        f"{q.get('median_abs_error', float('nan')):.1%}, {q.get('within_10pct', 0):.0%} within 10%"
    )
    for name, p in prof.protocols.items():
        trips = p.open_round_trips.value if p.open_round_trips else None
        print(f"   {name}: request_ms {p.request_ms.value:.3f}, open_round_trips {trips}")
    print(
        f"   client CPU per request {prof.client_cpu_request_us.value:.1f} us, "
        f"per MB {prof.client_cpu_mb_ms.value:.2f} ms"
    )
    checks, why = check_site(prof, records, TraceFinder(traces))
    s = summary(checks)
    print(
        f"   replay and load: {s['points']} points, {s['points_within_10pct']} within 10%, "
        f"median error {s['median_abs_error']:.1%}"
    )
