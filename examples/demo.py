"""`make demo`: the main job, end to end, on the embedded Jupyter Server.

1. start the embedded server;  2. create a session;
3. run inline code that prints and plots;  4. list the run's files;
5. run examples/analysis.py (py:percent) into its notebook;
6. read one image and one HTML output back through the sidecar;
7. when the server has jupyter-collaboration (the ``[live]`` extra): a
   second collaborator, standing in for a person in JupyterLab, joins the
   notebook's room, and the notebook runs again: each output appears in
   the person's document as the kernel prints it, before the cell ends.

Everything happens in a scratch workspace with a private runtime dir, and
the session, the sidecar and the server are stopped at the end.
"""

from __future__ import annotations

import base64
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
JCLI = os.path.join(os.path.dirname(sys.executable), "j-cli")


def run(*args: str, show: bool = True) -> subprocess.CompletedProcess:
    print(f"\n$ j-cli {shlex.join(args)}", flush=True)
    proc = subprocess.run([JCLI, *args], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"j-cli failed ({proc.returncode}): {proc.stderr}")
    if show:
        print(proc.stdout, end="")
        if proc.stderr:
            print(proc.stderr, end="")
    return proc


def main() -> None:
    workspace = tempfile.mkdtemp(prefix="jcli-demo-")
    runtime = tempfile.mkdtemp(prefix="jcli-demo-runtime-")
    os.environ["XDG_RUNTIME_DIR"] = runtime
    os.environ.pop("JCLI_JUPYTER_SERVER_URL", None)
    shutil.copy(os.path.join(HERE, "analysis.py"), workspace)
    os.chdir(workspace)
    print(f"workspace: {workspace}")
    try:
        run("server", "start")
        run("session", "create", "-n", "demo")

        code = (
            "import matplotlib.pyplot as plt\nprint('hello from the kernel')\nplt.figure(figsize=(3, 2)); plt.plot([1, 3, 2]); plt.show()"
        )
        result = json.loads(run("-j", "exec", "demo", "-c", code, show=False).stdout)
        print(json.dumps({k: result[k] for k in ("status", "text", "outputs", "run")}, indent=2))
        run("output", "list")
        run_dir = os.path.dirname(result["run"]["manifest"])
        print(f"files in {run_dir}: {sorted(os.listdir(run_dir))}")

        run("exec", "demo", "-f", "analysis.py")
        run("sidecar", "start")
        run("notebook", "outputs", "analysis.py", "--cell", "2")
        image = json.loads(run("-j", "notebook", "output", "analysis.py", "--cell", "2", "--output", "0", show=False).stdout)
        png = base64.b64decode(image["selected"]["data"])
        print(
            f"image: {image['selected']['mime_type']}, {len(png)} bytes, "
            f"{image['selected']['width']}x{image['selected']['height']} px, from {image['source']['path']} "
            f"(mapped {image['source']['mapping']})"
        )
        run("notebook", "output", "analysis.py", "--cell", "3", "--output", "0")
        status = json.loads(run("-j", "sidecar", "status", show=False).stdout)
        print(f"sidecar pid {status['pid']}: {status['requests_served']} requests, {status['cache']['entries']} notebook(s) cached")
        live_run()
    finally:
        subprocess.run([JCLI, "session", "kill", "demo"], capture_output=True)
        subprocess.run([JCLI, "sidecar", "stop"], capture_output=True)
        subprocess.run([JCLI, "server", "stop"], capture_output=True)
        os.chdir(HERE)
        shutil.rmtree(workspace, ignore_errors=True)
        shutil.rmtree(runtime, ignore_errors=True)
    print("\ndone: the session, the sidecar and the server are stopped.")


LIVE_CELL = "import time\nfor step in range(3):\n    print(f'step {step} at {time.time():.3f}', flush=True)\n    time.sleep(0.3)\n"


def text_of(notebook: dict) -> str:
    return "".join(o.get("text", "") for o in notebook["cells"][0].get("outputs") or [] if o.get("output_type") == "stream")


def live_run() -> None:
    """Step 7: a run seen from the person's side, when the embedded server has collaboration."""
    server = json.loads(run("-j", "server", "status", show=False).stdout)
    if not server.get("collaboration"):
        print("\n(live run skipped: the server has no collaboration; pip install 'j-cli[live]' brings it)")
        return
    import threading
    import time

    from jcli_sidecar.kernel import JupyterServer
    from jcli_sidecar.room.join import join_room

    with open("live.py", "w") as f:
        f.write("# %%\n" + LIVE_CELL)
    run("exec", "demo", "-f", "live.py", show=False)  # makes live.ipynb, the notebook the person opens
    joined = join_room(JupyterServer(server["url"], server["token"]), "live.ipynb", session="person")
    if joined.room is None:
        print(f"(live run skipped: {joined.reason})")
        return
    done = threading.Event()
    seen = set()

    def watch() -> None:  # the person's view: what their document holds, looked at every 20 ms
        seen.update(text_of(joined.room.read()).splitlines())  # the last run's lines, there when the person opened it
        while not done.wait(0.02):
            for line in text_of(joined.room.read()).splitlines():
                if line in seen:
                    continue
                seen.add(line)
                printed = float(line.rsplit(" ", 1)[1])
                print(f"  the person sees {line!r} {1000 * (time.time() - printed):.0f} ms after the kernel printed it", flush=True)

    with joined.room:
        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        lines = run("-j", "exec", "demo", "-f", "live.py", show=False).stdout.splitlines()
        done.set()
        watcher.join()
    summary = json.loads(lines[-1])
    print(f"live: {summary.get('live')} ({summary.get('live_reason')}); saved by the server: {summary.get('saved')}")


if __name__ == "__main__":
    main()
