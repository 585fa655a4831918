"""Protocol v1: the envelope, the limits and the JSON encoding.

Defined once here; the CLI, the sidecar, the MCP adapter and the plugins
(through the CLI) all use these names.
"""

from __future__ import annotations

import json

from .errors import JcliError, UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "DEFAULT_MAX_RESPONSE_BYTES",
    "PROTOCOL_VERSION",
    "SCHEMA_VERSION",
    "check_max_response_bytes",
    "dump_json",
    "error_envelope",
    "json_text",
    "utf8_size",
]

#: Version of every JSON document j-cli prints.
SCHEMA_VERSION = 1

#: Version of the sidecar wire protocol.
PROTOCOL_VERSION = 1

#: Largest serialised response a reader returns, unless the caller lowers it.
DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024



def dump_json(document: Any) -> bytes:
    """The one wire form of a JSON document: compact UTF-8.

    Text holding lone surrogates (JSON allows them, UTF-8 does not) falls
    back to ``\\uXXXX`` escapes, so the document stays valid and reversible.

    Example:
        >>> dump_json({"a": "é"})
        b'{"a":"\\xc3\\xa9"}'
    """
    text = json.dumps(document, ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(document, separators=(",", ":")).encode("ascii")


def utf8_size(text: str) -> int:
    """Bytes of ``text`` in UTF-8 (a lone surrogate counts as 3)."""
    return len(text.encode("utf-8", "surrogatepass"))


def json_text(value: Any) -> str:
    """The reversible text form of a JSON value, used for text windows.

    Example:
        >>> print(json_text({"x": [1, 2]}))
        {
          "x": [
            1,
            2
          ]
        }
    """
    return json.dumps(value, ensure_ascii=False, indent=2)


def check_max_response_bytes(value: Any) -> int:
    """Validate a caller's response cap; None means the default.

    Raises:
        UsageError: not a positive integer.
    """
    if value is None:
        return DEFAULT_MAX_RESPONSE_BYTES
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise UsageError(f"max_response_bytes must be an integer >= 1, got {value!r}")
    return value


def error_envelope(err: JcliError) -> dict[str, Any]:
    """The document printed when j-cli itself fails.

    Example:
        >>> from jcli_sidecar.errors import OutputNotFound
        >>> error_envelope(OutputNotFound("no output 3", output_count=1))
        {'schema_version': 1, 'status': 'error', 'code': 'OUTPUT_NOT_FOUND', 'message': 'no output 3', 'output_count': 1}
    """
    out: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "status": "error"}
    out.update(err.to_dict())
    return out
