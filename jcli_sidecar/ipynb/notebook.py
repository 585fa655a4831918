"""Load ``.ipynb`` files as plain JSON, without nbformat on the read path.

Every nbformat 4.0-4.5 notebook loads, with or without cell ids, with
multi-line values stored as strings or as lists of strings. Older major
versions are upgraded in memory through nbformat (imported only then).
Nothing here writes anything.
"""

from __future__ import annotations

import json
import math
import os

from ..base import (
    Bail,
    CellNotFound,
    FileTooLarge,
    JcliError,
    NotARegularFile,
    NotebookReadFailed,
    NotUtf8,
    TooDeep,
    UsageError,
    check_size,
    display_name,
    loads,
    open_regular,
    os_error,
    os_reason,
    read_open,
    read_regular,
)
from .nbindex import Changed, NotebookIndex, adopted, build_index, pread_span, stable_read, stat_key

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "NotebookFile",
    "RawNumber",
    "cell_at",
    "coded_read_error",
    "exact_float",
    "load_notebook",
    "metadata_tags",
    "not_utf8",
    "parse_notebook",
    "read_file_bytes",
    "read_file_with_stat",
    "read_text_file",
]

_UNKNOWN = object()  # a memo miss (None is a value a cell may decode to)


def read_file_bytes(path: str) -> bytes:
    """Read a whole regular file (capped), turning OS errors into coded errors.

    Raises:
        FileNotFound: the path or one of its parents does not exist.
        NotebookReadFailed: a directory, a FIFO or device, over the read
            limit (``JCLI_MAX_FILE_MB``), no permission, or another OS error.
        UsageError: a path no file can have (a NUL byte, a lone surrogate).
    """
    return read_file_with_stat(path)[0]


def read_text_file(path: str) -> str:
    """Read a whole regular file (capped) as UTF-8 text, with the coded errors of :func:`read_file_bytes`.

    Raises:
        NotebookReadFailed: as :func:`read_file_bytes`, or the bytes are not UTF-8.
    """
    try:
        return read_file_bytes(path).decode("utf-8")
    except UnicodeDecodeError:
        raise NotebookReadFailed(f"{path}: not UTF-8 text", path=path) from None


def read_file_with_stat(path: str) -> tuple[bytes, os.stat_result]:
    """Read a whole regular file and the ``fstat`` of the very file that was read.

    Nothing here blocks: a FIFO or a device is refused before it is read
    (see :func:`jcli_sidecar.base.readfile.read_regular`).

    Raises:
        FileNotFound, NotebookReadFailed, UsageError: as :func:`read_file_bytes`.
    """
    try:
        return read_regular(path)
    except OSError as exc:
        raise coded_read_error(exc, path) from None
    except ValueError:
        raise UsageError(f"{display_name(path)} is not a usable file name (it holds a NUL byte or a lone surrogate)") from None


def coded_read_error(exc: OSError, path: str) -> JcliError:
    """The coded error of an ``OSError`` met reading ``path`` (see :func:`read_file_bytes`)."""
    if isinstance(exc, (NotARegularFile, FileTooLarge)):  # j-cli's own refusals: their text says why
        return NotebookReadFailed(f"{path}: {os_reason(exc)}", path=path)
    return os_error(exc, "read", path, path=path)


