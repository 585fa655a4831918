"""The one option table of the read commands.

``j-cli notebook outputs`` and ``j-cli notebook output`` are built from this
table twice: by the lean fast path (no click import, for agents calling in a
loop) and by the click app (help, completion, usage errors). Each option
maps to one field of the read request (see ``jcli_sidecar.read.requests``).
"""

from __future__ import annotations

from jcli_sidecar.read import HOST_NAMES

__all__ = ["FILE_ARGUMENT", "READ_COMMANDS", "REQUEST_OPTION", "RUN_SHOW_OPTIONS", "ReadOption", "VIEW_OPTIONS", "parse_value"]


def parse_value(kind: str, text: str):
    """A flag's value by its ``kind``, parsed the same strict way by the fast path and click.

    Numbers are plain ASCII: an optional sign and digits (and for a
    float, a point and an exponent). Python's own ``int()`` would also take
    ``1_0``, surrounding spaces and non-ASCII digits such as ``١``; a typo
    must not silently become a cell index.

    Raises:
        ValueError: not a number of that kind.

    Example:
        >>> parse_value("int", "12"), parse_value("float", "2.5")
        (12, 2.5)
        >>> parse_value("int", "1_0")
        Traceback (most recent call last):
        ...
        ValueError: '1_0' is not a plain integer
    """
    if kind == "str":
        return text
    if kind == "int":
        digits = text[1:] if text[:1] in ("+", "-") else text
        if not (digits.isascii() and digits.isdigit()):
            raise ValueError(f"{text!r} is not a plain integer")
        return int(text)
    if kind == "float":
        if not text.isascii() or "_" in text or text != text.strip() or not text:
            raise ValueError(f"{text!r} is not a plain number")
        return float(text)
    if kind == "timeout":  # seconds, or none (0.0: no limit)
        from jcli_sidecar.kernel import parse_timeout

        return parse_timeout(text)
    raise ValueError(f"unknown option kind {kind!r}")


class ReadOption:
    """One ``--flag VALUE`` of a read command.

    Args:
        flags: long flag first, then any aliases.
        field: the request field it fills.
        kind: ``"int"``, ``"float"``, ``"timeout"`` (seconds or ``none``), ``"str"``, ``"flag"`` (no value; true when given),
            ``"pair"`` (two values, ``NAME VALUE``, repeatable: a list of pairs) or ``"multi"`` (a string, repeatable: a list).
        help: one line for ``--help``.
        required: needed unless ``--request`` is used.
        hidden: left out of ``--help`` (another tool's spelling, kept working).
    """

    __slots__ = ("flags", "field", "kind", "help", "metavar", "required", "hidden")

    def __init__(self, flags, field, kind, help, metavar, required=False, hidden=False):
        self.hidden = hidden
        self.flags = flags
        self.field = field
        self.kind = kind
        self.help = help
        self.metavar = metavar
        self.required = required


#: The positional FILE argument (fills ``file_path``).
FILE_ARGUMENT = "file_path"

CELL = ReadOption(("--cell",), "cell_index", "int", "0-based cell index in FILE (for a .py: its own cells).", "N", True)
OUTPUT = ReadOption(("--output",), "output_index", "int", "0-based index in the cell's outputs; omit for the catalog.", "K")
MIME = ReadOption(("--mime",), "mime_type", "str", "Return exactly this MIME representation.", "MIME")
OFFSET = ReadOption(("--offset",), "offset", "int", "Text window start, in characters (code points).", "O")
LIMIT = ReadOption(("--limit",), "limit", "int", "Text window length, in characters (code points).", "L")
MAX_RESPONSE = ReadOption(
    ("--max-response-bytes",), "max_response_bytes", "int", "Refuse responses larger than this (default 32 MiB).", "B"
)

HOST = ReadOption(("--host",), "host", "str", f"Fit an image to this host's types and limits: {HOST_NAMES}.", "NAME")
AS = ReadOption(
    ("--as",),
    "as_mime_type",
    "str",
    "Convert the selected image (or render the SVG or chart) to image/png, image/jpeg or image/webp.",
    "MIME",
)
MAX_EDGE = ReadOption(("--max-edge",), "max_edge", "int", "Downscale an image whose long edge is over PX pixels.", "PX")
MAX_PIXELS = ReadOption(("--max-pixels",), "max_pixels", "int", "Downscale an image of more than N pixels.", "N")
MAX_BYTES = ReadOption(("--max-bytes",), "max_bytes", "int", "Shrink an image larger than B bytes.", "B")
TEXT_ONLY = ReadOption(
    ("--text-only",), "text_only", "flag", "For a model that takes no image input: tell an image as text, never its data.", None
)
AGENT_TEXT = ReadOption(
    ("--agent-text",), "agent_text", "flag", "With -j: add agent_text, the caption every client shows beside the data.", None
)

#: The options that view (convert) the selected image; the stored one never changes.
VIEW_OPTIONS: tuple[ReadOption, ...] = (HOST, AS, MAX_EDGE, MAX_PIXELS, MAX_BYTES)

#: ``--request -``: the whole request as one JSON object on stdin.
REQUEST_OPTION = ReadOption(("--request",), "request", "str", "Read the request as a JSON object from stdin ('-').", "-")

#: ``j-cli output show RUN``: a run's catalog, or one of its outputs (fields of the run request).
RUN_SHOW_OPTIONS: tuple[ReadOption, ...] = (
    ReadOption(("--output",), "output_index", "int", "0-based index in the run's outputs; omit for the catalog.", "K"),
    MIME,
    OFFSET,
    LIMIT,
    MAX_RESPONSE,
    *VIEW_OPTIONS,
    TEXT_ONLY,
)

#: command name -> (help, options). ``outputs`` is the catalog only.
READ_COMMANDS: dict[str, tuple[str, tuple[ReadOption, ...]]] = {
    "outputs": (
        "List one cell's saved outputs and their MIME types, without payloads.",
        (CELL, MAX_RESPONSE, REQUEST_OPTION),
    ),
    "output": (
        "Read one saved output (text and HTML verbatim, images as base64 in -j mode).",
        (CELL, OUTPUT, MIME, OFFSET, LIMIT, MAX_RESPONSE, *VIEW_OPTIONS, TEXT_ONLY, AGENT_TEXT, REQUEST_OPTION),
    ),
}
