# The generated ROOT files: every layout the study's grids use (TTree and RNTuple ones),
# `replicas` of each, for the profile's own `files` and for each named file set (`filesets:`,
# files drawn like a real file's template).
from dataclasses import asdict

from instore.vocabulary import LAYOUTS as KNOWN_LAYOUTS
from instore.filenames import DEFAULT_FILESET
from instore.filenames import replica_names


LAYOUTS = layouts_of(DEFAULT_FILESET)
FILES = [f"{DATA}/{name}" for name in replica_names(LAYOUTS, STUDY.files.replicas)]
FILESET_FILES = [
    f"{DATA}/{name}"
    for fileset, spec in STUDY.filesets.items()
    for name in replica_names(layouts_of(fileset), spec.replicas, fileset)
]


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


# One job per file of a named set: a 1 GB file takes minutes to write, and two cores write two.
rule generate_fileset_file:
    output:
        f"{DATA}/{{fileset}}-{{layout}}-r{{replica}}.root",
    wildcard_constraints:
        fileset="|".join(STUDY.filesets) or "(?!)",
        layout="|".join(KNOWN_LAYOUTS),
        replica=r"\d+",
    log:
        f"{LOGS}/generate-{{fileset}}-{{layout}}-r{{replica}}.log",
    params:
        spec=lambda w: asdict(STUDY.fileset(w.fileset)),
        out=lambda w, output: Path(output[0]).parent,
    conda:
        "../../envs/conda.yaml"
    shell:
        "instore generate --like {params.spec[like]:q} --fileset {wildcards.fileset}"
        " --layouts {wildcards.layout} --replica {wildcards.replica}"
        " --size-mb {params.spec[size_mb]} --seed {params.spec[seed]}"
        " --cluster-mb {params.spec[cluster_mb]} --out {params.out:q} > {log} 2>&1"


# A set whose replicas are identical (`identical: true`): replica 0 is generated, the others
# are byte copies of it, so concurrent replays of one trace each read a file of their own.
IDENTICAL_SETS = [name for name, spec in STUDY.filesets.items() if spec.identical]

ruleorder: copy_fileset_replica > generate_fileset_file


rule copy_fileset_replica:
    input:
        f"{DATA}/{{fileset}}-{{layout}}-r0.root",
    output:
        f"{DATA}/{{fileset}}-{{layout}}-r{{replica}}.root",
    wildcard_constraints:
        fileset="|".join(IDENTICAL_SETS) or "(?!)",
        layout="|".join(KNOWN_LAYOUTS),
        replica=r"[1-9]\d*",
    log:
        f"{LOGS}/copy-{{fileset}}-{{layout}}-r{{replica}}.log",
    conda:
        "../../envs/conda.yaml"
    shell:
        "cp {input:q} {output:q} > {log} 2>&1"


# A set that repeats another (`repeats:`): each file is the source set's file of the same layout
# and replica, merged with itself (as hadd, no recompression). The 1 GB set is made from the
# 256 MB one in seconds: drawn, its four layouts cost 846 s of CPU (2026-11-27).
REPEATED_SETS = [name for name, spec in STUDY.filesets.items() if spec.repeats]

ruleorder: repeat_fileset_file > generate_fileset_file


rule repeat_fileset_file:
    input:
        repeat_source,
    output:
        f"{DATA}/{{fileset}}-{{layout}}-r{{replica}}.root",
    wildcard_constraints:
        fileset="|".join(REPEATED_SETS) or "(?!)",
        layout="|".join(KNOWN_LAYOUTS),
        replica=r"\d+",
    log:
        f"{LOGS}/repeat-{{fileset}}-{{layout}}-r{{replica}}.log",
    params:
        copies=lambda w: STUDY.repeated_from(w.fileset)[1],
        out=lambda w, output: Path(output[0]).parent,
    conda:
        "../../envs/conda.yaml"
    shell:
        "instore generate --repeat {input:q} --copies {params.copies} --fileset {wildcards.fileset}"
        " --out {params.out:q} > {log} 2>&1"
