"""Where the tests' own files are, with nothing else imported.

The installers ``make test`` runs before pytest (hostbins.py, gateways.py)
run from the bare venv, side by side with the dependencies' install, so
they may import this module and the standard library only.
"""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
