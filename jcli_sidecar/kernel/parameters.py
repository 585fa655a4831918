"""Notebook parameters as papermill takes them: ``-p NAME VALUE``, ``-y YAML``, ``--parameters-file``.

The values are resolved as papermill's CLI resolves them (:func:`resolve_value`
for ``-p``: ``True``, ``False``, ``None``, an int, a float, else the string;
YAML through PyYAML's safe loader without timestamps, for lists and maps),
in papermill's order: files, then YAML strings, then ``-p`` (a later one
wins). :func:`python_source` writes the cell papermill's Python translator
writes for the same values (without black, which papermill uses only when
it happens to be installed), byte for byte: ``# Parameters`` and one
``name = value`` line each.

:func:`inject_parameters` puts that source in a code cell tagged
``injected-parameters`` right after the first cell tagged ``parameters`` (at
the top when there is none); a notebook that already has an injected cell
gets it replaced in place (its id kept, no outputs), so a re-run never adds
a second one. The notebook's ``metadata.papermill.parameters`` records the
values, as papermill's does. Only Python kernels are translated for
(``PARAMETERS_UNSUPPORTED_KERNEL`` otherwise).

PyYAML is imported only when YAML is given: a run without parameters never
loads it.
"""

from __future__ import annotations

import json
import keyword
import math

from ..base import ParametersInvalid, ParametersUnsupportedKernel
from ..pair import INJECTED_TAG, is_injected

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

__all__ = [
    "INJECTED_TAG",
    "PARAMETERS_TAG",
    "Parameters",
    "check_parameters_language",
    "inject_into",
    "inject_parameters",
    "python_source",
    "resolve_parameters",
    "resolve_value",
]

#: The tag of the notebook's own cell of default values: the injected cell goes right after it.
PARAMETERS_TAG = "parameters"
#: The most characters an injected cell may hold (YAML aliases can make a short text expand without end).
MAX_SOURCE_CHARS = 1 << 20
#: How deep lists and maps may nest.
MAX_DEPTH = 64


class Parameters:
    """Resolved parameters: ``values`` (as the notebook's metadata records them) and ``source`` (the injected cell's code).

    Example:
        >>> p = resolve_parameters([("n", "3"), ("name", "abc")])
        >>> p.values, p.source
        ({'n': 3, 'name': 'abc'}, '# Parameters\\nn = 3\\nname = "abc"\\n')
    """

    __slots__ = ("values", "source")

    def __init__(self, values: dict[str, Any], source: str) -> None:
        self.values = values
        self.source = source

    def to_wire(self) -> dict[str, str]:
        """What a background job's spec carries: the values as JSON text, and the source."""
        return {"parameters": json.dumps(self.values), "parameters_source": self.source}

    @classmethod
    def from_wire(cls, values_json: str, source: str) -> Parameters:
        """The parameters a job spec carried (:meth:`to_wire`).

        Raises:
            ParametersInvalid: the JSON text is not a map.
        """
        try:
            values = json.loads(values_json)
        except ValueError:
            values = None
        if not isinstance(values, dict):
            raise ParametersInvalid("the job's parameters are not a JSON map")
        return cls(values, source)


def resolve_value(text: str) -> Any:
    """A ``-p`` value's type, as papermill's CLI gives it (``_resolve_type``).

    Example:
        >>> [resolve_value(v) for v in ("True", "None", "12", "1e3", "0x1", "abc")]
        [True, None, 12, 1000.0, '0x1', 'abc']
    """
    if text == "True":
        return True
    if text == "False":
        return False
    if text == "None":
        return None
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def check_name(name: Any, where: str) -> str:
    """A parameter's name: a Python identifier that is not a keyword.

    Raises:
        ParametersInvalid: it is not.
    """
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
        shown = repr(name)[:80]
        raise ParametersInvalid(f"{where}: parameter name {shown} is not a Python identifier", name=shown)
    return name


