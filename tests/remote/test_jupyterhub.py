"""j-cli through a real JupyterHub (tests/hubs.py): its proxy, its API tokens, a user's servers.

A user gives j-cli the server's public URL (``http://HUB/user/NAME/``, or
``/user/NAME/SERVER/`` for a named server) and an API token the hub made
for them. Through the hub's proxy the main job runs as on any Jupyter
Server: a session, inline code that plots (its image kept under
``.j-cli/outputs`` and read back), a notebook run, the kernel's variables.
A server that is not running, or still starting, is told as
``SERVER_NOT_RUNNING`` with where to start it, never as a confusing
redirect, and so is one that died before the hub noticed; a wrong, revoked or expired token is ``NOT_AUTHORIZED``; no token
is ever printed. The hub's own answers j-cli reads (the proxy's 302, the
hub's 424) are pinned with plain urllib, so a hub upgrade that changes them
fails here.
"""

from __future__ import annotations

import http.server
import json
import threading

import nbformat
import pytest
from helpers import run_cli
from hubs import call

PLOT = "import matplotlib.pyplot as plt\nprint('hello from the hub')\nplt.figure(figsize=(3, 2)); plt.plot([1, 3, 2]); plt.show()"
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def alice(jupyterhub):
    """alice's API token, made through the hub's REST API, and her default server, started with it."""
    token, _ = jupyterhub.new_token("alice")
    jupyterhub.start_server("alice", token=token)
    return token


@pytest.fixture(scope="module")
def bob(jupyterhub):
    """bob's API token; his server never runs."""
    return jupyterhub.new_token("bob")[0]


@pytest.fixture(autouse=True)
def _no_server_env(monkeypatch):
    for name in ("JCLI_JUPYTER_SERVER_URL", "JCLI_JUPYTER_SERVER_TOKEN"):
        monkeypatch.delenv(name, raising=False)


def _secret_free(result, *secrets: str):
    """``result`` after checking that no token appears in anything it printed."""
    for secret in secrets:
        assert secret.encode() not in result.stdout and secret.encode() not in result.stderr, "a token was printed"
    return result


def _on(url: str, token: str, *args: str, cwd, secrets: tuple[str, ...] = ()):
    return _secret_free(run_cli("-j", "-s", url, "-t", token, *args, cwd=cwd), token, *secrets)


def _ok(url: str, token: str, *args: str, cwd) -> dict:
    result = _on(url, token, *args, cwd=cwd)
    assert result.returncode == 0, (args, result.stderr)
    return result.json()


def _not_running(result, state: str, spawn_url: str) -> dict:
    err = result.error()
    assert result.returncode == 1 and err["code"] == "SERVER_NOT_RUNNING", err
    assert err["state"] == state and err["spawn_url"] == spawn_url, err
    return err


