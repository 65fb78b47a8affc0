# The site profile: after a site's sweeps, its few physical parameters (RTT, link, TCP window,
# disk, each protocol's server time, the client's CPU per request, the XCache), fitted from its
# calibration and its payload sections only (`instore predict --fit`); the replay, load and
# caching points validate it. `instore predict` then predicts any trace there with no site up.


rule predict_profile:
    input:
        sections=lambda w: expand(f"{RESULTS}/{w.site}/{{s}}.parquet", s=SECTIONS_RUN),
        calibration=calibration_inputs,
    output:
        f"{RESULTS}/{{site}}/profile.json",
    log:
        f"{LOGS}/{{site}}/profile.log",
    params:
        results=lambda w, output: Path(output[0]).parents[1],
    conda:
        "../../envs/conda.yaml"
    shell:
        "instore predict --fit {wildcards.site} --results {params.results:q}"
        " > {log} 2>&1 || {{ tail -n 1 {log} >&2; false; }}"
