# The sweep: one job per site and section. Points never overlap in time, so a sweep takes
# every core and no two sweeps (or a sweep and a calibration) run together. The sweep brings
# an emulated site up and down itself; failed points are recorded in the table, not dropped
# (--failed-points-ok: they are the study's findings, not the pipeline's failure). Records
# older than the site file, the data or the calibration were measured under other
# conditions: --resume-if-current remeasures them, and otherwise resumes.


rule sweep_section:
    input:
        site=site_file,
        files=FILES,
        calibration=calibration_inputs,
        upload=upload_inputs,
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
        study=str(STUDY_FILE),
        profile=STUDY.profile,
        data=lambda w, input: Path(input.files[0]).parent,
        results=lambda w, output: Path(output[0]).parents[1],
    wildcard_constraints:
        section="|".join(SECTIONS),
    threads: workflow.cores
    conda:
        "../../envs/conda.yaml"
    shell:
        "instore sweep --site {wildcards.site} --sections {wildcards.section}"
        " --study {params.study:q} --profile {params.profile} --data {params.data:q}"
        " --results {params.results:q} --runtime {params.runtime} --no-progress"
        " --failed-points-ok"
        " --resume-if-current {input.site:q} {input.files:q} {input.calibration:q}"
        " > {log} 2>&1 || {{ tail -n 1 {log} >&2; false; }}"
