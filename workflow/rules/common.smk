# Validate the configuration once, before any job starts (instore.study.config.load_run):
# the --config keys against workflow/schemas/config.schema.json, the study file against
# study.schema.json and every site file against site.schema.json.
import json
import os
from pathlib import Path

from snakemake.exceptions import WorkflowError

from instore.errors import InstoreError
from instore.site.config import site_path
from instore.study import SECTIONS
from instore.run import load_run
from instore.study.runs import run_dir


try:
    RUN = load_run(config)
except InstoreError as err:
    raise WorkflowError(f"instore: {err}")

STUDY_FILE = RUN.options.study
STUDY = RUN.study
SITE_CONFIGS = RUN.sites
SITES = list(STUDY.sites)
SECTIONS_RUN = [s for s in SECTIONS if s in STUDY.sections]
CALIBRATE = RUN.options.calibrate
# A run label (run=NAME) keeps this run's results, reports and logs apart from every other
# run's, under runs/NAME (instore.study.runs); the generated files and traces are shared.
RUN_LABEL = RUN.options.run
RESULTS = str(run_dir(Path("results"), RUN_LABEL))
REPORTS = str(run_dir(Path("reports"), RUN_LABEL))
DATA = "data/files"
LOGS = str(run_dir(Path("logs"), RUN_LABEL))


def site_file(wildcards):
    """The site's YAML: an input of every rule of that site, so editing it redoes only it."""
    return str(site_path(wildcards.site))


def calibration_inputs(wildcards):
    """The site's calibration, when the study calibrates: reports show results against it."""
    return [f"{RESULTS}/{wildcards.site}/calibration.json"] if CALIBRATE else []


def upload_inputs(wildcards):
    """The site's upload marker, for sites that ask to be uploaded to (else nothing)."""
    return site_upload(wildcards.site)


def site_upload(name):
    from instore.site.config import load_site

    site = load_site(name)
    return [f"{RESULTS}/{name}/upload.json"] if site.upload and not site.emulated else []


def announce_real_sites():
    """Before anything is uploaded or measured, what the study will do to each real site."""
    from instore.sweep.dryrun import dry_run

    for name, site in SITE_CONFIGS.items():
        if not site.emulated:
            plan = dry_run(STUDY, site, Path(RESULTS), SECTIONS_RUN, CALIBRATE)
            print("\n".join(f"instore: {line}" for line in plan.lines()))


def study_summary_line():
    """The last line of a successful run: where the report is, and how many jobs failed."""
    from instore.sweep.store import failed_jobs

    tables = [Path(RESULTS) / site / f"{section}.parquet" for site in SITES for section in SECTIONS_RUN]
    failed = sum(failed_jobs(path) for path in tables if path.is_file())
    note = f" ({failed} failed jobs are listed in it)" if failed else ""
    return f"instore: study done; the report is {Path(REPORTS, 'index.html').resolve()}{note}"


def bring_sites_down():
    """On error, leave no emulated site of this study running (real sites have nothing)."""
    from instore.site import bring_down

    for line in bring_down(SITE_CONFIGS.values()):
        print(f"instore: {line}")


def repeat_source(wildcards):
    """The file a repeated set's file is merged from: its source set's, same layout and replica."""
    source, _ = STUDY.repeated_from(wildcards.fileset)
    return f"{DATA}/{source}-{wildcards.layout}-r{wildcards.replica}.root"


def layouts_of(fileset):
    """A file set's layouts in the generator's order: those its sections read."""
    from instore.vocabulary import LAYOUTS as KNOWN_LAYOUTS

    used = STUDY.layouts_of(fileset)
    return [lay for lay in KNOWN_LAYOUTS if lay in used]


def _dataset_of(site):
    from instore.site.config import load_site

    return load_site(site).dataset


def site_files(wildcards):
    """The generated files a site's rules need: none for a site that reads its own dataset."""
    return [] if _dataset_of(wildcards.site) else FILES + FILESET_FILES


def dataset_inputs(wildcards):
    """The site's dataset listing, for a site that reads its own dataset (else nothing)."""
    return [f"{RESULTS}/{wildcards.site}/dataset.json"] if _dataset_of(wildcards.site) else []


def dataset_list(wildcards):
    """The local list naming the dataset's files, where the site file gives one."""
    spec = _dataset_of(wildcards.site)
    return [str(spec.list)] if spec and spec.list else []


# The recorded analyses (traces.smk): each trace's spec, script and input file, and the
# traces a site's sweep replays.
from instore.filenames import replica_name, trace_dir, traces_dir
from instore.study.grid import axis_value


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
    """The traces a site's sweep replays: those of the points it runs (instore.sweep.plan),
    each under the site the run records it on."""
    from instore.sweep.plan import recording_site, traces_replayed

    names = traces_replayed(STUDY, SITE_CONFIGS[wildcards.site])
    return [str(trace_dir(Path(DATA), recording_site(STUDY, name, SITE_CONFIGS), name))
            for name in sorted(names)]


# Reports (reports.smk). The study file's `baseline:` (a results directory of an earlier run;
# "" when unset), or the run's `baseline=` (an earlier run's label or results directory): each site's report then gets a before-and-after page
# (notebooks/baseline.ipynb), linked from its overview.
BASELINE = str(STUDY.baseline or "")


def site_parameters(wildcards):
    """The papermill parameters of a site's notebooks."""
    return [
        "-p", f"site={wildcards.site}", "-p", f"results={Path(RESULTS).resolve()}",
        "-p", f"data={Path(DATA).resolve()}",
    ]  # fmt: skip


def baseline_page(wildcards):
    """The site's before-and-after page, when the study names a baseline (else nothing)."""
    return [f"{REPORTS}/{wildcards.site}/baseline.html"] if BASELINE else []


def baseline_inputs(wildcards):
    """The baseline's tables for the site (none where it has no results for the site: the page
    says so); a baseline that is not a results directory stops the run with the fix."""
    from instore.summary.results import site_files

    try:
        return [str(p) for p in site_files(Path(BASELINE), wildcards.site)]
    except InstoreError as err:
        raise WorkflowError(f"instore: {STUDY_FILE}: baseline: {err}")


def page_files(wildcards):
    """The generated files, for a section whose page draws from them (its module says so)."""
    from instore.summary.sections import REGISTRY

    return FILES if REGISTRY[wildcards.name].files else []