def test_the_main_job_runs_through_the_hubs_proxy(jupyterhub, alice, tmp_path, monkeypatch):
    here, url = tmp_path, jupyterhub.server_url("alice")
    assert url.endswith("/user/alice/")
    monkeypatch.setenv("JCLI_JUPYTER_SERVER_URL", url)  # the environment's way to give the server
    monkeypatch.setenv("JCLI_JUPYTER_SERVER_TOKEN", alice)

    def ok(*args: str) -> dict:
        result = _secret_free(run_cli("-j", *args, cwd=here), alice)
        assert result.returncode == 0, (args, result.stderr)
        return result.json()

    health = ok("healthcheck")
    assert health["server"] == url.rstrip("/") and health["server_kind"] == "jupyter_server", health
    created = ok("session", "create", "-n", "hubjob")
    kernel_id = created["kernel_id"]
    try:
        assert created["name"] == "hubjob" and created["kernel_in_cwd"] is True, created

        ran = ok("exec", "hubjob", "-c", PLOT)
        assert ran["status"] == "ok" and "hello from the hub" in ran["text"], ran
        images = [o for o in ran["outputs"] if o["type"] == "image"]
        assert len(images) == 1 and images[0]["path"].startswith(str(here / ".j-cli" / "outputs")), images
        kept = (here / images[0]["path"]).read_bytes()
        assert kept.startswith(PNG)
        shown = ok("output", "show", ran["run"]["run_id"], "--output", str(images[0]["output_index"]))
        assert shown["selected"]["mime_type"] == "image/png" and shown["selected"]["bytes"] == len(kept), shown["selected"]["bytes"]

        notebook = nbformat.v4.new_notebook()
        notebook.cells = [nbformat.v4.new_code_cell("answer = 6 * 7\nprint(answer)"), nbformat.v4.new_code_cell(PLOT)]
        nbformat.write(notebook, here / "x.ipynb")
        run = _secret_free(run_cli("-j", "exec", "hubjob", "--file", "x.ipynb", cwd=here), alice)
        assert run.returncode == 0, run.stderr
        summary = json.loads(run.stdout.splitlines()[-1])  # one JSON line per cell, then the summary
        assert summary["summary"]["cells_executed"] == 2 and summary["summary"]["notebook_updated"] is True, summary
        written = nbformat.read(here / "x.ipynb", as_version=4)
        assert written.cells[0].outputs[0]["text"] == "42\n"
        image = ok("notebook", "output", "x.ipynb", "--cell", "1", "--output", "1")
        assert image["selected"]["mime_type"] == "image/png", image["available_mime_types"]

        variables = ok("vars", "hubjob")["variables"]
        assert {"name": "answer", "value": "42"}.items() <= next(v for v in variables if v["name"] == "answer").items(), variables
        listed = ok("session", "list")["sessions"]
        assert [row["kernel_id"] for row in listed if row["name"] == "hubjob"] == [kernel_id]
    finally:
        killed = run_cli("-j", "session", "kill", kernel_id, cwd=here)
    assert killed.returncode == 0, killed.stderr


def test_a_named_server_is_told_stopped_starting_running_dead_and_stopped_again(jupyterhub, alice, tmp_path):
    url, spawn_url = jupyterhub.server_url("alice", "lab2"), f"{jupyterhub.url}hub/spawn/alice/lab2"
    # alice's default server runs, so the proxy hands /user/alice/lab2/ to it, which answers 404: j-cli asks the hub.
    before = _on(url, alice, "session", "create", "-n", "early", cwd=tmp_path)
    err = _not_running(before, "stopped", spawn_url)
    assert err["user"] == "alice" and err["server_name"] == "lab2" and err["http_status"] == 404, err
    assert err["start_api"] == f"POST {jupyterhub.url}hub/api/users/alice/servers/lab2", err

    with jupyterhub.hold("alice", "lab2"):  # the spawn waits at its gate: the server is still starting
        assert jupyterhub.start_server("alice", "lab2", token=alice, wait=False) == 202  # as alice, with her own token
        assert jupyterhub.server_model("alice", "lab2")["pending"] == "spawn"
        starting = _not_running(_on(url, alice, "healthcheck", cwd=tmp_path), "starting", spawn_url)
        assert "is still starting; run this again once it is ready" in starting["message"], starting
    jupyterhub.wait_ready("alice", "lab2")

    created = _ok(url, alice, "session", "create", "-n", "named", cwd=tmp_path)
    ran = _ok(url, alice, "exec", created["kernel_id"], "-c", "import os; print(os.environ['JUPYTERHUB_SERVER_NAME'])", cwd=tmp_path)
    assert ran["text"] == "lab2\n"

    jupyterhub.kill_server("alice", "lab2")  # it dies; the proxy still routes to it and answers 503
    dead = _on(url, alice, "exec", created["kernel_id"], "-c", "1", cwd=tmp_path)
    err = _not_running(dead, "unresponsive", spawn_url)
    assert err["http_status"] == 503 and dead.error()["executed"] is False, err
    assert f"stop it and start it again from the hub ({jupyterhub.url}hub/home)" in err["message"], err

    jupyterhub.stop_server("alice", "lab2")
    after = _on(url, alice, "exec", created["kernel_id"], "-c", "1", cwd=tmp_path)
    _not_running(after, "stopped", spawn_url)
    assert after.error()["executed"] is False
    human = _secret_free(run_cli("-s", url, "-t", alice, "vars", created["kernel_id"], cwd=tmp_path), alice)
    assert b"[SERVER_NOT_RUNNING]" in human.stderr and b"'lab2'" in human.stderr and b"is not running; start it at" in human.stderr