class NotebookFile:
    """A notebook as an offset index; cells and outputs are decoded on demand.

    :meth:`load` indexes the file in one bounded pass (see
    :mod:`jcli_sidecar.ipynb.nbindex`); each later read seeks to the bytes it
    needs, after checking that the file is still the one indexed (else
    :class:`~jcli_sidecar.ipynb.nbindex.Changed`, and the caller loads it again).
    Reading one output of a 400 MB notebook decodes that output only.
    Anything the walk does not expect (old formats, odd JSON, broken files)
    falls back to a full :func:`parse_notebook`, which gives the same
    answers or the precise coded error.

    Example:
        >>> nb = NotebookFile.load("examples/demo.ipynb")
        >>> nb.cell_count, nb.cell(4)["cell_type"]
        (15, 'markdown')
    """

    __slots__ = ("path", "key", "index", "_full", "memo", "memo_bytes", "_memo_sizes", "live")

    def __init__(
        self, path: str, key: tuple[int, int, int, int, int], index: NotebookIndex | None = None, full: dict[str, Any] | None = None
    ) -> None:
        self.path = path
        #: The ``fstat`` key (:func:`~jcli_sidecar.ipynb.nbindex.stat_key`) of the file read.
        self.key = key
        self.index = index
        self._full = full
        #: Decoded cells, outputs and images, kept only while the notebook is
        #: cached (the cache sets a dict; one-shot reads leave it None).
        self.memo: dict[Any, Any] | None = None
        self.memo_bytes = 0
        self._memo_sizes: dict[Any, int] = {}
        #: True when this is a collaboration room's shared document, not the file (:meth:`of_document`).
        self.live = False

    @classmethod
    def of_document(cls, path: str, nb: dict[str, Any]) -> NotebookFile:
        """The notebook at ``path`` as a collaboration room holds it now (``nb``, an nbformat dict): read like the file."""
        made = cls(path, (0, 0, 0, 0, 0), full=nb)
        made.live = True
        return made

    @classmethod
    def load(cls, path: str) -> NotebookFile:
        """Index ``path`` (coded errors for missing, unreadable or broken files).

        Raises:
            FileNotFound, NotebookReadFailed, UsageError: as :func:`read_file_bytes`.
        """
        return stable_read(lambda: cls._load_once(path), path)

    @classmethod
    def _load_once(cls, path: str) -> NotebookFile:
        """One attempt of :meth:`load`.

        Raises:
            Changed: the file changed while it was indexed.
        """
        try:
            fd, info = open_regular(path)
        except OSError as exc:
            raise coded_read_error(exc, path) from None
        except ValueError:
            raise UsageError(f"{display_name(path)} is not a usable file name (it holds a NUL byte or a lone surrogate)") from None
        try:
            check_size(info, path)
            key = stat_key(info)
            handed = adopted(key)  # the index a j-cli writer made of this very version
            if handed is not None:
                return cls(path, key, index=handed)
            try:
                return cls(path, key, index=build_index(fd, info))
            except TooDeep as exc:
                raise NotebookReadFailed(f"{path}: {exc}", path=path) from None
            except Bail:
                return cls(path, stat_key(info), full=parse_notebook(read_open(fd, info, path), path))
        except OSError as exc:
            raise coded_read_error(exc, path) from None
        finally:
            os.close(fd)

    @property
    def approx_bytes(self) -> int:
        """Memory held, roughly: the index, a full parse if one was needed, the memo."""
        index = self.index.approx_bytes if self.index is not None else 0
        full = 3 * self.key[2] if self._full is not None else 0
        return index + full + self.memo_bytes

    def remember(self, key: Any, value: Any, size: int) -> None:
        """Keep a decoded value for later requests (only while cached)."""
        if self.memo is not None and key not in self.memo:
            self.memo[key] = value
            self._memo_sizes[key] = size
            self.memo_bytes += size

    def shrink_memo(self, budget: int) -> None:
        """Forget the oldest decoded values until :attr:`approx_bytes` is within ``budget`` (or nothing is left to forget)."""
        memo = self.memo
        while memo and self.approx_bytes > budget:
            try:
                key = next(iter(memo))
                memo.pop(key, None)
            except (StopIteration, RuntimeError):  # emptied or grown meanwhile by another thread: look again
                continue
            self.memo_bytes -= self._memo_sizes.pop(key, 0)

    @property
    def cell_count(self) -> int:
        if self._full is not None:
            return len(self._full["cells"])
        assert self.index is not None
        return len(self.index.cells)

    def _read(self, spans: list[tuple[int, int]]) -> list[bytes]:
        """The bytes of ``spans``, from the very file indexed.

        Raises:
            Changed: the path no longer holds that file, or it changed while read.
            FileNotFound, NotebookReadFailed: it cannot be opened any more.
        """
        assert self.index is not None
        try:
            fd, info = open_regular(self.path)
        except (OSError, ValueError):
            raise Changed() from None
        try:
            if stat_key(info) != self.index.key:
                raise Changed()
            out = [pread_span(fd, start, end) for start, end in spans]
            if stat_key(os.fstat(fd)) != self.index.key:
                raise Changed()
            return out
        except OSError as exc:
            raise coded_read_error(exc, self.path) from None
        finally:
            os.close(fd)

    def _decode(self, memo_key: Any, spans: list[tuple[int, int]]) -> tuple[bool, Any]:
        """``(True, value)`` of the JSON that the joined ``spans`` hold (``b"[]"`` between them), memoised; ``(False, None)`` when it is not JSON."""
        memo = self.memo
        if memo is not None:
            known = memo.get(memo_key, _UNKNOWN)  # one lookup: the cache may forget it meanwhile (shrink_memo)
            if known is not _UNKNOWN:
                return True, known
        raw = b"[]".join(self._read(spans))
        try:
            value = json.loads(raw)
        except ValueError:  # includes UnicodeDecodeError
            return False, None
        self.remember(memo_key, value, 2 * len(raw))
        return True, value

    def _fall_back(self) -> dict[str, Any]:
        if self._full is None:
            self._full = parse_notebook(read_file_bytes(self.path), self.path)
        return self._full

    def cell(self, index: int) -> Any:
        """The decoded cell at ``index`` (not validated; see :func:`cell_at`).

        Callers must not modify it: a cached notebook shares it between requests.
        """
        if self._full is None:
            assert self.index is not None
            span = self.index.cells[index]
            ok, cell = self._decode(("cell", index), [(span.start, span.end)])
            if ok:
                return cell
        return self._fall_back()["cells"][index]

    def head(self, index: int) -> Any:
        """The decoded cell at ``index`` without its ``outputs`` (not validated; see :func:`cell_at`)."""
        if self._full is None:
            assert self.index is not None
            span = self.index.cells[index]
            if span.outputs is None:
                cell = self.cell(index)
            else:
                ok, cell = self._decode(("head", index), [(span.start, span.outputs[0]), (span.outputs[1], span.end)])
                if not ok:
                    cell = self._fall_back()["cells"][index]
        else:
            cell = self._full["cells"][index]
        if isinstance(cell, dict) and "outputs" in cell:
            return {key: value for key, value in cell.items() if key != "outputs"}
        return cell

    def cell_head(self, index: int) -> Any:
        """The cell without its outputs: enough to pair it with a ``.py`` cell."""
        cell = self.head(index)
        if not isinstance(cell, dict):
            return cell
        return {key: value for key, value in cell.items() if key in ("cell_type", "id", "metadata", "source")}

    def outputs(self, index: int) -> Any:
        """The cell's ``outputs`` value as stored (``[]`` when absent; not validated)."""
        if self._full is None:
            assert self.index is not None
            span = self.index.cells[index]
            if span.outputs is not None:
                ok, outputs = self._decode(("outputs", index), [span.outputs])
                if ok:
                    return outputs
            else:
                cell = self.cell(index)
                return cell.get("outputs", []) if isinstance(cell, dict) else []
        cell = self._fall_back()["cells"][index]
        return cell.get("outputs", []) if isinstance(cell, dict) else []

    def output_count(self, index: int) -> int | None:
        """How many outputs the cell has; None when its ``outputs`` is not a list."""
        if self._full is None:
            assert self.index is not None
            items = self.index.cells[index].items
            if items is not None:
                return len(items)
        outputs = self.outputs(index)
        return len(outputs) if isinstance(outputs, list) else None

    def output(self, index: int, number: int) -> Any:
        """The decoded output ``number`` of cell ``index`` (it exists; see :meth:`output_count`)."""
        if self._full is None:
            assert self.index is not None
            items = self.index.cells[index].items
            if items is not None:
                ok, output = self._decode(("output", index, number), [items[number]])
                if ok:
                    return output
                return self._fall_back()["cells"][index]["outputs"][number]
        return self.outputs(index)[number]


