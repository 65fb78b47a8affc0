# Real analyses (analyses/: an RDataFrame, an uproot and a coffea one), each recorded once with
# XRootD's recorder (`instore record`) reading replica 0 of its file set on a fast site (lan-ssd:
# the recorded gaps between reads are then the job's own CPU), and replayed by the `replay`
# section on its sites. A run of real sites alone brings up no emulated site (that needs root):
# it records each trace on the first of its sites that replays it, over xrootd, after the
# study's files are uploaded there (recording_site; the gaps a closed-loop replay reproduces are
# the job's CPU wherever it ran). Each job runs once unrecorded first (--warm-up 1): the trace then has
# the job's think times with its software warm, as on a worker node that ran it before. A
# recording brings its site up, so it takes every core: it never overlaps a sweep. Each trace
# lives beside the files, where every job sees it, under the site it was recorded on
# (traces/<site>/<name>): a study of a real site never records over the traces the emulated
# sites' replay points were measured with.

rule record_trace:
    input:
        analysis=trace_analysis,
        file=trace_input_file,
        site=lambda w: str(site_path(w.recorded_on)),
        # the site's link and disk as calibrated: a recording never overlaps a calibration
        # (a labelled run shares the traces, recorded by the run that made them)
        calibration=lambda w: [f"{RESULTS}/{w.recorded_on}/calibration.json"] if CALIBRATE and not RUN_LABEL else [],
        upload=lambda w: site_upload(w.recorded_on),
    output:
        directory(f"{traces_dir(Path(DATA))}/{{recorded_on}}/{{trace}}"),
    log:
        f"{LOGS}/record-{{recorded_on}}-{{trace}}.log",
    wildcard_constraints:
        recorded_on="[^/]+",
        trace="|".join(STUDY.traces) or "(?!)",
    params:
        site=lambda w: w.recorded_on,
        tree=lambda w: STUDY.tree_of(axis_value("fileset", trace_spec(w).fileset)),
        results=RESULTS,
    threads: workflow.cores
    conda:
        "../../envs/conda.yaml"
    shell:
        "instore record --warm-up 1 --site {params.site} --protocol xrootd --file {input.file:q}"
        " --results {params.results:q} --out {output:q}"
        " -- python {input.analysis:q} --tree {params.tree:q}"
        " > {log} 2>&1 || {{ tail -n 1 {log} >&2; false; }}"
