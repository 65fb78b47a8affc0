"""Which container runtime runs the payload, and the exact command line that runs it there.

Sites run analysis jobs in containers, so the payload runs the same way: under podman (the
project's own storage and containers.conf), Apptainer (the SIF built from the same image), or
``none`` (the host venv, for development). Only named environment variables reach the payload,
never the caller's whole environment, so a run does not depend on who started it.
"""

from __future__ import annotations

import logging
import os
import resource
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from instore.configfile import REPO_ROOT
from instore.container.hosts import add_host_args, own_address_entries
from instore.errors import InstoreError
from instore.vocabulary import RUNTIME_SETTINGS, RUNTIMES

log = logging.getLogger(__name__)


# The runtimes, as the vocabulary lists them: Runtime.PODMAN, Runtime.APPTAINER, Runtime.NONE.
Runtime = StrEnum("Runtime", {name.upper(): name for name in RUNTIMES})
SETTINGS: tuple[str, ...] = RUNTIME_SETTINGS
# Sites have Apptainer; this machine has podman; the host venv is the last resort.
AUTO_ORDER: tuple[Runtime, ...] = (Runtime.APPTAINER, Runtime.PODMAN)
# podman 4.3 lowers its own RLIMIT_NPROC to this before it starts runc; without
# CAP_SYS_RESOURCE runc cannot raise it back, so asking for more fails the container start.
PODMAN_NPROC_CEILING = 32768
NOFILE_CEILING = 1048576
# Inside the image HOME must be writable while the root file system is read-only.
CONTAINER_HOME = "/tmp"
# Apptainer hands NAME=value to the payload for APPTAINERENV_NAME=value in its own environment.
APPTAINER_ENV_PREFIX = "APPTAINERENV_"
# Where envs/build-apptainer.sh installs Apptainer in a checkout when none is on PATH.
APPTAINER_BUILD_BIN = Path("build") / "apptainer" / "bin"


@dataclass(frozen=True)
class Choice:
    """The runtime picked for a setting and why, so the choice can be reported."""

    runtime: Runtime
    reason: str


def built_apptainer() -> str | None:
    """The Apptainer envs/build-apptainer.sh built in this checkout (build/apptainer), if any:
    the checkout this package is installed from, where the script puts it."""
    found = REPO_ROOT / APPTAINER_BUILD_BIN / "apptainer"
    return str(found) if os.access(found, os.X_OK) else None


def select_runtime(
    setting: str,
    which: Callable[[str], str | None] = shutil.which,
    built: Callable[[], str | None] = built_apptainer,
) -> Choice:
    """Resolve ``podman | apptainer | none | auto``; ``auto`` tries apptainer, then podman.

    ``auto`` takes only an apptainer on PATH (a site's own); asking for apptainer by name also
    takes the one built in this checkout (``make apptainer``)."""
    if setting not in SETTINGS:
        raise InstoreError(
            f"unknown container runtime {setting!r}", f"use one of {', '.join(SETTINGS)}"
        )
    if setting != "auto":
        runtime = Runtime(setting)
        found = runtime is Runtime.NONE or which(runtime.value)
        if not found and runtime is Runtime.APPTAINER:
            found = built()
        if not found:
            fix = "make apptainer" if runtime is Runtime.APPTAINER else "make system"
            raise InstoreError(
                f"container runtime {runtime} is not installed",
                f"install {runtime} ({fix}) or choose --runtime auto",
            )
        return Choice(runtime, f"{runtime} requested")
    for runtime in AUTO_ORDER:
        found = which(runtime.value)
        if found:
            choice = Choice(runtime, f"auto chose {runtime} ({found})")
            break
    else:
        choice = Choice(Runtime.NONE, "auto chose none: neither apptainer nor podman is installed")
    log.info("container runtime: %s", choice.reason)
    return choice


