# The sweep: one job per site and section. Points never overlap in time, so a sweep takes
# every core and no two sweeps (or a sweep and a calibration) run together. The sweep brings
# an emulated site up and down itself; failed points are recorded in the table, not dropped.
import datetime as dt

from instore.sweep.store import RecordStore

SWEEP_FAILED_POINTS = 1  # `instore sweep` exit status when some points failed but were recorded


def _mtime(path):
    return dt.datetime.fromtimestamp(Path(path).stat().st_mtime, dt.UTC)


def records_stale(site, section, inputs):
    """True when this section already has records older than one of the inputs (site file,
    data, calibration): those were measured under other conditions, so measure again
    (--force). With no records, or records newer than every input, the sweep resumes."""
    times = [
        dt.datetime.fromisoformat(r["start_time"])
        for r in RecordStore(Path(RESULTS), site).records()
        if r.get("section") == section and r.get("start_time")
    ]
    newest_input = max((_mtime(p) for p in inputs), default=None)
    return bool(times) and newest_input is not None and max(times) < newest_input


rule sweep_section:
    input:
        site=site_file,
        files=FILES,
        calibration=calibration_inputs,
        image=IMAGE_INPUT,
    output:
        f"{RESULTS}/{{site}}/{{section}}.parquet",
    log:
        f"{LOGS}/{{site}}/sweep-{{section}}.log",
    params:
        # A grid, file or repetition change reruns only the sections it touches.
        grid=lambda w: json.dumps(STUDY.sections[w.section], sort_keys=True),
        files=lambda w: json.dumps(asdict(STUDY.files), sort_keys=True),
        repetitions=STUDY.repetitions,
        runtime=RUNTIME.value,
    wildcard_constraints:
        section="|".join(SECTIONS),
    threads: workflow.cores
    run:
        measured = [input.site, *input.files, *input.calibration]
        force = records_stale(wildcards.site, wildcards.section, measured)
        cmd = [
            "instore", "sweep", "--site", wildcards.site, "--sections", wildcards.section,
            "--study", str(STUDY_FILE), "--profile", STUDY.profile, "--data", DATA,
            "--results", RESULTS, "--runtime", params.runtime, "--no-progress",
        ]  # fmt: skip
        status = run_instore(cmd + (["--force"] if force else []), log[0], (0, SWEEP_FAILED_POINTS))
        if status == SWEEP_FAILED_POINTS:
            print(f"instore: {wildcards.site}/{wildcards.section}: some points failed; see {log[0]}")
