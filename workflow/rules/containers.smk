# The payload image: rebuilt only when what goes into it changes (recipe, lock, package
# sources; the container package hashes them, not the README, notebooks or tests); jobs then
# run in it. With runtime=none jobs use the host venv and there is no image stage.
from instore.container.hashing import context_files, current_hash
from instore.container.project import find_project
from instore.container.runtime import Runtime, select_runtime

RUNTIME = select_runtime(RUN.options.runtime).runtime
PROJECT = find_project(Path(workflow.basedir))
IMAGE_RECORD = str(PROJECT.record_path)


# The image record, for rules whose jobs run in the image (none without a container). A
# rebuilt image reruns the sweeps, which then only rewrite their tables: points already
# measured are kept (the digest each was measured with is in its record).
IMAGE_INPUT = [IMAGE_RECORD] if RUNTIME is not Runtime.NONE else []


rule container_image:
    input:
        [str(p) for p in context_files(PROJECT).values()],
    output:
        IMAGE_RECORD,
    log:
        f"{LOGS}/container.log",
    params:
        # The packaging part of pyproject.toml and the base are hashed, not inputs: a change
        # to them changes this value, and Snakemake reruns the rule for it.
        content=current_hash(PROJECT),
        sif="--sif" if RUNTIME is Runtime.APPTAINER else "",
        project=lambda w, output: Path(output[0]).parents[2],  # the checkout
    conda:
        "../../envs/conda.yaml"
    shell:
        "INSTORE_PROJECT_DIR={params.project:q} instore container build {params.sif}"
        " > {log} 2>&1 || {{ tail -n 1 {log} >&2; false; }}"
