"""Human-mode rendering of read envelopes. Base64 never reaches a terminal.

The line beside the data (what it is, where from, a cut window's offset to
continue at) is the envelope's caption, built once in
:mod:`jcli_sidecar.read.agent_text` for every client.
"""

from __future__ import annotations

from jcli_sidecar.read import caption, kind_of_selected

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["render_human"]


def _size(n: int | None) -> str:
    if n is None:
        return "invalid"
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KiB"
    return f"{n / (1024 * 1024):.1f} MiB"


def _catalog(doc: dict[str, Any]) -> str:
    source = doc["source"]
    head = f"{source['label']}: {doc['cell_type']} cell" if source.get("kind") != "run" else source["label"]
    if source.get("execution_count") is not None:
        head += f", execution_count {source['execution_count']}"
    if source.get("cell_id"):
        head += f", id {source['cell_id']}"
    head += f", {doc['output_count']} output(s)"
    lines = [head]
    for entry in doc["outputs"]:
        kind = entry["output_type"] or "?"
        label = f"  [{entry['output_index']}] {kind}"
        if "error" in entry:
            lines.append(f"{label}  unreadable: {entry['error']['message']}")
            continue
        if kind == "stream":
            size = entry["bytes"]["text/plain"]
            lines.append(f"{label} {entry['name']}  text/plain ({_size(size)})")
            continue
        if kind == "error":
            lines.append(f"{label}  {entry['ename']}: {entry['evalue']}")
            continue
        default = entry.get("default_mime_type")
        parts = [f"{m}{'*' if m == default else ''} ({_size(entry['bytes'].get(m))})" for m in entry["available_mime_types"]]
        line = f"{label}  {', '.join(parts)}"
        if entry.get("renders_as"):  # a chart: read as an image on asking
            line += f"; as an image: --output {entry['output_index']} {entry['renders_as']['read_with']}"
        lines.append(line)
    if doc["outputs"]:
        lines.append("  (* = shown by default; read one with --output K [--mime MIME])")
    return "\n".join(lines) + "\n"


def _text(data: str) -> str:
    return data if data.endswith("\n") or not data else data + "\n"


def render_human(doc: dict[str, Any]) -> tuple[str, str | None]:
    """Readable text for a catalog or a single output.

    Returns:
        ``(body, note)``: the body goes to stdout, the note (the caption:
        provenance and window hints) to stderr so that piping the body stays
        clean. An image has no printable body: its caption is the body, and
        the note says how to get the data.
    """
    if "outputs" in doc:
        return _catalog(doc), None
    note = caption(doc)
    if "stream" in doc:
        return _text(doc["stream"]["data"]), note
    if "error" in doc:
        block = doc["error"]
        if "traceback" in block:
            return _text(f"{block['ename']}: {block['evalue']}\n" + "\n".join(block["traceback"])), note
        return _text(block["data"]), note
    sel = doc["selected"]
    if "withheld" in sel:  # an image told as text (--text-only): the caption says it all
        return note + "\n", None
    text = kind_of_selected(sel).as_text(sel["data"])
    if text is None:  # an image
        return note + "\n", "[use -j to get the image data]"
    return _text(text), note
