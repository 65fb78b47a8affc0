# Calibration: what each site's storage delivers with no ROOT in the way, so every figure can
# show its physical limit. `instore site calibrate` brings an emulated site up and down itself.
# It measures storage, so it never runs beside a sweep (threads: all cores).


def calibration_inputs(wildcards):
    return [f"{RESULTS}/{wildcards.site}/calibration.json"] if CALIBRATE else []


rule calibrate_site:
    input:
        site=site_file,
        files=FILES,
    output:
        f"{RESULTS}/{{site}}/calibration.json",
    log:
        f"{LOGS}/{{site}}/calibrate.log",
    threads: workflow.cores
    shell:
        "instore site calibrate {wildcards.site} --results {RESULTS} > {log} 2>&1"
