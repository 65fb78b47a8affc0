"""The pinned environments agree: each lock, its direct dependencies, and the conda file; the
study's pins install on the distribution's own Python; the Debian package groups are sound."""

from __future__ import annotations

import importlib.metadata as md
import re
import subprocess
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

ENVS = Path(__file__).resolve().parents[2] / "envs"
# PyPI's ROOT wheel has its own version scheme; conda-forge uses ROOT's release number.
PYPI_TO_CONDA_VERSION = {("root", "0.1a12"): "6.40.0"}
# Debian 12's own python3: a user who is not root builds the venv with it.
DISTRIBUTION_PYTHON = "3.11.2"
STUDY_SETS = ("requirements", "requirements-emulated")  # what conda.yaml names
SETS = ("requirements-bootstrap", *STUDY_SETS, "requirements-dev")
DOCS_AND_LINT = {"mkdocs", "mkdocs-material", "pymdown-extensions", "ruff", "pytest"}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _lock(name: str = "requirements") -> dict[str, str]:
    pins = {}
    for line in (ENVS / f"{name}.lock").read_text().splitlines():
        if line and not line.startswith("#"):
            pkg, version = line.split("==")
            pins[_norm(pkg)] = version.strip()
    return pins


def _requirements(name: str = "requirements") -> list[Requirement]:
    lines = (ENVS / f"{name}.in").read_text().splitlines()
    return [Requirement(ln.split("#")[0].strip()) for ln in lines if ln.split("#")[0].strip()]


def _direct(name: str = "requirements") -> set[str]:
    return {_norm(req.name) for req in _requirements(name)}


def _conda() -> dict[str, str]:
    """conda-forge packages (name=version) and the pip section (name==version) together."""
    deps = yaml.safe_load((ENVS / "conda.yaml").read_text())["dependencies"]
    pinned = {
        _norm(d.split("=")[0]): d.split("=", 1)[1]
        for d in deps
        if isinstance(d, str) and not d.startswith("python=")
    }
    for section in (d for d in deps if isinstance(d, dict)):
        pinned |= {
            _norm(p.split("==")[0]): p.split("==")[1].split()[0] for p in section.get("pip", [])
        }
    return pinned


@pytest.mark.parametrize("name", SETS)
def test_every_direct_dependency_is_pinned_in_its_lock(name: str) -> None:
    assert _direct(name) <= set(_lock(name)), _direct(name) - set(_lock(name))


@pytest.mark.parametrize("name", SETS)
def test_every_pin_is_within_its_direct_dependencys_bounds(name: str) -> None:
    pins = _lock(name)
    outside = [
        f"{req} (lock: {pins[_norm(req.name)]})"
        for req in _requirements(name)
        if req.specifier and pins[_norm(req.name)] not in req.specifier
    ]
    assert not outside, outside


def test_no_package_is_pinned_in_two_locks() -> None:
    seen: dict[str, str] = {}
    for name in SETS:
        for pkg in _lock(name):
            assert pkg not in seen, f"{pkg} is pinned in {seen[pkg]}.lock and {name}.lock"
            seen[pkg] = name


def test_the_study_lock_holds_no_docs_or_lint_tool() -> None:
    """A study needs none of them (pymdown-extensions 13 wanted Python >= 3.11.5)."""
    assert not DOCS_AND_LINT & set(_lock()), DOCS_AND_LINT & set(_lock())
    assert set(_lock("requirements-dev")) >= DOCS_AND_LINT


def test_conda_names_the_same_packages_as_the_study() -> None:
    assert set(_conda()) == set().union(*(_direct(n) for n in STUDY_SETS))


def test_conda_versions_match_the_locks() -> None:
    lock = {k: v for n in STUDY_SETS for k, v in _lock(n).items()}
    for name, version in _conda().items():
        assert version == PYPI_TO_CONDA_VERSION.get((name, lock[name]), lock[name]), name


