"""What the Codex host tests share: the fixture notebook's PNG, the protocol cases, and the check that no process outlives a test.

``tests/hosts/test_host_codex.py`` drives Codex's app server and
``tests/hosts/test_host_codex_turn.py`` whole ``codex exec`` turns; both read the
same fixture image and both end by proving that nothing Codex started in the
test's directories is still running.
"""

from __future__ import annotations

import base64
import json
import os

from helpers import load_cases


def protocol_case(name: str) -> dict:
    """One case of ``tests/fixtures/protocol`` by name."""
    return next(case for case in load_cases() if case["name"] == name)


def notebook_png(path) -> bytes:
    """The PNG bytes the notebook stores for cell 2, output 0 (its base64, decoded here)."""
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)["cells"][2]["outputs"][0]["data"]["image/png"]
    return base64.b64decode("".join(data) if isinstance(data, list) else data)


def processes_in(tmp_path) -> list:
    """Live processes (not this one) whose cwd or command line is under ``tmp_path``."""
    import psutil

    root = os.path.realpath(tmp_path)
    found = []
    for proc in psutil.process_iter(["pid", "cmdline", "cwd", "status"]):
        if proc.pid == os.getpid() or proc.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        cwd = proc.info["cwd"] or ""
        if cwd == root or cwd.startswith(root + os.sep) or any(root in part for part in proc.info["cmdline"] or []):
            found.append(proc)
    return found


def no_process_outlives(tmp_path, what: str) -> None:
    """Kill whatever still works in ``tmp_path``, then fail the test if anything did."""
    import psutil

    leaked = processes_in(tmp_path)
    for proc in leaked:
        proc.kill()
    psutil.wait_procs(leaked, timeout=10)
    assert not leaked, f"{what}: {[(p.pid, p.info['cmdline']) for p in leaked]}"