def _load_yaml(text: str, where: str) -> dict[str, Any]:
    """A YAML mapping, loaded as papermill loads it (safe, no timestamps); empty YAML is no parameters.

    Raises:
        ParametersInvalid: not YAML, or not a mapping.
    """
    import yaml

    class _NoDates(yaml.SafeLoader):
        yaml_implicit_resolvers = {
            first: [resolver for resolver in resolvers if resolver[0] != "tag:yaml.org,2002:timestamp"]
            for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
        }

    try:
        loaded = yaml.load(text, Loader=_NoDates)  # noqa: S506 (a SafeLoader)
    except (yaml.YAMLError, RecursionError, ValueError) as exc:
        raise ParametersInvalid(f"{where}: not valid YAML ({type(exc).__name__})", where=where) from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise ParametersInvalid(f"{where}: parameters must be a YAML mapping (name: value), not a {type(loaded).__name__}", where=where)
    return loaded


def resolve_parameters(pairs: Iterable[tuple[str, str]] = (), yaml_texts: Iterable[str] = (), files: Iterable[str] = ()) -> Parameters:
    """The parameters of ``--parameters-file`` files, then ``-y`` texts, then ``-p`` pairs (a later name wins), as papermill merges them.

    Raises:
        ParametersInvalid: a name is not an identifier, YAML is not valid or
            not a mapping, a value is not one YAML's safe loader gives
            (str, int, float, bool, None, lists and maps of them), the
            cell would be too large or too deep.
        FileNotFound, NotebookReadFailed: a parameters file cannot be read.
    """
    from ..ipynb import read_text_file

    values: dict[str, Any] = {}
    for path in files:
        values.update(_load_yaml(read_text_file(path), path))
    for text in yaml_texts:
        values.update(_load_yaml(text, "-y"))
    for name, text in pairs:
        values[check_name(name, "-p")] = resolve_value(text)
    for name in values:
        check_name(name, "parameters")
    source = python_source(values)
    return Parameters(json.loads(json.dumps(values)), source)


def python_source(values: dict[str, Any]) -> str:
    """The source papermill's ``PythonTranslator.codify`` writes for ``values`` (black not installed).

    Raises:
        ParametersInvalid: a value of another type, nested deeper than
            :data:`MAX_DEPTH`, or a cell of more than :data:`MAX_SOURCE_CHARS`.

    Example:
        >>> print(python_source({"a": [1, 2.5, None], "b": {"k": True}, "c": float("nan")}), end="")
        # Parameters
        a = [1, 2.5, None]
        b = {"k": True}
        c = float('nan')
    """
    budget = _Budget()
    lines = ["# Parameters\n"]
    for name, value in values.items():
        lines.append(f"{name} = {_translate(value, budget, 0)}\n")
        budget.spend(len(name) + 4)
    return "".join(lines)


class _Budget:
    __slots__ = ("left",)

    def __init__(self) -> None:
        self.left = MAX_SOURCE_CHARS

    def spend(self, chars: int) -> None:
        self.left -= chars
        if self.left < 0:
            raise ParametersInvalid(f"the parameters make a cell of more than {MAX_SOURCE_CHARS} characters")


def _escaped(value: Any) -> str:
    """papermill's ``translate_escaped_str``: unicode_escape, then ``"`` escaped, in double quotes."""
    if isinstance(value, str):
        value = value.encode("unicode_escape").decode("utf-8").replace('"', r"\"")
    return f'"{value}"'


def _translate(value: Any, budget: _Budget, depth: int) -> str:
    if depth > MAX_DEPTH:
        raise ParametersInvalid(f"parameters nest deeper than {MAX_DEPTH} levels")
    if value is None or isinstance(value, bool | int):
        text = f"{value}"  # None, True, False, an int
    elif isinstance(value, str):
        text = _escaped(value)
    elif isinstance(value, float):
        if math.isfinite(value):
            text = f"{value}"
        elif math.isnan(value):
            text = "float('nan')"
        else:
            text = "float('-inf')" if value < 0 else "float('inf')"
    elif isinstance(value, dict):
        parts = []
        for key, item in value.items():
            if not (key is None or isinstance(key, str | int | float)):
                raise ParametersInvalid(f"a map key of type {type(key).__name__} cannot be a parameter's")
            budget.spend(4)
            parts.append(f"{_escaped(key)}: {_translate(item, budget, depth + 1)}")
        text = "{" + ", ".join(parts) + "}"
    elif isinstance(value, list):
        parts = []
        for item in value:
            budget.spend(2)
            parts.append(_translate(item, budget, depth + 1))
        text = "[" + ", ".join(parts) + "]"
    else:
        raise ParametersInvalid(f"a value of type {type(value).__name__} cannot be a parameter")
    budget.spend(len(text) if not isinstance(value, dict | list) else 2)
    return text


