"""Grid credentials, found the way grid jobs find them (``discovery``) and handed to every job
and client (``handoff``), never recorded. A refusal is said as its cause and fix by the storage
that refused (``instore.storage.diagnosis``), which sits above this package."""

from __future__ import annotations

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
    "WEAK_DIGESTS", "Credentials", "JobCredentials", "ProxyInfo", "auth_headers",
    "describe", "discover", "find_token",
    "for_job", "held", "host_env", "problem", "proxy_digest", "proxy_info", "require",
    "ssl_context", "weak_proxy_line",
]  # fmt: skip
