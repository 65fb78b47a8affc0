"""``python -m instore.needs KEY=VALUE...``: which Debian package groups beyond a real site's
(envs/apt-packages.txt) a run of ``make study`` with these ``--config`` items needs: ``emulated``
when the study names an emulated site, nothing when it studies real sites only. ``make study``
then checks (as root: installs) them and the emulated sites' Python extras. A configuration
Snakemake would refuse is left for it to refuse, in its own words."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from instore.errors import InstoreError

EMULATED = "emulated"


def needs(items: Sequence[str]) -> list[str]:
    """The package groups the run's sites need beyond ``site``."""
    from snakemake.cli import parse_config  # the parser `snakemake --config` uses

    from instore.run import load_run

    run = load_run(parse_config(list(items)))
    return [EMULATED] if any(site.emulated for site in run.sites.values()) else []


def main(argv: Sequence[str] | None = None) -> int:
    try:
        groups = needs(sys.argv[1:] if argv is None else argv)
    except (InstoreError, ValueError):
        return 0  # Snakemake validates the same configuration next and says what is wrong
    print(" ".join(groups))
    return 0


if __name__ == "__main__":
    sys.exit(main())
