"""The state file of a running emulated site: what was created, written as it is created,
so ``instore site down`` can undo it after a crash of the process that built it."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from instore.site.emulated.names import STATE_DIR, SiteNames
from instore.site.emulated.system import alive, start_time


class SiteState:
    """A JSON record under /run/instore/sites/<site>.json, rewritten atomically on each change."""

    def __init__(self, names: SiteNames, data: dict[str, Any] | None = None) -> None:
        self.names = names
        self.data: dict[str, Any] = data if data is not None else {"site": names.site, "pids": {}}

    @classmethod
    def load(cls, names: SiteNames) -> SiteState | None:
        """The recorded state of a site, or None if there is no (readable) state file."""
        try:
            return cls(names, json.loads(names.state_file.read_text()))
        except (OSError, ValueError):
            return None

    def record(self, key: str, value: Any) -> None:
        self.data[key] = value
        self._write()

    def record_pid(self, role: str, pid: int) -> None:
        self.data.setdefault("pids", {})[role] = pid
        self._write()

    def pids(self) -> dict[str, int]:
        return dict(self.data.get("pids", {}))

    def start(self) -> None:
        """Record this process as the site's owner, the one that tears it down: its pid and
        start time, so a crashed owner is recognised even once its pid is reused."""
        pid = os.getpid()
        self.data.update(created=time.time(), owner_pid=pid, owner_started=start_time(pid))
        self._write()

    def release(self) -> None:
        """No process owns the site any more (`instore site up`): it stays up until
        `instore site down`, and bring-up refuses to replace it."""
        self.data.update(owner_pid=None, owner_started=None)
        self._write()

    def owner_gone(self) -> bool:
        """True when the process that brought the site up died without tearing it down (its
        pid gone, a zombie, or now another process). A released site has no owner to lose;
        a state file without the owner's start time trusts a live pid."""
        pid = self.data.get("owner_pid")
        if not isinstance(pid, int):
            return False
        if not alive(pid):
            return True
        started = self.data.get("owner_started")
        return started is not None and start_time(pid) != started

    def _write(self) -> None:
        path: Path = self.names.state_file
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=2, sort_keys=True))
        tmp.replace(path)


def recorded_sites() -> list[str]:
    """Sites with a state file, i.e. brought up and not (cleanly) taken down."""
    return sorted(p.stem for p in STATE_DIR.glob("*.json")) if STATE_DIR.is_dir() else []
