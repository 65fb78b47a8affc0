"""Grid credentials, found the way grid jobs find them (``discovery``), handed to every job
and client (``handoff``), never recorded; a refusal said as its cause and fix (``diagnosis``,
which may ask the storage). Callers import the names below from here.

The diagnosis names are loaded when first asked for: a module that needs only discovery or
hand-off (the payload's HTTP source) then never loads diagnosis, nor the storage it asks."""

from __future__ import annotations

import importlib
from typing import Any

from instore.credentials.discovery import (
    CERT_DIR_ENV,
    CREATE_PROXY,
    DEFAULT_CERT_DIR,
    GET_TOKEN,
    PROXY_ENV,
    RENEW_PROXY,
    SHA256_PROXY,
    TOKEN_ENV,
    TOKEN_FILE_ENV,
    VOMS_DIR_ENV,
    WEAK_DIGESTS,
    Credentials,
    ProxyInfo,
    describe,
    discover,
    find_token,
    held,
    problem,
    proxy_digest,
    proxy_info,
    require,
    weak_proxy_line,
)
from instore.credentials.handoff import (
    INSIDE,
    JobCredentials,
    auth_headers,
    for_job,
    host_env,
    ssl_context,
)
from instore.vocabulary import AUTH_KINDS  # what a site's auth: may say

__all__ = [
    "AUTH_KINDS", "CERT_DIR_ENV", "CREATE_PROXY", "DEFAULT_CERT_DIR", "GET_TOKEN", "INSIDE",
    "PROXY_ENV", "RENEW_PROXY", "SHA256_PROXY", "TOKEN_ENV", "TOKEN_FILE_ENV", "VOMS_DIR_ENV",
    "WEAK_DIGESTS", "Credentials", "JobCredentials", "ProxyInfo", "auth_headers", "auth_hint",
    "auth_line", "auth_refused", "describe", "diagnosed", "discover", "explain", "find_token",
    "for_job", "held", "host_env", "probe", "problem", "proxy_digest", "proxy_info", "require",
    "ssl_context", "weak_proxy_line",
]  # fmt: skip
_DIAGNOSIS = ("auth_hint", "auth_line", "auth_refused", "diagnosed", "explain", "probe")


def __getattr__(name: str) -> Any:
    if name in _DIAGNOSIS:
        return getattr(importlib.import_module("instore.credentials.diagnosis"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
