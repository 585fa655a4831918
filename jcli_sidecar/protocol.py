"""Protocol v1: the envelope, the limits and the JSON encoding.

Defined once here; the CLI, the sidecar, the MCP adapter and the plugins
(through the CLI) all use these names.
"""

from __future__ import annotations

import base64
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
    "json_size",
    "json_text",
    "utf8_size",
]

#: Version of every JSON document j-cli prints.
SCHEMA_VERSION = 1

#: Version of the sidecar wire protocol.
PROTOCOL_VERSION = 1

#: Largest serialised response a reader returns, unless the caller lowers it.
DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024


def _bytes_as_base64(value: Any) -> str:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def dump_json(document: Any) -> bytes:
    """The one wire form of a JSON document: compact UTF-8.

    Binary values (image bytes from the sidecar) become base64 here, where a
    client prints JSON, and nowhere earlier. Text holding lone surrogates
    (JSON allows them, UTF-8 does not) falls back to ``\\uXXXX`` escapes, so
    the document stays valid and reversible.

    Example:
        >>> dump_json({"a": "é", "b": b"\\x00\\x01"})
        b'{"a":"\\xc3\\xa9","b":"AAE="}'
    """
    text = json.dumps(document, ensure_ascii=False, separators=(",", ":"), default=_bytes_as_base64)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(document, separators=(",", ":"), default=_bytes_as_base64).encode("ascii")


def json_size(document: dict[str, Any]) -> int:
    """``len(dump_json(document))`` without base64-encoding a binary ``selected.data``.

    Example:
        >>> json_size({"selected": {"data": b"abcd"}}) == len(dump_json({"selected": {"data": b"abcd"}}))
        True
    """
    selected = document.get("selected")
    data = selected.get("data") if isinstance(selected, dict) else None
    if not isinstance(data, (bytes, bytearray)):
        return len(dump_json(document))
    stub = dict(document, selected=dict(selected, data=""))
    return len(dump_json(stub)) + 4 * ((len(data) + 2) // 3)


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
