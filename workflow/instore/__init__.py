"""instore: a study in a box of how grid storage serves ROOT analysis I/O."""

# The system OpenSSL is loaded first, on purpose. pyarrow's libparquet (pandas imports it)
# carries a static OpenSSL and exports its symbols without versions; loaded before the system
# libssl.so.3, it takes the place of the system's for Davix, which XrdClHttp loads into the
# root engine, and the first HTTPS request with a client certificate (an X.509 proxy) then
# crashes inside OpenSSL. Python's ssl module links the system OpenSSL.
import ssl as _system_openssl  # noqa: F401
import sys as _sys

# jsonschema (config validation; nbformat under papermill) imports rfc3987_syntax when it is
# installed (nbformat's format-nongpl extra brings it) to check the "iri" format, and that
# import builds some 35 Earley parsers: 1.3 s of every instore command on this machine
# (python-jsonschema/jsonschema#1428). No schema instore or Jupyter validates uses "iri"; with
# the import refused, jsonschema leaves that one format unchecked.
_sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]

__version__ = "0.1.0"
