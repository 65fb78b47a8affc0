"""What a job forked from the warm payload does before it runs: a process group of its own,
death with its parent, its own stdin, stdout and stderr, the request's environment, and (a
measured read) its own copy of the parent's pages; then its ``instore`` command line."""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from instore.payload.pages import Pages, make_private
from instore.payload.specs import READ_COMMAND

PR_SET_PDEATHSIG = 1
PRIVATE_COMMANDS = (READ_COMMAND,)  # the measured jobs whose pages are made private first
# "1" in a job's env leaves the parent's pages shared: only to measure what that costs
# (bench/fork_bias.py); a study never sets it.
SHARED_PAGES_ENV = "INSTORE_FORK_SHARED_PAGES"
Entry = Callable[[list[str]], int]  # the command line's main: argv without the program name


def takes_spare(request: dict[str, Any]) -> bool:
    """A measured read whose pages are made private: a spare has done that already (the bench's
    shared-pages jobs and other commands fork as they come)."""
    argv, env = list(request.get("argv") or []), {**os.environ, **(request.get("env") or {})}
    return argv[1:2] != [] and argv[1] in PRIVATE_COMMANDS and env.get(SHARED_PAGES_ENV) != "1"


def _die_with_parent() -> None:
    """A job dies with the warm parent: nothing of a stopped sweep keeps reading."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _redirect(fd: int, path: str | Path, flags: int) -> None:
    new = os.open(path, flags, 0o600)
    os.dup2(new, fd)
    os.close(new)


def run_child(
    request: dict[str, Any],
    out: Path,
    err: Path,
    private_fds: list[int],
    entry: Entry,
    pages: Sequence[Pages] = (),
) -> None:
    """In the forked child: become a job of its own (with its own copy of the parent's pages
    for a measured read) and run the ``instore`` command through ``entry`` (the command line's
    entry point that started this payload). Never returns."""
    code = 1
    try:
        os.setpgid(0, 0)  # a timeout or crash kills this job's group only
        _die_with_parent()
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD, signal.SIGPIPE):
            signal.signal(sig, signal.SIG_DFL)
        for fd in private_fds:
            os.close(fd)
        _redirect(0, os.devnull, os.O_RDONLY)
        _redirect(1, out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        _redirect(2, err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.environ.update(request.get("env") or {})
        argv = list(request["argv"])
        if argv[:1] != ["instore"]:
            raise ValueError(f"the warm payload runs instore commands only, not {argv[:1]}")
        if argv[1:2] and argv[1] in PRIVATE_COMMANDS and os.environ.get(SHARED_PAGES_ENV) != "1":
            make_private(pages)
        code = entry(argv[1:])
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
