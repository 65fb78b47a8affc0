# Calibration: what each site's storage delivers with no ROOT in the way, so every figure can
# show its physical limit. `instore site calibrate` brings an emulated site up and down itself.
# It measures storage, so it never runs beside a sweep (threads: all cores).


rule calibrate_site:
    input:
        site=site_file,
        files=FILES,
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