def check_parameters_language(kernel_name: str | None, language: str | None) -> None:
    """Parameters are translated for Python only.

    Raises:
        ParametersUnsupportedKernel: the session's kernel speaks another language (or none j-cli can tell).
    """
    if isinstance(language, str) and language.lower() == "python":
        return
    said = f"language {language!r}" if language else "a language j-cli cannot tell"
    raise ParametersUnsupportedKernel(
        f"parameters are translated for Python kernels only; kernel {kernel_name!r} speaks {said}",
        kernel_name=kernel_name,
        language=language,
    )


def inject_parameters(nb_path: str, parameters: Parameters, after: int | None = None) -> int:
    """Write ``parameters`` into the notebook at ``nb_path`` under its lock (:func:`inject_into`); returns the injected cell's index.

    Raises:
        OutputSaveFailed: the notebook cannot be written (``executed: false``).
        NotebookReadFailed: it is not a notebook.
    """
    from ..base import os_error
    from ..ipynb import read_for_update, write_notebook
    from ..pair import notebook_write_lock

    with notebook_write_lock(nb_path, executed=False):
        nb = read_for_update(nb_path)
        at = inject_into(nb, parameters, after, nb_path)
        try:
            write_notebook(nb_path, nb)
        except OSError as exc:
            raise os_error(exc, "write", nb_path, executed=False) from None
    return at


def inject_into(nb: dict[str, Any], parameters: Parameters, after: int | None = None, nb_path: str = "the notebook") -> int:
    """Put ``parameters``' cell into the notebook ``nb`` (a dict, changed in place); returns the injected cell's index.

    The first cell tagged ``injected-parameters`` is replaced in place (its id
    kept); any later one is removed. Without one, the cell goes right after
    the first cell tagged ``parameters`` (or the cell ``after``, a pair's
    ``.py`` cell tagged so on its marker), else at the top.
    ``metadata.papermill.parameters`` gets the values.

    Raises:
        NotebookReadFailed: it is not a notebook.
    """
    from ..base import NotebookReadFailed
    from ..ipynb import new_cell

    cells = nb.get("cells")
    if not isinstance(cells, list):
        raise NotebookReadFailed(f"{nb_path}: not a notebook (no cells list)", path=nb_path)
    injected = [i for i, cell in enumerate(cells) if is_injected(cell)]
    old_id = cells[injected[0]].get("id") if injected else None
    with_ids = nb.get("nbformat") == 4 and isinstance(nb.get("nbformat_minor"), int) and nb["nbformat_minor"] >= 5
    cell_id = (old_id if isinstance(old_id, str) else _fresh_id(cells)) if with_ids else None
    cell = new_cell("code", parameters.source, cell_id)
    cell["metadata"] = {"tags": [INJECTED_TAG]}
    if injected:
        at = injected[0]
        cells[at] = cell
        for extra in reversed(injected[1:]):
            del cells[extra]
    else:
        tagged = [i for i, c in enumerate(cells) if PARAMETERS_TAG in _tags(c)]
        if after is not None and 0 <= after < len(cells):
            tagged = sorted([*tagged, after])
        at = tagged[0] + 1 if tagged else 0
        cells.insert(at, cell)
    metadata = nb.setdefault("metadata", {})
    if not isinstance(metadata, dict):
        metadata = nb["metadata"] = {}
    papermill = metadata.get("papermill")
    if not isinstance(papermill, dict):
        papermill = metadata["papermill"] = {}
    papermill["parameters"] = parameters.values
    return at


def _tags(cell: Any) -> list[str]:
    from ..ipynb import metadata_tags

    return metadata_tags(cell.get("metadata") if isinstance(cell, dict) else None)


def _fresh_id(cells: list[Any]) -> str:
    import os

    taken = {cell.get("id") for cell in cells if isinstance(cell, dict)}
    while True:
        candidate = os.urandom(4).hex()
        if candidate not in taken:
            return candidate
