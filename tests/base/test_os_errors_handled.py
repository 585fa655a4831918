"""Every ``except OSError`` in j-cli either maps the error through the one table, carries it on, or says why.

Design §10 and the error rules: an ``OSError`` becomes a coded error through
``jcli_sidecar/base/os_errors.py`` (``os_error``, ``os_reason``) or the notebook
reader's ``coded_read_error``; where a handler swallows one instead, a comment
on its ``except`` line (or the line after) says why that is safe. A handler
passes when its body raises, calls one of those mappers, or uses the error it
bound (a report, a message), or when that comment is there.
"""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

from helpers import REPO

MAPPERS = {"os_error", "os_reason", "coded_read_error"}
ROOTS = [REPO / "jcli_sidecar", REPO / "client" / "jcli"]


def _comment_lines(source: str) -> set[int]:
    return {tok.start[0] for tok in tokenize.generate_tokens(io.StringIO(source).readline) if tok.type == tokenize.COMMENT}


def _catches_os_error(handler: ast.ExceptHandler) -> bool:
    caught = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any((c.id if isinstance(c, ast.Name) else getattr(c, "attr", None)) == "OSError" for c in caught)


def _accounted_for(handler: ast.ExceptHandler, comments: set[int]) -> bool:
    for node in ast.walk(handler):
        if isinstance(node, ast.Raise):
            return True
        if isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
            if name in MAPPERS:
                return True
        if handler.name and isinstance(node, ast.Name) and node.id == handler.name:
            return True  # the error is carried on: reported, logged or kept
    return any(line in comments for line in range(handler.lineno, handler.body[0].lineno + 1))


def unexplained(path: Path) -> list[str]:
    source = path.read_text(encoding="utf-8")
    comments = _comment_lines(source)
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ExceptHandler) and node.type is not None and _catches_os_error(node):
            if not _accounted_for(node, comments):
                found.append(f"{path.relative_to(REPO)}:{node.lineno}")
    return found


def test_every_os_error_handler_maps_carries_or_explains():
    found = [site for root in ROOTS for path in sorted(root.rglob("*.py")) for site in unexplained(path)]
    assert found == [], "an `except OSError` that neither maps, carries nor says why it swallows:\n" + "\n".join(found)


def test_the_check_sees_a_silent_handler_and_accepts_the_three_ways(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        "def a():\n    try:\n        pass\n    except OSError:\n        return None\n"
        "def b():\n    try:\n        pass\n    except OSError:  # gone: nothing to do\n        return None\n"
        "def c():\n    try:\n        pass\n    except OSError as exc:\n        raise os_error(exc, 'x') from exc\n"
        "def d():\n    try:\n        pass\n    except (ValueError, OSError) as exc:\n        report.append(str(exc))\n"
    )
    found = []
    source = sample.read_text()
    comments = _comment_lines(source)
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ExceptHandler) and _catches_os_error(node) and not _accounted_for(node, comments):
            found.append(node.lineno)
    assert found == [4]
