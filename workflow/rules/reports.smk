# Summaries, one executed notebook per site and section (the one section notebook, given the
# section's name), HTML per notebook, each site's overview (its index.html), the cross-site
# comparison and the index page. Each rule runs one `instore summarize` or `instore report
# execute|render|index`; its output goes to its log, and a failure shows the log's last line
# (for a notebook, the failing cell's error).
NOTEBOOKS = Path(workflow.basedir) / "notebooks"


rule summarize_site:
    input:
        sections=lambda w: expand(f"{RESULTS}/{w.site}/{{s}}.parquet", s=SECTIONS_RUN),
        calibration=calibration_inputs,
    output:
        f"{RESULTS}/{{site}}/summary.parquet",
        f"{RESULTS}/{{site}}/recommendations.json",
    log:
        f"{LOGS}/{{site}}/summarize.log",
    params:
        results=lambda w, output: Path(output[0]).parents[1],
    conda:
        "../../envs/conda.yaml"
    shell:
        "instore summarize --site {wildcards.site} --results {params.results:q}"
        " > {log} 2>&1 || {{ tail -n 1 {log} >&2; false; }}"


rule execute_notebook:
    input:
        notebook=str(NOTEBOOKS / "section.ipynb"),
        summary=f"{RESULTS}/{{site}}/summary.parquet",
        data=page_files,
    output:
        f"{REPORTS}/{{site}}/{{name}}.ipynb",
    log:
        f"{LOGS}/{{site}}/notebook-{{name}}.log",
    wildcard_constraints:
        name="|".join(SECTIONS),
    params:
        parameters=lambda w: [*site_parameters(w), "-p", f"section={w.name}"],
    conda:
        "../../envs/conda.yaml"
    shell:
        "instore report execute {input.notebook:q} --out {output:q} {params.parameters:q}"
        " > {log} 2>&1 || {{ tail -n 1 {log} >&2; false; }}"


use rule execute_notebook as execute_overview with:
    input:
        notebook=str(NOTEBOOKS / "overview.ipynb"),
        summary=f"{RESULTS}/{{site}}/summary.parquet",
        recommendations=f"{RESULTS}/{{site}}/recommendations.json",
        # its links must not dangle
        pages=lambda w: expand(f"{REPORTS}/{w.site}/{{s}}.html", s=SECTIONS_RUN) + baseline_page(w),
        # its analyses-by-sites grid predicts every recorded trace on every site's profile
        profiles=expand(f"{RESULTS}/{{site}}/profile.json", site=SITES),
    output:
        f"{REPORTS}/{{site}}/overview.ipynb",
    log:
        f"{LOGS}/{{site}}/notebook-overview.log",
    wildcard_constraints:
        site="[^/]+",
    params:
        parameters=lambda w: [*site_parameters(w), "-p", f"baseline={BASELINE}"],


use rule execute_notebook as execute_baseline with:
    input:
        notebook=str(NOTEBOOKS / "baseline.ipynb"),
        summary=f"{RESULTS}/{{site}}/summary.parquet",
        baseline=baseline_inputs,
    output:
        f"{REPORTS}/{{site}}/baseline.ipynb",
    log:
        f"{LOGS}/{{site}}/notebook-baseline.log",
    wildcard_constraints:
        site="[^/]+",
    params:
        parameters=lambda w: [
            "-p", f"site={w.site}", "-p", f"results={Path(RESULTS).resolve()}",
            "-p", f"baseline={Path(BASELINE).resolve()}",
        ],  # fmt: skip


rule render_page:
    input:
        f"{REPORTS}/{{site}}/{{name}}.ipynb",
    output:
        f"{REPORTS}/{{site}}/{{name}}.html",
    log:
        f"{LOGS}/{{site}}/render-{{name}}.log",
    wildcard_constraints:
        name="|".join(SECTIONS),
    conda:
        "../../envs/conda.yaml"
    shell:
        "instore report render {input:q} --out {output:q}"
        " > {log} 2>&1 || {{ tail -n 1 {log} >&2; false; }}"


use rule render_page as render_baseline with:
    input:
        f"{REPORTS}/{{site}}/baseline.ipynb",
    output:
        f"{REPORTS}/{{site}}/baseline.html",
    log:
        f"{LOGS}/{{site}}/render-baseline.log",
    wildcard_constraints:
        site="[^/]+",


use rule render_page as render_site_index with:
    input:
        f"{REPORTS}/{{site}}/overview.ipynb",
    output:
        f"{REPORTS}/{{site}}/index.html",
    log:
        f"{LOGS}/{{site}}/render-index.log",
    wildcard_constraints:
        site="[^/]+",


rule execute_compare:
    input:
        notebook=str(NOTEBOOKS / "compare.ipynb"),
        summaries=expand(f"{RESULTS}/{{site}}/summary.parquet", site=SITES),
    output:
        f"{REPORTS}/compare.ipynb",
    log:
        f"{LOGS}/notebook-compare.log",
    params:
        parameters=[
            "-p", f"sites={json.dumps(SITES)}", "-p", f"results={Path(RESULTS).resolve()}",
        ],  # fmt: skip
    conda:
        "../../envs/conda.yaml"
    shell:
        "instore report execute {input.notebook:q} --out {output:q} {params.parameters:q}"
        " > {log} 2>&1 || {{ tail -n 1 {log} >&2; false; }}"


use rule render_page as render_compare with:
    input:
        f"{REPORTS}/compare.ipynb",
    output:
        f"{REPORTS}/compare.html",
    log:
        f"{LOGS}/render-compare.log",


rule index_page:
    input:
        sites=expand(f"{REPORTS}/{{site}}/index.html", site=SITES),
        compare=f"{REPORTS}/compare.html",
        summaries=expand(f"{RESULTS}/{{site}}/summary.parquet", site=SITES),
        recommendations=expand(f"{RESULTS}/{{site}}/recommendations.json", site=SITES),
        sections=expand(f"{RESULTS}/{{site}}/{{section}}.parquet", site=SITES, section=SECTIONS_RUN),
    output:
        f"{REPORTS}/index.html",
    log:
        f"{LOGS}/index.log",
    params:
        sites=",".join(SITES),
        results=lambda w, input: Path(input.summaries[0]).parents[1],
        reports=lambda w, output: Path(output[0]).parent,
    conda:
        "../../envs/conda.yaml"
    shell:
        "instore report index --sites {params.sites} --results {params.results:q}"
        " --reports {params.reports:q} > {log} 2>&1 || {{ tail -n 1 {log} >&2; false; }}"
