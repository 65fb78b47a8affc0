# Calibration: what each site's storage delivers with no ROOT in the way, so every figure can
# show its physical limit. `instore site calibrate` brings an emulated site up and down itself.
# It measures storage, so it never runs beside a sweep (threads: all cores).

# A real site whose file names a `dataset:` reads its own files, already on its storage: no
# generated file is made or uploaded for it. `instore site preflight` finds each file behind
# every endpoint, opens it and lists what it holds and the layout the study calls it, in
# results/<site>/dataset.json; the sweep reads from it which files a point reads and which
# points the dataset cannot serve (a layout it lacks, branches a pattern names).


rule describe_dataset:
    input:
        site=site_file,
        listed=dataset_list,
    output:
        f"{RESULTS}/{{site}}/dataset.json",
    log:
        f"{LOGS}/{{site}}/dataset.log",
    params:
        results=lambda w, output: Path(output[0]).parents[1],
    conda:
        "../../envs/conda.yaml"
    shell:
        "instore site preflight {wildcards.site} --results {params.results:q}"
        " > {log} 2>&1 || {{ tail -n 5 {log} >&2; false; }}"


# A real site whose file sets `upload: true` gets the study's files first: `instore site
# upload` places them behind every endpoint, verified by size and adler32 (equal copies are
# skipped), and writes a marker naming them. Emulated sites get their files at bring-up.


rule upload_site:
    input:
        site=site_file,
        files=FILES + FILESET_FILES,
    output:
        f"{RESULTS}/{{site}}/upload.json",
    log:
        f"{LOGS}/{{site}}/upload.log",
    conda:
        "../../envs/conda.yaml"
    shell:
        "instore site upload {wildcards.site} --files {input.files:q} --marker {output:q}"
        " --no-progress > {log} 2>&1 || {{ tail -n 1 {log} >&2; false; }}"


rule calibrate_site:
    input:
        site=site_file,
        files=lambda w: [] if _dataset_of(w.site) else FILES,
        upload=upload_inputs,
        dataset=dataset_inputs,
    output:
        f"{RESULTS}/{{site}}/calibration.json",
    log:
        f"{LOGS}/{{site}}/calibrate.log",
    params:
        results=lambda w, output: Path(output[0]).parents[1],
    threads: workflow.cores
    conda:
        "../../envs/conda.yaml"
    shell:
        "instore site calibrate {wildcards.site} --results {params.results:q}"
        " > {log} 2>&1 || {{ tail -n 1 {log} >&2; false; }}"
