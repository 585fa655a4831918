"""j-cli's core: reading notebook outputs, the protocol, and (later) the sidecar.

Importable without any daemon running; every module is plain and
synchronous. Heavy modules (nbformat) are imported only where needed.
"""

__version__ = "0.1.0"
