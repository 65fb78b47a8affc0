# Summaries, one executed notebook per site and section, HTML per notebook, each site's
# overview (its index.html), the cross-site comparison and the index page.
NOTEBOOKS = Path(workflow.basedir) / "notebooks"


def site_sections(wildcards):
    return expand(f"{RESULTS}/{wildcards.site}/{{section}}.parquet", section=SECTIONS_RUN)


def section_pages(wildcards):
    return expand(f"{REPORTS}/{wildcards.site}/{{section}}.html", section=SECTIONS_RUN)


def notebook_data(wildcards):
    """The layout notebook draws the access map from the generated files themselves."""
    return FILES if wildcards.name == "layout" else []


def notebook_parameters(site):
    return [
        "-p", f"site={site}", "-p", f"results={Path(RESULTS).resolve()}",
        "-p", f"data={Path(DATA).resolve()}",
    ]  # fmt: skip


rule summarize_site:
    input:
        sections=site_sections,
        calibration=calibration_inputs,
    output:
        f"{RESULTS}/{{site}}/summary.parquet",
        f"{RESULTS}/{{site}}/recommendations.json",
    log:
        f"{LOGS}/{{site}}/summarize.log",
    params:
        results=RESULTS,
    shell:
        "instore summarize --site {wildcards.site} --results {params.results} > {log} 2>&1"


rule execute_notebook:
    input:
        notebook=str(NOTEBOOKS / "{name}.ipynb"),
        summary=f"{RESULTS}/{{site}}/summary.parquet",
        data=notebook_data,
    output:
        f"{REPORTS}/{{site}}/{{name}}.ipynb",
    log:
        f"{LOGS}/{{site}}/notebook-{{name}}.log",
    wildcard_constraints:
        name="|".join(SECTIONS),
    params:
        parameters=lambda w: notebook_parameters(w.site),
    run:
        run_instore(
            ["instore", "report", "execute", input.notebook, "--out", output[0], *params.parameters],
            log[0],
        )


use rule execute_notebook as execute_overview with:
    input:
        notebook=str(NOTEBOOKS / "overview.ipynb"),
        summary=f"{RESULTS}/{{site}}/summary.parquet",
        recommendations=f"{RESULTS}/{{site}}/recommendations.json",
        pages=section_pages,  # its links must not dangle
    output:
        f"{REPORTS}/{{site}}/overview.ipynb",
    log:
        f"{LOGS}/{{site}}/notebook-overview.log",
    wildcard_constraints:
        site="[^/]+",


rule render_page:
    input:
        f"{REPORTS}/{{site}}/{{name}}.ipynb",
    output:
        f"{REPORTS}/{{site}}/{{name}}.html",
    log:
        f"{LOGS}/{{site}}/render-{{name}}.log",
    wildcard_constraints:
        name="|".join(SECTIONS),
    shell:
        "instore report render {input} --out {output} > {log} 2>&1"


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
        sections=expand(f"{RESULTS}/{{site}}/{{section}}.parquet", site=SITES, section=SECTIONS_RUN),
    output:
        f"{REPORTS}/compare.ipynb",
    log:
        f"{LOGS}/notebook-compare.log",
    params:
        parameters=[
            "-p", f"sites={json.dumps(SITES)}", "-p", f"results={Path(RESULTS).resolve()}",
        ],  # fmt: skip
    run:
        run_instore(
            ["instore", "report", "execute", input.notebook, "--out", output[0], *params.parameters],
            log[0],
        )


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
        sections=expand(f"{RESULTS}/{{site}}/{{section}}.parquet", site=SITES, section=SECTIONS_RUN),
    output:
        f"{REPORTS}/index.html",
    log:
        f"{LOGS}/index.log",
    params:
        sites=",".join(SITES),
        results=RESULTS,
        reports=REPORTS,
    shell:
        "instore report index --sites {params.sites} --results {params.results}"
        " --reports {params.reports} > {log} 2>&1"