@pytest.mark.parametrize("name", SETS)
def test_every_pin_installs_on_debian_12_python(name: str) -> None:
    """Each pin's Requires-Python, from the installed wheel's METADATA, admits Debian 12's
    python3 3.11.2 (soupsieve 4.1.2 and pymdown-extensions 13.1.2 did not: >= 3.11.5): the
    study's, and the tests' and docs' tools too, so `make test` runs there as well. The venv
    must hold the lock's versions, or the metadata read is another version's."""
    refused, stale = [], []
    for pkg, version in _lock(name).items():
        try:
            dist = md.distribution(pkg)
        except md.PackageNotFoundError:
            stale.append(f"{pkg} (not installed)")
            continue
        if dist.version != version:
            stale.append(f"{pkg} {dist.version} (lock: {version})")
            continue
        wanted = dist.metadata.get("Requires-Python")
        if wanted and not SpecifierSet(wanted).contains(DISTRIBUTION_PYTHON):
            refused.append(f"{pkg}=={version} requires Python {wanted}")
    assert not stale, f"the venv is not the lock's (make venv): {stale}"
    assert not refused, refused


def _groups() -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    current = None
    for line in (ENVS / "apt-packages.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line.startswith("["):
            current = groups.setdefault(line.strip("[]"), [])
        elif line:
            assert current is not None, f"{line} is in no group"
            current.append(line)
    return groups


def test_a_real_site_needs_no_emulation_package() -> None:
    groups = _groups()
    assert set(groups) == {"site", "emulated", "test", "apptainer"}
    assert {"libseccomp-dev", "squashfs-tools"} <= set(groups["apptainer"])
    assert {"xrootd-client", "voms-clients", "python3-venv"} <= set(groups["site"])
    emulation_only = {"xrootd-server", "slurm-wlm", "chromium", "mmdebstrap", "xfsprogs",
                      "podman", "libnetfilter-queue-dev"}  # fmt: skip
    assert not emulation_only & set(groups["site"])
    assert emulation_only <= set(groups["emulated"]) | set(groups["test"])


def _setup_system(tmp_path: Path, installed: set[str], *groups: str) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """envs/setup-system.sh as a user who is not root, on a Debian whose dpkg knows
    ``installed``: fake ``id`` and ``dpkg-query`` come first on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "id").write_text("#!/bin/sh\necho 1000\n")
    (bin_dir / "dpkg-query").write_text(
        "#!/bin/sh\nfor p in " + " ".join(sorted(installed) or ["-"]) + "; do\n"
        '  [ "$p" = "$3" ] && { printf "install ok installed"; exit 0; }\ndone\nexit 1\n'
    )
    for tool in ("id", "dpkg-query"):
        (bin_dir / tool).chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "X509_CERT_DIR": str(tmp_path)}
    return subprocess.run(["bash", str(ENVS / "setup-system.sh"), *groups], env=env,
                          capture_output=True, text=True, check=False)  # fmt: skip


def test_setup_as_a_user_names_every_missing_package_in_one_line(tmp_path: Path) -> None:
    groups = _groups()
    site = set(groups["site"])
    proc = _setup_system(tmp_path, site - {"voms-clients", "fio"}, "site", "emulated")
    assert proc.returncode == 1
    (line,) = proc.stderr.strip().splitlines()
    missing = ["fio", "voms-clients", *groups["emulated"]]
    named = line.split("): ", 1)[1].split(" -- ")[0].split()
    assert sorted(named) == sorted(missing), line
    assert line.endswith(f"ask an admin to run: apt-get install {' '.join(named)}")


def test_setup_as_a_user_with_the_site_packages_is_no_error(tmp_path: Path) -> None:
    """A real site's study asks for the site group only: the emulation packages missing is fine."""
    proc = _setup_system(tmp_path, set(_groups()["site"]), "site")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


def test_setup_without_a_ca_directory_says_where_the_igtf_bundle_is(tmp_path: Path) -> None:
    proc = _setup_system(tmp_path, set(_groups()["site"]), "site")
    assert proc.returncode == 0
    env_less = subprocess.run(
        ["bash", "-c", f"X509_CERT_DIR={tmp_path}/none bash {ENVS}/setup-system.sh site"],
        env={"PATH": f"{tmp_path}/bin:/usr/bin:/bin"}, capture_output=True, text=True,
        check=False,
    )  # fmt: skip
    assert env_less.returncode == 0
    assert "IGTF CA bundle, which is not a Debian package" in env_less.stderr
    assert "https://repository.egi.eu/sw/production/cas/1/current/" in env_less.stderr
