"""instore: a study in a box of how grid storage serves ROOT analysis I/O."""

# The system OpenSSL is loaded first, on purpose. pyarrow's libparquet (pandas imports it)
# carries a static OpenSSL and exports its symbols without versions; loaded before the system
# libssl.so.3, it takes the place of the system's for Davix, which XrdClHttp loads into the
# root engine, and the first HTTPS request with a client certificate (an X.509 proxy) then
# crashes inside OpenSSL. Python's ssl module links the system OpenSSL.
import ssl as _system_openssl  # noqa: F401

__version__ = "0.1.0"
