"""A subpackage's face: its public names, each imported from its own module on first use.

A face never imports its modules up front, so ``from jcli_sidecar.read import
read_output`` costs that one module (and what it imports), not the whole
subpackage: the warm read path stays as lean as a direct module import.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["lazy_face"]


def lazy_face(package: str, modules: dict[str, tuple[str, ...]]) -> tuple[list[str], Callable[[str], object]]:
    """The ``__all__`` and the module ``__getattr__`` of the face of ``package``.

    ``modules`` maps each module of the subpackage to the public names it
    defines. A name is looked up in its module the first time it is asked
    for and then kept in the package's namespace; any other name is an
    ``AttributeError``, so ``from package import submodule`` still imports
    the submodule as usual.
    """
    where = {name: module for module, names in modules.items() for name in names}

    def __getattr__(name: str) -> object:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        dotted = f"{package}.{module}"
        __import__(dotted)  # the import statement's own path, so -X importtime sees it (import_module's does not)
        value = getattr(sys.modules[dotted], name)
        setattr(sys.modules[package], name, value)
        return value

    return sorted(where), __getattr__
