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


# Each site's "What if" page: every recorded analysis's predicted CPU efficiency there against
# RTT, link, IOPS and clients, the measured replay and load points on the same axes.
use rule execute_notebook as execute_whatif with:
    input:
        notebook=str(NOTEBOOKS / "whatif.ipynb"),
        profile=f"{RESULTS}/{{site}}/profile.json",
        summary=f"{RESULTS}/{{site}}/summary.parquet",
    output:
        f"{REPORTS}/{{site}}/whatif.ipynb",
    log:
        f"{LOGS}/{{site}}/notebook-whatif.log",
    wildcard_constraints:
        site="[^/]+",
    params:
        parameters=site_parameters,


use rule render_page as render_whatif with:
    input:
        f"{REPORTS}/{{site}}/whatif.ipynb",
    output:
        f"{REPORTS}/{{site}}/whatif.html",
    log:
        f"{LOGS}/{{site}}/render-whatif.log",
    wildcard_constraints:
        site="[^/]+",
