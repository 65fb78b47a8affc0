"""Storage sites: emulated ones the project brings up itself, and real ones it only checks.

``load_site`` reads a site file; ``open_site`` opens it for a sweep; ``teardown_all`` removes
whatever an earlier crashed run left behind.
"""

from instore.site.config import SiteConfig, load_site
from instore.site.emulated import teardown_all
from instore.site.live import LiveSite
from instore.site.real import PreflightError
from instore.site.session import open_site

__all__ = ["LiveSite", "PreflightError", "SiteConfig", "load_site", "open_site", "teardown_all"]
