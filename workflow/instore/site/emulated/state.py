"""The state file of a running emulated site: what was created, written as it is created,
so ``instore site down`` can undo it after a crash of the process that built it."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from instore.site.names import STATE_DIR, SiteNames


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
        self.data.update(created=time.time(), owner_pid=os.getpid())
        self._write()

    def _write(self) -> None:
        path: Path = self.names.state_file
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=2, sort_keys=True))
        tmp.replace(path)

    def remove(self) -> None:
        self.names.state_file.unlink(missing_ok=True)


def recorded_sites() -> list[str]:
    """Sites with a state file, i.e. brought up and not (cleanly) taken down."""
    return sorted(p.stem for p in STATE_DIR.glob("*.json")) if STATE_DIR.is_dir() else []
