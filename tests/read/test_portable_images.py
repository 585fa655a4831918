"""Fitting an image on macOS, whose kernel refuses an address-space cap: run here with that refusal faked.

The image worker caps its memory (``RLIMIT_AS``), CPU time and file writes
before it reads a request. macOS answers ``setrlimit(RLIMIT_AS, ...)`` with
``EINVAL`` (Python's ``ValueError``), which cannot happen on Linux; so a
``sitecustomize`` on ``PYTHONPATH`` makes that one call refuse as macOS's
does (the one fault faked here). The image, the notebook, the worker and
its other caps are real.
"""

from __future__ import annotations

import base64
import io
import os

from helpers import run_cli
from PIL import Image
from test_imageview import _notebook, _png

#: ``setrlimit(RLIMIT_AS)`` refused as macOS refuses it (the faked fault); every other limit is set for real.
MACOS_RLIMITS = """
import resource
_real = resource.setrlimit
def setrlimit(which, limits):
    if which == resource.RLIMIT_AS:
        raise ValueError("current limit exceeds maximum limit")
    return _real(which, limits)
resource.setrlimit = setrlimit
"""


def test_an_image_is_fitted_where_the_system_refuses_an_address_space_cap(tmp_path):
    site = tmp_path / "macos-rlimits"
    site.mkdir()
    (site / "sitecustomize.py").write_text(MACOS_RLIMITS)
    png = _png(1600, 1200)
    nb = _notebook(tmp_path / "big.ipynb", [{"image/png": base64.b64encode(png).decode("ascii")}])
    env = dict(os.environ, PYTHONPATH=str(site))
    read = run_cli("-j", "notebook", "output", str(nb), "--cell", "0", "--output", "0", "--max-edge", "400", cwd=tmp_path, env=env)
    assert read.returncode == 0, read.stdout + read.stderr
    selected = read.json()["selected"]
    shown = Image.open(io.BytesIO(base64.b64decode(selected["data"])))
    assert shown.size == (400, 300) and (selected["width"], selected["height"]) == shown.size
    assert selected["original"]["width"] == 1600
    assert sorted(path.name for path in tmp_path.iterdir()) == ["big.ipynb", "macos-rlimits"]  # nothing written beside it