def load_notebook(path: str) -> dict[str, Any]:
    """Read and fully parse the notebook at ``path``.

    Example:
        >>> nb = load_notebook("examples/demo.ipynb")
        >>> nb["nbformat"]
        4
    """
    return parse_notebook(read_file_bytes(path), path)


def parse_notebook(raw: bytes, path: str, *, exact_numbers: bool = False) -> dict[str, Any]:
    """Parse notebook bytes into a v4 dict.

    Only the top level is checked here; cells are checked when used, so one
    odd cell never hides the others. With ``exact_numbers`` (a notebook that
    will be written back), a number too large for a float (``1e400``) is
    kept as its text (:class:`RawNumber`) instead of becoming infinity.

    Raises:
        NotebookReadFailed: not UTF-8 JSON, not a notebook, or an
            unsupported nbformat version.
    """
    try:
        nb = loads(raw, parse_float=exact_float if exact_numbers else None)
    except NotUtf8 as exc:
        raise not_utf8(path, exc.encoding) from None
    except UnicodeDecodeError:
        raise NotebookReadFailed(f"{path}: not UTF-8 text", path=path) from None
    except json.JSONDecodeError as exc:
        raise NotebookReadFailed(
            f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})",
            path=path,
        ) from None
    except TooDeep as exc:
        raise NotebookReadFailed(f"{path}: {exc}", path=path) from None
    if not isinstance(nb, dict):
        raise NotebookReadFailed(f"{path}: JSON is not a notebook (top level is not an object)", path=path)
    major = nb.get("nbformat")
    if not isinstance(major, int) or isinstance(major, bool):
        raise NotebookReadFailed(f"{path}: JSON is not a notebook (no nbformat version)", path=path)
    if major < 4:
        nb = _upgrade_old_major(raw, path)
    elif major > 4:
        raise NotebookReadFailed(f"{path}: nbformat {major} is not supported (4 is)", path=path)
    if not isinstance(nb.get("cells"), list):
        raise NotebookReadFailed(f"{path}: notebook has no cell list", path=path)
    return nb


