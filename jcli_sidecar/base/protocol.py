"""Protocol v1: the envelope, the limits and the JSON encoding.

Defined once here; the CLI, the sidecar, the MCP adapter and the plugins
(through the CLI) all use these names.
"""

from __future__ import annotations

import base64
import json
import os

from .errors import JcliError, UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "DEFAULT_MAX_RESPONSE_BYTES",
    "NAME_KEYS",
    "PROTOCOL_VERSION",
    "SCHEMA_VERSION",
    "check_file_name",
    "check_max_response_bytes",
    "display_name",
    "dump_json",
    "error_envelope",
    "json_size",
    "json_text",
    "name_bytes",
    "utf8_size",
    "valid_names",
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
    client prints JSON, and nowhere earlier. File names that are not UTF-8
    are written as valid text plus their exact bytes (see
    :func:`valid_names`). Notebook text holding lone surrogates (the
    notebook's own JSON allows them, UTF-8 does not) falls back to
    ``\\uXXXX`` escapes, so the document stays faithful to the file.

    Example:
        >>> dump_json({"a": "é", "b": b"\\x00\\x01"})
        b'{"a":"\\xc3\\xa9","b":"AAE="}'
    """
    text = json.dumps(document, ensure_ascii=False, separators=(",", ":"), default=_bytes_as_base64)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        pass
    document = valid_names(document)
    text = json.dumps(document, ensure_ascii=False, separators=(",", ":"), default=_bytes_as_base64)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(document, separators=(",", ":"), default=_bytes_as_base64).encode("ascii")


#: Keys whose value names a file (or a run directory) in a j-cli document.
NAME_KEYS = frozenset({"path", "requested_path", "manifest", "outputs_dir", "run_id", "file_path", "notebook", "file"})
#: Keys whose value is a human line that may quote a file name.
_TEXT_KEYS = frozenset({"message", "label"})


def name_bytes(name: str) -> bytes:
    """The bytes a file name stands for (undecodable bytes come back from their surrogate escapes).

    Example:
        >>> name_bytes("caf\\udce9.ipynb")
        b'caf\\xe9.ipynb'
    """
    try:
        return os.fsencode(name)
    except UnicodeEncodeError:  # a lone surrogate that stands for no byte
        return name.encode("utf-8", "surrogatepass")


def display_name(name: str) -> str:
    """A file name as valid text: each byte that is not UTF-8 becomes U+FFFD.

    Example:
        >>> display_name("caf\\udce9.ipynb") == "caf\\N{REPLACEMENT CHARACTER}.ipynb"
        True
    """
    return name_bytes(name).decode("utf-8", "replace")


def _is_valid_text(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _valid_map(block: dict[str, Any]) -> dict[str, Any]:
    out = dict(block)
    for key, value in block.items():
        if not isinstance(value, str) or _is_valid_text(value):
            continue
        if key in NAME_KEYS:
            out[key] = display_name(value)
            out[f"{key}_bytes"] = base64.b64encode(name_bytes(value)).decode("ascii")
        elif key in _TEXT_KEYS:
            out[key] = display_name(value)
    return out


def valid_names(document: Any) -> Any:
    """``document`` with every file name and message valid Unicode, and nothing lost.

    A file name that is not UTF-8 (Python holds its undecodable bytes as
    lone surrogates, which no strict JSON or UTF-8 reader accepts) is
    written as text with U+FFFD for each such byte, and its exact bytes go
    beside it, base64, in ``<key>_bytes`` (as ripgrep's JSON output does).
    Messages and labels get the same text. Names live at the top level, in
    ``source`` and in each entry of ``runs``; notebook content elsewhere is
    left as it is.

    Example:
        >>> doc = valid_names({"source": {"path": "/w/\\udcff.ipynb", "label": "/w/\\udcff.ipynb cell 0"}})
        >>> doc["source"]["path"] == "/w/\\N{REPLACEMENT CHARACTER}.ipynb", doc["source"]["path_bytes"]
        (True, 'L3cv/y5pcHluYg==')
    """
    if not isinstance(document, dict):
        return document
    out = _valid_map(document)
    if isinstance(out.get("source"), dict):
        out["source"] = _valid_map(out["source"])
    if isinstance(out.get("runs"), list):
        runs = []
        for run in out["runs"]:
            if isinstance(run, dict):
                run = _valid_map(run)
                if isinstance(run.get("error"), dict):
                    run["error"] = _valid_map(run["error"])
            runs.append(run)
        out["runs"] = runs
    return out


def check_file_name(value: Any, field: str) -> str:
    """A requested file name: a non-empty string that some file could have.

    Names with undecodable bytes (held as surrogate escapes) are fine; a NUL
    byte, or a lone surrogate that stands for no byte, can name no file.

    Raises:
        UsageError: anything else.

    Example:
        >>> check_file_name("a\\udcff.ipynb", "file_path")
        'a\\udcff.ipynb'
        >>> check_file_name("a\\x00b", "file_path")
        Traceback (most recent call last):
        ...
        jcli_sidecar.base.errors.UsageError: file_path holds a NUL byte, which no file name can
    """
    if not isinstance(value, str) or not value:
        raise UsageError(f"{field} must be a non-empty string")
    if "\x00" in value:
        raise UsageError(f"{field} holds a NUL byte, which no file name can")
    try:
        os.fsencode(value)
    except UnicodeEncodeError:
        raise UsageError(f"{field} holds a lone surrogate (a character no file name can hold)") from None
    return value


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
        >>> from jcli_sidecar.base.errors import OutputNotFound
        >>> error_envelope(OutputNotFound("no output 3", output_count=1))
        {'schema_version': 1, 'status': 'error', 'code': 'OUTPUT_NOT_FOUND', 'message': 'no output 3', 'output_count': 1}
    """
    out: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "status": "error"}
    out.update(err.to_dict())
    return out
