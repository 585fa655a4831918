"""The kernel a file asks for, read from the file alone (no server).

An ``.ipynb`` asks through ``metadata.kernelspec`` (and describes its
language in ``metadata.language_info``). A py:percent ``.py`` asks through
its jupytext YAML header (read by the codec, :func:`jcli_sidecar.pair.percent.read_header`); without one, its paired ``.ipynb`` speaks for it. A file
that asks for nothing is an answer too (``requested: false``), not an error.

Files are read through :mod:`jcli_sidecar.ipynb.notebook` (regular files only,
capped, coded errors); nothing is written.

A notebook run holds the file to it (:func:`check_session_kernel`): a file
that asks for another kernel than the session's is refused
(``KERNEL_MISMATCH``) before any code is sent, unless the two kernels speak
the same language (then the run goes on with a note) or the caller lets it
run anyway (``exec --any-kernel``, also a note).
"""

from __future__ import annotations

import os

from ..base import FileNotFound, KernelMismatch, UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["EXTENSION_LANGUAGES", "asked_kernel", "check_session_kernel", "inspect_kernel_request"]

#: The language a file's extension implies.
EXTENSION_LANGUAGES = {".py": "python"}
_SPEC_FIELDS = ("name", "display_name", "language")


def inspect_kernel_request(path: str) -> dict[str, Any]:
    """What kernel ``path`` (an ``.ipynb`` or a ``.py``) asks for.

    Returns:
        ``path`` (as given) and ``file`` (absolute); ``requested`` and
        ``source`` (``"notebook"``, ``"py_header"``, ``"paired_notebook"``
        or None) with ``source_path``; ``kernelspec`` (``name``,
        ``display_name``, ``language``) and ``language_info``, each None when
        absent; ``extension_language``; and upstream jupyter-jcli's flat
        ``kernel_name``, ``kernel_display_name``, ``kernel_language``.

    Raises:
        UsageError: not an ``.ipynb`` or a ``.py``.
        FileNotFound, NotebookReadFailed: the file (or the pair that speaks
            for it) cannot be read or parsed.

    Example:
        >>> inspect_kernel_request("examples/demo.ipynb")["source"]  # doctest: +SKIP
        'notebook'
    """
    from ..ipynb import parse_notebook, read_file_bytes
    from ..pair import read_header

    full = os.path.abspath(path)
    extension = os.path.splitext(full)[1].lower()
    if extension not in (".ipynb", ".py"):
        raise UsageError(f"{path}: inspect-file reads an .ipynb or a .py")
    raw = read_file_bytes(full)
    meta: dict[str, Any] = {}
    source = source_path = None
    if extension == ".ipynb":
        meta = _metadata(parse_notebook(raw, full))
        source, source_path = "notebook", full
    else:
        text = raw.decode("utf-8", "replace")
        jupyter = read_header(text, full) or {}
        if isinstance(jupyter.get("kernelspec"), dict):
            meta, source, source_path = jupyter, "py_header", full
        else:
            meta, source, source_path = _paired_metadata(full, text)
    spec = _kernelspec(meta.get("kernelspec"))
    info = _language_info(meta.get("language_info"))
    if spec is None and info is None:
        source = source_path = None
    return {
        "path": path,
        "file": full,
        "requested": spec is not None,
        "source": source,
        "source_path": source_path,
        "kernelspec": spec,
        "language_info": info,
        "extension_language": EXTENSION_LANGUAGES.get(extension),
        "kernel_name": (spec or {}).get("name"),
        "kernel_display_name": (spec or {}).get("display_name"),
        "kernel_language": (spec or {}).get("language"),
    }


def _metadata(nb: dict[str, Any]) -> dict[str, Any]:
    meta = nb.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _paired_metadata(py_path: str, text: str) -> tuple[dict[str, Any], str | None, str | None]:
    """A py:percent file's paired notebook speaks for it, when there is one."""
    from ..ipynb import parse_notebook, read_file_bytes
    from ..pair import is_percent, paired_notebook_path

    if not is_percent(text):
        return {}, None, None
    nb_path = paired_notebook_path(os.path.realpath(py_path))
    try:
        raw = read_file_bytes(nb_path)
    except FileNotFound:  # no pair (or a link to nothing): nothing speaks for the .py
        return {}, None, None
    return _metadata(parse_notebook(raw, nb_path)), "paired_notebook", nb_path


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _kernelspec(value: Any) -> dict[str, str | None] | None:
    """``name``, ``display_name`` and ``language`` (strings, else None); None without a name or display name."""
    if not isinstance(value, dict):
        return None
    spec = {field: _text(value.get(field)) for field in _SPEC_FIELDS}
    return spec if spec["name"] or spec["display_name"] else None


def _language_info(value: Any) -> dict[str, Any] | None:
    """The plain fields of ``language_info`` (and ``codemirror_mode``'s): strings, integers, booleans; None when absent."""
    if not isinstance(value, dict):
        return None
    scalar = (str, int, bool, type(None))
    info: dict[str, Any] = {}
    for key, item in value.items():
        if not isinstance(key, str):
            continue
        if isinstance(item, scalar):
            info[key] = item
        elif isinstance(item, dict):
            info[key] = {k: v for k, v in item.items() if isinstance(k, str) and isinstance(v, scalar)}
    return info or None


def asked_kernel(metadata: Any) -> dict[str, str | None] | None:
    """The kernelspec a notebook's (or a jupytext header's) metadata asks for: ``name``, ``display_name``, ``language``.

    The language falls back to ``language_info.name``. None when it names no kernel.

    Example:
        >>> asked_kernel({"kernelspec": {"name": "ir"}, "language_info": {"name": "R"}})
        {'name': 'ir', 'display_name': None, 'language': 'R'}
    """
    if not isinstance(metadata, dict):
        return None
    spec = _kernelspec(metadata.get("kernelspec"))
    if spec is None or not spec["name"]:
        return None
    if not spec["language"]:
        info = metadata.get("language_info")
        spec["language"] = _text(info.get("name")) if isinstance(info, dict) else None
    return spec


def check_session_kernel(
    asked: dict[str, str | None] | None,
    where: str,
    session_kernel: str | None,
    session_language: Callable[[], str | None],
    *,
    allow: bool = False,
) -> str | None:
    """Hold a run of the file ``where`` names to the session's kernel; a note when it runs anyway, else None.

    ``asked``: what the file asks for (:func:`asked_kernel`); ``session_language``
    is asked only when the names differ. The same name runs; another name of
    the same language runs with a note; anything else is refused, unless
    ``allow`` (a note then).

    Raises:
        KernelMismatch: with ``requested_kernel``, ``requested_language``,
            ``session_kernel``, ``session_language`` and ``path``.
    """
    if asked is None or not session_kernel or asked["name"] == session_kernel:
        return None
    language = session_language()
    wanted = asked["language"]
    said = f"{where} asks for kernel '{asked['name']}'" + (f" ({wanted})" if wanted else "")
    runs = f"the session runs '{session_kernel}'" + (f" ({language})" if language else "")
    if wanted and language and wanted.lower() == language.lower():
        return f"{said}; {runs}, the same language: ran it there"
    if allow:
        return f"{said}; {runs}: ran it there anyway (--any-kernel)"
    raise KernelMismatch(
        f"{said}; {runs}. Nothing was run or written. Run it in a session of that kernel "
        f"(j-cli session create -n NAME -k {asked['name']}), or pass --any-kernel to run it in this session "
        "(a notebook it creates still records the kernel the file asks for).",
        requested_kernel=asked["name"],
        requested_language=wanted,
        session_kernel=session_kernel,
        session_language=language,
        path=where,
    )
