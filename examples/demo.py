"""`make demo`: read saved outputs from examples/demo.ipynb with j-cli.

Shows a cell's catalog, one image read and one HTML read, by running the
installed ``j-cli`` exactly as a user or an agent would.
"""

from __future__ import annotations

import base64
import json
import os
import shlex
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
JCLI = os.path.join(os.path.dirname(sys.executable), "j-cli")
NOTEBOOK = os.path.relpath(os.path.join(HERE, "demo.ipynb"))


def run(*args: str) -> subprocess.CompletedProcess:
    print(f"\n$ j-cli {shlex.join(args)}", flush=True)
    proc = subprocess.run([JCLI, *args], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"j-cli failed ({proc.returncode}): {proc.stderr}")
    return proc


def main() -> None:
    # 1. The catalog of a cell: every output, every MIME type, no payloads.
    print(run("notebook", "outputs", NOTEBOOK, "--cell", "9").stdout, end="")

    # 2. One image. Humans get a description; agents use -j and get base64.
    print(run("notebook", "output", NOTEBOOK, "--cell", "2", "--output", "0").stdout, end="")
    envelope = json.loads(run("-j", "notebook", "output", NOTEBOOK, "--cell", "2", "--output", "0").stdout)
    png = base64.b64decode(envelope["selected"]["data"])
    envelope["selected"]["data"] = f"<{len(envelope['selected']['data'])} base64 characters>"
    print(json.dumps(envelope, indent=2))
    print(f"decoded: {len(png)} bytes, PNG signature ok: {png.startswith(bytes.fromhex('89504e470d0a1a0a'))}")

    # 3. One HTML output, verbatim.
    print(run("notebook", "output", NOTEBOOK, "--cell", "5", "--output", "0").stdout, end="")


if __name__ == "__main__":
    main()
