"""``notebook text``: one notebook as plain text, for reading and for ripgrep's ``--pre``.

Each cell starts with a py:percent marker that names it (``# %% [cell 3]``,
``# %% [cell 4] [markdown]``), then its source as stored. Each text part of
its outputs (:mod:`jcli_sidecar.read.text_parts`) follows under a line that
names the output (``# [cell 3 output 0: stream stdout]``), indented by four
spaces; a binary part is one line with its size and the command that reads
it. Images are never decoded: their size is estimated from the base64.
"""

from __future__ import annotations

import shlex

from ..base import human_size
from .text_parts import notebook_parts

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

    from ..ipynb import NotebookFile
    from .text_parts import Part

__all__ = ["INDENT", "render_notebook_text"]

#: What every line of an output's text starts with.
INDENT = "    "


def _marker(part: Part) -> str:
    kind = "" if part.kind == "code" else f" [{part.kind}]"
    return f"# %% [cell {part.cell}]{kind}\n"


def _output_label(part: Part) -> str:
    if part.kind == "stream":
        return f"stream {part.name}" if part.name else "stream"
    return part.kind


def render_notebook_text(nb: NotebookFile, shown: str) -> Iterator[str]:
    """The text of ``nb`` in pieces (each ends with a newline); ``shown`` is the path the commands name.

    Raises:
        Changed: the file changed while it was read.

    Example:
        >>> from jcli_sidecar.ipynb import NotebookFile
        >>> text = "".join(render_notebook_text(NotebookFile.load("examples/demo.ipynb"), "examples/demo.ipynb"))
        >>> print(text[text.index("# %% [cell 2]"):].split("# %% [cell 3]")[0], end="")
        # %% [cell 2]
        display(Image(data=figure_bytes('png'), format='png'))
        # [cell 2 output 0: image/png 3.5 KiB: j-cli notebook output examples/demo.ipynb --cell 2 --output 0]
        # [cell 2 output 0: text/plain]
            <IPython.core.display.Image object>
    """
    quoted = shlex.quote(shown)
    for part in notebook_parts(nb):
        if part.output is None:
            yield _marker(part)
            if part.text:
                yield part.text if part.text.endswith("\n") else part.text + "\n"
            continue
        where = f"cell {part.cell} output {part.output}"
        if part.text is None:
            command = f"j-cli notebook output {quoted} --cell {part.cell} --output {part.output}"
            yield f"# [{where}: {part.kind} {human_size(part.size)}: {command}]\n"
            continue
        yield f"# [{where}: {_output_label(part)}]\n"
        lines = part.text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        yield "".join(f"{INDENT}{line}\n" for line in lines)
