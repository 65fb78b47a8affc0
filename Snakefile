# The whole instore study: `snakemake --cores all` (or `make study`) runs every stage.
#
#   containers -> data -> sites (calibration) -> traces (recorded analyses) -> sweep -> reports
#
# Options (all optional), e.g. `--config profile=quick sites=[mysite]`:
#   study=PATH     the study file (default config/study.yaml)
#   profile=NAME   a profile of the study file (quick, full)
#   sites=[a,b]    measure these sites (config/sites/<name>.yaml) instead of the profile's
#   runtime=NAME   where jobs run: auto (default), podman, apptainer, none (the host venv)
#   calibrate=BOOL measure each site's physical limits first (default true)
#   run=LABEL      keep this run apart: results/runs/LABEL, reports/runs/LABEL (a new label
#                  measures everything again)
#   baseline=NAME  compare with an earlier run (its label or results directory) in the reports
# A misspelt key or a bad value stops the run at once (workflow/schemas/config.schema.json).

from snakemake.utils import min_version

min_version("9.27")  # the version envs/requirements.lock pins

include: "workflow/rules/common.smk"
include: "workflow/rules/containers.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/sites.smk"
include: "workflow/rules/traces.smk"
include: "workflow/rules/sweep.smk"
include: "workflow/rules/reports.smk"


rule all:
    input:
        f"{REPORTS}/index.html",
    default_target: True


onstart:
    announce_real_sites()


onsuccess:
    print(study_summary_line())


onerror:
    bring_sites_down()
