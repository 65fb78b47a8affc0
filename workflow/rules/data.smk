# The generated ROOT files: every layout the study's grids use, `replicas` of each.
from dataclasses import asdict

from instore.study.files import replica_names


def _layouts():
    used = {lay for grid in STUDY.sections.values() for lay in grid.get("layout", ["ordered"])}
    return [lay for lay in ("unordered", "by-branch", "ordered") if lay in used | {"ordered"}]


LAYOUTS = _layouts()
FILES = [f"{DATA}/{name}" for name in replica_names(LAYOUTS, STUDY.files.replicas)]


rule generate_files:
    output:
        FILES,
    log:
        f"{LOGS}/generate.log",
    params:
        spec=asdict(STUDY.files),
        layouts=",".join(LAYOUTS),
        out=DATA,
    shell:
        "instore generate --size-mb {params.spec[size_mb]} --layouts {params.layouts}"
        " --replicas {params.spec[replicas]} --seed {params.spec[seed]}"
        " --cluster-mb {params.spec[cluster_mb]} --out {params.out} > {log} 2>&1"