@dataclass(frozen=True)
class PodmanStore:
    """The project's own podman storage and config, kept apart from the host's images."""

    root: Path
    runroot: Path
    tmpdir: Path
    conf: Path
    driver: str = ""  # the storage driver ("": podman's own choice; instore.container.project)

    def argv(self) -> list[str]:
        chosen = ["--storage-driver", self.driver] if self.driver else []
        return [
            "podman",
            "--root",
            str(self.root),
            "--runroot",
            str(self.runroot),
            "--tmpdir",
            str(self.tmpdir),
            *chosen,
        ]

    def env(self) -> dict[str, str]:
        """The environment for the podman process itself (not the container's)."""
        return {**_host_basics(), "CONTAINERS_CONF": str(self.conf)}


@dataclass(frozen=True)
class Target:
    """Where a payload runs: the runtime, the image it runs (reference or SIF), its digest."""

    runtime: Runtime
    image: str = ""
    image_digest: str | None = None
    store: PodmanStore | None = None


@dataclass(frozen=True)
class Bind:
    """A host path the payload sees at the same path (or at ``inside``); read-only unless it
    must write there.

    ``propagate`` is for FUSE mount dirs: mounts made under it later must show up inside.
    ``inside`` is for host paths that cannot appear at the same path in a container, such as a
    cgroup directory under the container's own read-only /sys/fs/cgroup.
    """

    path: Path
    writable: bool = False
    propagate: bool = False
    inside: str | None = None

    @property
    def target(self) -> str:
        return self.inside or str(self.path)


@dataclass(frozen=True)
class Access:
    """What a payload sees besides its image: host paths, named variables, /dev/fuse."""

    binds: Sequence[Bind] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    fuse: bool = False


# Nothing from the host but the image: the default for every run.
NO_ACCESS = Access()


@dataclass(frozen=True)
class Launch:
    """A complete command: ``subprocess.run(launch.argv, env=launch.env)``."""

    runtime: Runtime
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)


def ulimit_args() -> list[str]:
    """Host hard limits for the container: podman's own defaults exceed them and fail in runc."""
    nofile = _hard_limit(resource.RLIMIT_NOFILE, NOFILE_CEILING)
    nproc = _hard_limit(resource.RLIMIT_NPROC, PODMAN_NPROC_CEILING)
    return ["--ulimit", f"nofile={nofile}:{nofile}", "--ulimit", f"nproc={nproc}:{nproc}"]


def _hard_limit(which: int, ceiling: int) -> int:
    hard = resource.getrlimit(which)[1]
    return ceiling if hard == resource.RLIM_INFINITY else min(hard, ceiling)


