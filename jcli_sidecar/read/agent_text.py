"""The text shown beside a read envelope's data, built once for every client.

The CLI's human mode, the MCP tools and the OpenCode and DSH plugins all
show a read the same way: the data itself (verbatim text, an image, a
catalog), and one bracketed line, the *caption*, saying what it is, where it
came from (the envelope's ``source.label``) and what else to know: an
image's size and how it was fitted (or, for a model that takes no images,
why it was not sent and how to read its text form), and, when a text window is cut, which
characters came back and the offset to continue at. Every client prints
the strings built here as they are and composes none of its own; the
plugins, which get the envelope as JSON, ask for them with the request
field ``agent_text`` (see :func:`agent_strings`).

Example:
    >>> caption({"source": {"label": "a.ipynb cell 1 output 0"},
    ...          "stream": {"name": "stdout", "truncated": True, "offset": 0,
    ...                     "returned_characters": 10, "total_characters": 40, "next_offset": 10}})
    '[stdout stream from a.ipynb cell 1 output 0; characters 0-10 of 40; continue at offset 10]'
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["agent_strings", "caption", "window_notice"]


def window_notice(block: dict[str, Any]) -> str | None:
    """Which characters a cut text window holds and where the next one starts; None for a whole text.

    Example:
        >>> window_notice({"truncated": True, "offset": 17, "returned_characters": 13,
        ...                "total_characters": 40, "next_offset": 30})
        'characters 17-30 of 40; continue at offset 30'
        >>> window_notice({"truncated": True, "offset": 30, "returned_characters": 10,
        ...                "total_characters": 40, "next_offset": None})
        'characters 30-40 of 40'
        >>> window_notice({"truncated": False}) is None
        True
    """
    if not block.get("truncated"):
        return None
    start = block["offset"]
    notice = f"characters {start}-{start + block['returned_characters']} of {block['total_characters']}"
    if block.get("next_offset") is not None:
        notice += f"; continue at offset {block['next_offset']}"
    return notice


def _image_facts(selected: dict[str, Any]) -> str:
    facts = f"{selected['bytes']} bytes"
    if "width" in selected:
        facts += f", {selected['width']}x{selected['height']} px"
    if selected.get("animated"):
        facts += ", animated"
    return facts


def _withheld_notices(selected: dict[str, Any]) -> list[str]:
    """Why an image was not sent, and how a text-only model reads the same output instead."""
    notices = [f"not sent: {selected['withheld']}"]
    forms = selected.get("text_forms") or []
    if not forms:
        notices.append("it has no text form: have the kernel print what the image shows (j-cli exec)")
        return notices
    listed = ", ".join(f"{form['mime_type']} ({form['bytes']} bytes)" for form in forms)
    notices.append(f"its text forms: {listed}; read one with mime_type={forms[0]['mime_type']!r}")
    return notices


def _window_block(envelope: dict[str, Any]) -> dict[str, Any]:
    """The block of a single-output envelope that may carry a text window."""
    for key in ("stream", "error", "selected"):
        if key in envelope:
            return envelope[key]
    return {}


def caption(envelope: dict[str, Any]) -> str:
    """The one line shown beside an envelope's data, in brackets.

    ``[WHAT from LABEL; NOTICE; ...]``: WHAT is ``NAME stream``, ``error
    ENAME`` or the selected MIME type; the notices are an image's size (and
    the note of a fitted or rendered one) and a cut window's
    :func:`window_notice`. A catalog is ``[N output(s) of LABEL]``.

    Example:
        >>> caption({"source": {"label": "run r1 output 0"},
        ...          "selected": {"mime_type": "image/png", "encoding": "base64", "bytes": 3630, "width": 150, "height": 100}})
        '[image/png from run r1 output 0; 3630 bytes, 150x100 px]'
        >>> caption({"source": {"label": "a.ipynb cell 2"}, "output_count": 2, "outputs": []})
        '[2 output(s) of a.ipynb cell 2]'
        >>> caption({"source": {"label": "a.ipynb cell 3 output 0"},
        ...          "selected": {"mime_type": "image/png", "encoding": "none", "bytes": 3630, "width": 150, "height": 100,
        ...                       "withheld": "the model takes no image input",
        ...                       "text_forms": [{"mime_type": "text/plain", "bytes": 33}]}})
        "[image/png from a.ipynb cell 3 output 0; 3630 bytes, 150x100 px; not sent: the model takes no image input; its text forms: text/plain (33 bytes); read one with mime_type='text/plain']"
    """
    label = envelope["source"]["label"]
    if "outputs" in envelope:
        return f"[{envelope['output_count']} output(s) of {label}]"
    notices: list[str] = []
    if "stream" in envelope:
        what = f"{envelope['stream']['name']} stream"
    elif "error" in envelope:
        what = f"error {envelope['error']['ename']}"
    else:
        selected = envelope["selected"]
        what = selected["mime_type"]
        if selected.get("encoding") == "base64":  # an image
            notices.append(_image_facts(selected))
            if selected.get("note"):
                notices.append(selected["note"])
        elif "withheld" in selected:  # an image a text-only model was told about instead
            notices.append(_image_facts(selected))
            notices.extend(_withheld_notices(selected))
    window = window_notice(_window_block(envelope))
    if window is not None:
        notices.append(window)
    return "[" + "; ".join([f"{what} from {label}", *notices]) + "]"


def agent_strings(envelope: dict[str, Any]) -> dict[str, str]:
    """What a read asked with ``agent_text: true`` adds to its envelope, as ``agent_text``.

    ``caption`` (:func:`caption`) always; ``window`` (:func:`window_notice`)
    only when a text window is cut, for a client that shows the window on
    its own.

    Example:
        >>> agent_strings({"source": {"label": "a.ipynb cell 5 output 0"},
        ...                "selected": {"mime_type": "text/html", "truncated": False}})
        {'caption': '[text/html from a.ipynb cell 5 output 0]'}
    """
    strings = {"caption": caption(envelope)}
    window = None if "outputs" in envelope else window_notice(_window_block(envelope))
    if window is not None:
        strings["window"] = window
    return strings
