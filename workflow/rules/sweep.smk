# The sweep: one job per site, all of the study's sections in one `instore sweep`, so the site,
# the Dask workers and their warm payloads come up once per site rather than once per section
# (about 10 s each). Points never overlap in time, so a sweep takes every core and no two
# sweeps (or a sweep and a calibration) run together. The sweep brings an emulated site up and
# down itself; failed points are recorded in the table, not dropped (--failed-points-ok: they
# are the study's findings, not the pipeline's failure). A changed grid reruns the site's
# sweep, which measures only the points not yet measured. Records older than the site file, the
# data or the calibration were measured under other conditions: --resume-if-current remeasures
# them, and otherwise resumes. A site with its own dataset takes its listing (dataset.json,
# sites.smk) instead of the generated files.


rule sweep_site:
    input:
        site=site_file,
        files=site_files,
        calibration=calibration_inputs,
        upload=upload_inputs,
        dataset=dataset_inputs,
        traces=trace_inputs,
        image=IMAGE_INPUT,
    output:
        expand(f"{RESULTS}/{{{{site}}}}/{{section}}.parquet", section=SECTIONS_RUN),
    log:
        f"{LOGS}/{{site}}/sweep.log",
    params:
        # A grid, file or repetition change reruns the sweep, which resumes.
        grids=json.dumps({s: STUDY.sections[s] for s in SECTIONS_RUN}, sort_keys=True),
        files=json.dumps(
            {"files": asdict(STUDY.files), "filesets": {k: asdict(v) for k, v in STUDY.filesets.items()}},
            sort_keys=True,
        ),
        repetitions=STUDY.repetitions.text(),
        expensive_s=STUDY.expensive_s,
        sections=",".join(SECTIONS_RUN),
        runtime=RUNTIME.value,
        study=str(STUDY_FILE),
        profile=STUDY.profile,
        data=lambda w, input: Path(input.files[0]).parent if input.files else DATA,
        results=lambda w, output: Path(output[0]).parents[1],
    threads: workflow.cores
    conda:
        "../../envs/conda.yaml"
    shell:
        "instore sweep --site {wildcards.site} --sections {params.sections}"
        " --study {params.study:q} --profile {params.profile} --data {params.data:q}"
        " --traces {input.traces:q}"
        " --results {params.results:q} --runtime {params.runtime} --no-progress"
        " --failed-points-ok"
        " --resume-if-current {input.site:q} {input.files:q} {input.calibration:q}"
        " > {log} 2>&1 || {{ tail -n 1 {log} >&2; false; }}"
