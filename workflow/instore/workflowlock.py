"""Clear the Snakemake lock a killed study left, when no Snakemake runs in the directory.

Snakemake locks a working directory with files under ``.snakemake/locks/`` and removes them
when it ends. Killed (SIGKILL, a lost session), it cannot: the next run stops on "Directory
cannot be locked" although nothing holds the directory. `make study` runs this first, so a
killed study resumes with one command. A Snakemake that still runs there keeps its lock.

Usage: ``python -m instore.workflowlock [--directory DIR]``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

LOCK_DIR = Path(".snakemake") / "locks"
PROC = Path("/proc")


def lock_files(directory: Path) -> list[Path]:
    """Snakemake's lock files in ``directory`` (``<n>.input.lock``, ``<n>.output.lock``)."""
    locks = Path(directory) / LOCK_DIR
    return sorted(p for p in locks.glob("*.lock") if p.is_file()) if locks.is_dir() else []


def is_snakemake(argv: Sequence[str]) -> bool:
    """Whether a command line runs Snakemake: its entry point, directly or through Python as a
    script or ``-m snakemake`` (how Snakemake starts its own job processes). A shell whose
    ``-c`` string merely mentions snakemake is not one."""
    if not argv:
        return False
    if Path(argv[0]).name == "snakemake":
        return True
    if not Path(argv[0]).name.startswith("python"):
        return False
    args = iter(argv[1:])
    for arg in args:
        if arg == "-m":
            module = next(args, "")
            return module == "snakemake" or module.startswith("snakemake.")
        if not arg.startswith("-"):
            return Path(arg).name == "snakemake"
    return False


def _argv(pid: str) -> list[str]:
    try:
        raw = (PROC / pid / "cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def _runs_in(pid: str, directory: Path) -> bool:
    """Whether the process works in ``directory`` (Snakemake changes into its working
    directory). A cwd we may not read counts as yes: better a kept lock than a broken one."""
    try:
        return Path(os.readlink(PROC / pid / "cwd")) == directory
    except FileNotFoundError:  # the process ended meanwhile
        return False
    except OSError:
        return True


def snakemake_pids(directory: Path) -> list[int]:
    """Pids of the Snakemake processes working in ``directory``."""
    here, me = Path(directory).resolve(), str(os.getpid())
    pids = [p.name for p in PROC.iterdir() if p.name.isdigit() and p.name != me]
    return sorted(int(pid) for pid in pids if is_snakemake(_argv(pid)) and _runs_in(pid, here))


def clear_stale_lock(directory: Path) -> str | None:
    """Remove a lock no running Snakemake holds. Returns the line to tell the user (None: there
    was no lock)."""
    locks = lock_files(directory)
    if not locks:
        return None
    running = snakemake_pids(directory)
    if running:
        pids = ", ".join(map(str, running))
        return f"Snakemake runs in {Path(directory).resolve()} (pid {pids}): its lock stays"
    for lock in locks:
        lock.unlink(missing_ok=True)
    return (
        f"cleared a stale Snakemake lock in {Path(directory).resolve()} "
        f"({len(locks)} lock file(s); no Snakemake runs there: a killed run left it)"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m instore.workflowlock", description=__doc__)
    parser.add_argument("--directory", default=".", help="Snakemake's working directory")
    args = parser.parse_args(argv)
    line = clear_stale_lock(Path(args.directory))
    if line:
        print(f"instore: {line}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
