"""Human-mode rendering of read envelopes. Base64 never reaches a terminal."""

from __future__ import annotations

from jcli_sidecar.read import of_selected

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


def _window_note(block: dict[str, Any]) -> str | None:
    if not block.get("truncated"):
        return None
    start = block["offset"]
    end = start + block["returned_characters"]
    note = f"[characters {start}-{end} of {block['total_characters']}"
    if block.get("next_offset") is not None:
        note += f"; continue with --offset {block['next_offset']}"
    return note + "]"


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
        lines.append(f"{label}  {', '.join(parts)}")
    if doc["outputs"]:
        lines.append("  (* = shown by default; read one with --output K [--mime MIME])")
    return "\n".join(lines) + "\n"


def _text(data: str) -> str:
    return data if data.endswith("\n") or not data else data + "\n"


def render_human(doc: dict[str, Any]) -> tuple[str, str | None]:
    """Readable text for a catalog or a single output.

    Returns:
        ``(body, note)``: the body goes to stdout, the note (provenance and
        window hints) to stderr so that piping the body stays clean.
    """
    if "outputs" in doc:
        return _catalog(doc), None
    where = doc["source"]["label"]
    if "stream" in doc:
        block = doc["stream"]
        note = _window_note(block)
        return _text(block["data"]), f"[{block['name']} from {where}]" + (f" {note}" if note else "")
    if "error" in doc:
        block = doc["error"]
        if "traceback" in block:
            body = f"{block['ename']}: {block['evalue']}\n" + "\n".join(block["traceback"])
            return _text(body), f"[error from {where}]"
        return _text(block["data"]), f"[error from {where}] {_window_note(block)}"
    sel = doc["selected"]
    mime = sel["mime_type"]
    text = of_selected(sel).as_text(sel["data"])
    if text is None:  # an image
        dims = f", {sel['width']}x{sel['height']} px" if "width" in sel else ""
        dims += "".join(f"; {fact}" for fact in ("animated",) if sel.get(fact))
        dims += f" ({sel['note']})" if sel.get("note") else ""
        body = f"{mime} image, {sel['bytes']} bytes{dims}\n"
        return body, f"[from {where}; use -j to get the image data]"
    note = _window_note(sel)
    return _text(text), f"[{mime} from {where}]" + (f" {note}" if note else "")
