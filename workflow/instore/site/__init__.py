"""Storage sites: emulated ones the project brings up itself, and real ones it only checks.

``load_site`` reads a site file; ``open_site`` opens it for a sweep and hands back a
``LiveSite``, which callers ask everything (URLs, preflight, calibration targets, job
environment, conditions) without checking its kind. ``bring_down`` and ``teardown_all``
remove what a failed or crashed run left behind.

Layout: ``config`` (site files), ``live`` (the LiveSite interface), ``real`` (a real site:
its endpoints), ``dataset`` (a real site's own files, listed and described), ``emulated/`` (an emulated site and the Linux plumbing it is built from),
``endpoints`` (does an endpoint answer), ``session`` (opening and closing), ``calibrate``
(measuring a site's limits) and ``command`` (`instore site ...`).
"""

from instore.site.config import SiteConfig, load_site
from instore.site.emulated import teardown_all
from instore.site.live import LiveSite
from instore.site.real import PreflightError
from instore.site.session import bring_down, open_site

__all__ = [
    "LiveSite",
    "PreflightError",
    "SiteConfig",
    "bring_down",
    "load_site",
    "open_site",
    "teardown_all",
]
