# The generated ROOT files: every layout the study's grids use (TTree and RNTuple ones),
# `replicas` of each.
from dataclasses import asdict

from instore.generate.layouts import LAYOUTS as KNOWN_LAYOUTS
from instore.study.files import replica_names


# Ordered is always made: the sections that do not vary the layout read it.
USED_LAYOUTS = {"ordered"} | {
    lay for grid in STUDY.sections.values() for lay in grid.get("layout", ["ordered"])
}
LAYOUTS = [lay for lay in KNOWN_LAYOUTS if lay in USED_LAYOUTS]
FILES = [f"{DATA}/{name}" for name in replica_names(LAYOUTS, STUDY.files.replicas)]


rule generate_files:
    output:
        FILES,
    log:
        f"{LOGS}/generate.log",
    params:
        spec=asdict(STUDY.files),
        layouts=",".join(LAYOUTS),
        out=lambda w, output: Path(output[0]).parent,
    conda:
        "../../envs/conda.yaml"
    shell:
        "instore generate --size-mb {params.spec[size_mb]} --layouts {params.layouts}"
        " --replicas {params.spec[replicas]} --seed {params.spec[seed]}"
        " --cluster-mb {params.spec[cluster_mb]} --out {params.out:q} > {log} 2>&1"