def test_a_default_server_that_is_not_running_says_where_to_start_it(jupyterhub, bob, tmp_path):
    url, spawn_url = jupyterhub.server_url("bob"), f"{jupyterhub.url}hub/spawn/bob"
    # What the hub answers, pinned: the proxy's default route sends /user/bob/... to the hub, which redirects
    # to its own page for the server, which answers API requests with 424 and the hub's words.
    status, headers, _ = call(f"{url}api/status", token=bob)
    assert (status, headers["location"]) == (302, "/hub/user/bob/api/status")
    status, _, body = call(f"{jupyterhub.url}hub/user/bob/api/status", token=bob)
    assert status == 424 and f"Restart the server at {spawn_url}" in json.loads(body)["message"]

    for args in (["healthcheck"], ["session", "create", "-n", "b"], ["session", "list"], ["kernelspec", "list"]):
        err = _not_running(_on(url, bob, *args, cwd=tmp_path), "stopped", spawn_url)
        assert err["http_status"] == 302 and err["hub_url"] == f"{jupyterhub.url}hub/", err
    human = _secret_free(run_cli("-s", url, "-t", bob, "healthcheck", cwd=tmp_path), bob)
    assert human.returncode == 1
    assert (
        f"[SERVER_NOT_RUNNING]: JupyterHub: bob's server at {url.rstrip('/')} is not running; start it at {spawn_url}".encode()
        in human.stderr
    )
    assert b"<html" not in human.stderr.lower()

    # The hub's own page for the server, given as the URL: its 424 is told the same way.
    direct = _on(f"{jupyterhub.url}hub/user/bob/", bob, "healthcheck", cwd=tmp_path)
    err = direct.error()
    assert direct.returncode == 1 and err["code"] == "SERVER_NOT_RUNNING" and err["http_status"] == 424, err
    assert spawn_url in err["server_message"]


def test_a_wrong_revoked_or_expired_token_is_not_authorized(jupyterhub, alice, bob, tmp_path):
    running, stopped = jupyterhub.server_url("alice"), jupyterhub.server_url("bob")
    revoked, revoked_id = jupyterhub.new_token("alice")
    status, _ = jupyterhub.api("DELETE", f"users/alice/tokens/{revoked_id}")
    assert status == 204
    expired, _ = jupyterhub.new_token("alice", expires_in=1)
    jupyterhub.wait_until(lambda: jupyterhub.api("GET", "user", token=expired)[0] == 403, "the token expires")  # by the hub's clock

    cases = [
        (running, "not-the-token", 403),  # the single-user server refuses it (its /api/status answers 403)
        (running, revoked, 403),
        (running, expired, 403),
        (running, bob, 403),  # a good token of another user
        (stopped, "not-the-token", 403),  # the hub refuses it when asked about the server
        (jupyterhub.server_url("alice", "lab3"), "not-the-token", 403),
    ]
    for url, token, http_status in cases:
        result = _on(url, token, "healthcheck", cwd=tmp_path, secrets=(alice, bob))
        err = result.error()
        assert result.returncode == 1 and err["code"] == "NOT_AUTHORIZED" and err["http_status"] == http_status, (url, err)
        assert "JCLI_JUPYTER_SERVER_TOKEN" in err["message"]


class _Elsewhere(http.server.BaseHTTPRequestHandler):
    """Answers everything with a redirect to a login page that carries a secret in its query."""

    def do_GET(self):
        self.send_response(302)
        self.send_header("Location", "http://127.0.0.1:9/login?token=s3cret-in-location&next=%2Fapi")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def test_a_redirect_elsewhere_is_server_unavailable_naming_where_it_points_redacted(tmp_path):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Elsewhere)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/base"
        result = _on(url, "my-token-1234", "healthcheck", cwd=tmp_path, secrets=("s3cret-in-location",))
        err = result.error()
        assert result.returncode == 1 and err["code"] == "SERVER_UNAVAILABLE" and err["http_status"] == 302, err
        assert err["location"] == "http://127.0.0.1:9/login?token=***&next=%2Fapi", err
        assert "give the URL of the Jupyter Server itself" in err["message"]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