def not_utf8(path: str, encoding: str) -> NotebookReadFailed:
    """The error for a notebook in UTF-16 or UTF-32: nbformat reads and writes notebooks as UTF-8 only.

    Example:
        >>> not_utf8("a.ipynb", "UTF-16-LE").message
        'a.ipynb: UTF-16-LE text, not UTF-8: a notebook is JSON in UTF-8 (as nbformat reads and writes it); convert it first, e.g. iconv -f UTF-16LE -t UTF-8'
    """
    source = encoding.split(" ")[0].replace("-LE", "LE").replace("-BE", "BE")  # iconv's spelling
    return NotebookReadFailed(
        f"{path}: {encoding} text, not UTF-8: a notebook is JSON in UTF-8 (as nbformat reads and writes it); "
        f"convert it first, e.g. iconv -f {source} -t UTF-8",
        path=path,
        encoding=encoding,
    )


class RawNumber:
    """A JSON number kept as written, because no float holds it (``1e400``, ``2.5e-400``)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RawNumber) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)

    def __repr__(self) -> str:
        return f"RawNumber({self.text!r})"


def exact_float(text: str) -> float | RawNumber:
    """A JSON number as a float, or as its text (:class:`RawNumber`) when no float holds it."""
    value = float(text)
    if not math.isfinite(value):
        return RawNumber(text)  # overflow: 1e400
    if value == 0 and any(d in "123456789" for d in text.lower().partition("e")[0]):
        return RawNumber(text)  # underflow: 2.5e-400
    return value


def _upgrade_old_major(raw: bytes, path: str) -> dict[str, Any]:
    import warnings

    import nbformat  # slow import: only old notebooks pay for it

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            node = nbformat.reads(raw.decode("utf-8"), as_version=4)
    except Exception as exc:  # nbformat raises many kinds for bad input
        raise NotebookReadFailed(f"{path}: old notebook format could not be upgraded ({type(exc).__name__})", path=path) from None
    nb = json.loads(json.dumps(node))
    # The upgrade invents random cell ids; they are not in the file, so drop them.
    for cell in nb.get("cells", []):
        if isinstance(cell, dict):
            cell.pop("id", None)
    return nb


def cell_at(nb: NotebookFile, index: int) -> dict[str, Any]:
    """The cell at a 0-based physical index, checked, without its outputs
    (read them with :meth:`NotebookFile.outputs` or :meth:`NotebookFile.output`).

    Raises:
        UsageError: a negative or non-integer index.
        CellNotFound: the index is outside the notebook.
        NotebookReadFailed: the cell is not a cell.
    """
    if not isinstance(index, int) or isinstance(index, bool) or index < 0:
        raise UsageError(f"cell index must be a non-negative integer, got {index!r}")
    count = nb.cell_count
    if index >= count:
        raise CellNotFound(f"cell {index} is outside {nb.path} ({count} cells)", cell_count=count)
    cell = nb.head(index)
    if not isinstance(cell, dict) or not isinstance(cell.get("cell_type"), str):
        raise NotebookReadFailed(f"{nb.path}: cell {index} has no cell_type", path=nb.path)
    return cell


def metadata_tags(metadata: Any) -> list[str]:
    """The string tags of a cell's ``metadata`` (``metadata.tags``); none when it has no list of them.

    Example:
        >>> metadata_tags({"tags": ["parameters", 3]}), metadata_tags(None)
        (['parameters'], [])
    """
    tags = metadata.get("tags") if isinstance(metadata, dict) else None
    return [tag for tag in tags if isinstance(tag, str)] if isinstance(tags, list) else []