def last_line(text: str) -> str:
    """The last non-blank line of a tool's output: usually the error that matters."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "(no output)"


ROOT_CRASH = "*** Break ***"  # how ROOT's signal handler starts its crash report


def failure_line(stderr: str) -> str:
    """The line of a failed payload's stderr that says why: ROOT's crash line ("*** Break ***
    segmentation violation") when ROOT caught a crash (its stack trace follows and ends in a
    banner), else the last line."""
    for line in stderr.splitlines():
        if ROOT_CRASH in line:
            return line.strip()
    return last_line(stderr)


def _host_basics() -> dict[str, str]:
    """The least a child process needs: a PATH to find programs and a HOME."""
    return {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": os.environ.get("HOME", "/root"),
    }


def launch(
    target: Target,
    payload_argv: Sequence[str],
    access: Access = NO_ACCESS,
    workdir: str = CONTAINER_HOME,
    *,
    name: str | None = None,
) -> Launch:
    """Turn a payload command into the full command for the target's runtime.

    ``name`` names a podman container so it can be removed by name (a long-lived warm
    payload, which also reads its stdin: podman is told to pass it through)."""
    if not payload_argv:
        raise InstoreError("empty payload command", "pass the command after `--`")
    if target.runtime is Runtime.PODMAN:
        argv = _podman_argv(target, payload_argv, access, workdir, name)
        return Launch(Runtime.PODMAN, argv, _require_store(target).env())
    if target.runtime is Runtime.APPTAINER:
        argv = _apptainer_argv(target, payload_argv, access, workdir)
        named = {f"{APPTAINER_ENV_PREFIX}{k}": v for k, v in _container_env(access).items()}
        return Launch(Runtime.APPTAINER, argv, {**apptainer_env(), **named})
    return Launch(Runtime.NONE, _host_argv(payload_argv), _host_env(access.env))


def _require_store(target: Target) -> PodmanStore:
    if target.store is None or not target.image:
        raise InstoreError(
            "podman target without an image or store",
            "build the image first: instore container build",
        )
    return target.store


def _container_env(access: Access) -> dict[str, str]:
    """Inside the image: a writable HOME, then exactly the variables the caller named."""
    return {"HOME": CONTAINER_HOME, **access.env}


def _podman_argv(
    target: Target, payload_argv: Sequence[str], access: Access, workdir: str, name: str | None
) -> list[str]:
    argv = [
        *_require_store(target).argv(),
        "run",
        "--rm",
        "--pull=never",
        "--network=host",
        "--read-only",
        "--log-driver=none",
        "--workdir",
        workdir,
        *ulimit_args(),
        # the worker's own addresses named locally: XRootD's login lookups never reach DNS
        *add_host_args(own_address_entries()),
    ]
    if name:
        argv += ["--name", name, "--interactive"]
    if access.fuse:
        argv += ["--device", "/dev/fuse"]
    for bind in access.binds:
        argv += ["--volume", _podman_volume(bind)]
    for name, value in _container_env(access).items():
        argv += ["--env", f"{name}={value}"]
    return [*argv, target.image, *payload_argv]


def _podman_volume(bind: Bind) -> str:
    options = ["rw" if bind.writable else "ro"]
    if bind.propagate:
        options.append("rslave")
    return f"{bind.path}:{bind.target}:{','.join(options)}"


def _apptainer_argv(
    target: Target, payload_argv: Sequence[str], access: Access, workdir: str
) -> list[str]:
    if not target.image:
        raise InstoreError(
            "apptainer target without a SIF", "build it: instore container build --sif"
        )
    # Apptainer shares the host network, /etc/hosts and /dev (so /dev/fuse) by default; the SIF
    # is read-only. The named variables go in its own environment (APPTAINERENV_NAME), which
    # --cleanenv keeps: its --env splits values at commas, and argv is visible to every user.
    # --no-privs: the payload needs no capability, and as root apptainer asks for all of them,
    # which fails where root lacks one (this VM's: "Requesting capability set 0x1ffffffffff
    # while permitted capability set is 0x1fffeffffff"); a user who is not root has none.
    argv = ["apptainer", "exec", "--cleanenv", "--no-home", "--no-privs", "--pwd", workdir]
    for bind in access.binds:
        argv += ["--bind", f"{bind.path}:{bind.target}:{'rw' if bind.writable else 'ro'}"]
    return [*argv, target.image, *payload_argv]


def apptainer_env() -> dict[str, str]:
    """The environment for the apptainer process itself: the host basics, with the checkout's
    own build first on PATH when no apptainer is on it (its argv stays ``apptainer ...``)."""
    basics = _host_basics()
    built = None if shutil.which("apptainer", path=basics["PATH"]) else built_apptainer()
    if built:
        basics["PATH"] = f"{Path(built).parent}{os.pathsep}{basics['PATH']}"
    return basics


def _host_argv(payload_argv: Sequence[str]) -> list[str]:
    """Without a container, ``instore`` means this venv's entry point, not whatever is on PATH."""
    first, *rest = payload_argv
    if first == "instore":
        first = str(Path(sys.executable).parent / "instore")
    return [first, *rest]


def _host_env(env: Mapping[str, str]) -> dict[str, str]:
    venv_bin = str(Path(sys.executable).parent)
    basics = _host_basics()
    return {**basics, "PATH": f"{venv_bin}{os.pathsep}{basics['PATH']}", **env}
