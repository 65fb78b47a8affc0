"""The payload container: build the image, pick a runtime, run payload jobs inside it.

What the sweep calls::

    choice = select_runtime("auto")                     # podman | apptainer | none | auto
    target = target_for(choice.runtime)                 # image + digest, refuses a stale image
    access = Access(binds=(Bind(Path("data/files")),), env={"XRD_...": "..."})
    startup = measure_startup(target, access, runs=5)          # once per sweep point
    record = run_payload(target, ["instore", "read", url, ...], access,
                         startup_s=startup.median_s)
    # record: the payload's own fields + runtime, image_digest, container_startup_s,
    # outer_wall_s, exit_status

``launch(target, argv, access)`` gives the full command without running it (e.g. for srun).
"""

from instore.container.image import build, target_for
from instore.container.measure import Startup, measure_startup, run_payload
from instore.container.project import find_project
from instore.container.runtime import Access, Bind, Launch, Runtime, Target, launch, select_runtime

__all__ = [
    "Access",
    "Bind",
    "Launch",
    "Runtime",
    "Startup",
    "Target",
    "build",
    "find_project",
    "launch",
    "measure_startup",
    "run_payload",
    "select_runtime",
    "target_for",
]
