# The payload image: rebuilt only when its recipe, lock or package sources change (the
# container package hashes them); jobs then run in it. With runtime=none jobs use the host
# venv and there is no image stage.
from instore.container import image as payload_image
from instore.container.runtime import Runtime, select_runtime

RUNTIME = select_runtime(RUN.options.runtime).runtime
PROJECT = payload_image.find_project(Path(workflow.basedir))
IMAGE_RECORD = str(PROJECT.record_path)


# The image record, for rules whose jobs run in the image (none without a container). A
# rebuilt image reruns the sweeps, which then only rewrite their tables: points already
# measured are kept (the digest each was measured with is in its record).
IMAGE_INPUT = [IMAGE_RECORD] if RUNTIME is not Runtime.NONE else []


rule container_image:
    input:
        [str(p) for p in payload_image.context_files(PROJECT).values()],
    output:
        IMAGE_RECORD,
    log:
        f"{LOGS}/container.log",
    params:
        sif=RUNTIME is Runtime.APPTAINER,
    run:
        record = payload_image.build(PROJECT)
        if params.sif:
            record = payload_image.build_sif(PROJECT, record)
        Path(log[0]).write_text(json.dumps(record, indent=2) + "\n")
        # The image may have been current already (same content hash); mark it checked.
        os.utime(output[0])
