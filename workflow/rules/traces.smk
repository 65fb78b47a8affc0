# Real analyses (analyses/: an RDataFrame and an uproot one), each recorded once with XRootD's
# recorder (`instore record`) reading replica 0 of its file set on a fast site (lan-ssd: the
# recorded gaps between reads are then the job's own CPU), and replayed by the `replay`
# section on every site. A recording brings its site up, so it takes every core: it never
# overlaps a sweep. Each trace lives beside the files, where every job sees it.
from instore.study.files import replica_name
from instore.study.grid import axis_value
from instore.sweep.jobs import traces_dir


def trace_spec(wildcards):
    return STUDY.trace(wildcards.trace)


def trace_analysis(wildcards):
    """The analysis script: a path relative to the project, or absolute."""
    return str(Path(workflow.basedir) / trace_spec(wildcards).analysis)


def trace_input_file(wildcards):
    spec = trace_spec(wildcards)
    fileset = "" if spec.fileset == DEFAULT_FILESET else spec.fileset
    return f"{DATA}/{replica_name(spec.layout, 0, fileset)}"


def trace_inputs(wildcards):
    """The traces a site's sweep replays: every trace its sections name, where they run."""
    from instore.study.grid import section_sites

    names = set()
    for section, grid in STUDY.sections.items():
        sites = section_sites(STUDY, section)
        if sites is None or wildcards.site in sites:
            names.update(grid.get("trace", []))
    return [f"{traces_dir(Path(DATA))}/{name}" for name in sorted(names)]


rule record_trace:
    input:
        analysis=trace_analysis,
        file=trace_input_file,
        site=lambda w: str(site_path(trace_spec(w).site)),
        # the site's link and disk as calibrated: a recording never overlaps a calibration
        calibration=lambda w: [f"{RESULTS}/{trace_spec(w).site}/calibration.json"] if CALIBRATE else [],
    output:
        directory(f"{traces_dir(Path(DATA))}/{{trace}}"),
    log:
        f"{LOGS}/record-{{trace}}.log",
    params:
        site=lambda w: trace_spec(w).site,
        tree=lambda w: STUDY.tree_of(axis_value("fileset", trace_spec(w).fileset)),
        results=RESULTS,
    threads: workflow.cores
    conda:
        "../../envs/conda.yaml"
    shell:
        "instore record --site {params.site} --protocol xrootd --file {input.file:q}"
        " --results {params.results:q} --out {output:q}"
        " -- python {input.analysis:q} --tree {params.tree:q}"
        " > {log} 2>&1 || {{ tail -n 1 {log} >&2; false; }}"
