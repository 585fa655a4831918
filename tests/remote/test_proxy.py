"""Servers behind a proxy: j-cli tunnels through the proxy the environment names, with a real proxy process.

The proxy is proxy.py on loopback (``tests/remote/proxy_hosts.py``). The server URL
is ``http://jupyter.proxied.test:PORT``, a name that only the proxy resolves
(to a real Jupyter Server on 127.0.0.1): j-cli cannot resolve it itself, so
every success here went through the proxy, websocket included. Loopback is
never proxied, so the same server by its loopback URL works past a dead proxy.
"""

from __future__ import annotations

import json
import os
import socket

import pytest
from helpers import environ_set, run_cli, servers_under
from proxy_hosts import LocalProxy

from jcli_sidecar.base.errors import UsageError
from jcli_sidecar.kernel.proxy_route import bypassed, is_loopback, proxy_environment, proxy_for

PROXIED = "jupyter.proxied.test"
SECRET = "pr0xy-s3cret"


@pytest.fixture(scope="module")
def proxied_jupyter(tmp_path_factory, starts_jupyter):
    """A real embedded Jupyter Server that also answers to the proxied name (its Host check allows it)."""
    from jcli.embedded import EmbeddedServer

    config = tmp_path_factory.mktemp("proxied-config")
    (config / "jupyter_server_config.json").write_text(json.dumps({"ServerApp": {"local_hostnames": ["localhost", PROXIED]}}))
    runtime = tmp_path_factory.mktemp("proxied-runtime")
    runtime.chmod(0o700)
    root = tmp_path_factory.mktemp("proxied-root")
    with environ_set(XDG_RUNTIME_DIR=str(runtime), JUPYTER_CONFIG_DIR=str(config)):
        server = EmbeddedServer(os.path.realpath(root), str(runtime))
        state = server.start()
    port = int(state["url"].rstrip("/").rsplit(":", 1)[1])
    try:
        yield {"loopback": state["url"].rstrip("/"), "proxied": f"http://{PROXIED}:{port}", "token": state["token"], "port": port}
    finally:
        server.stop()
        for proc in servers_under(runtime):
            proc.kill()
            raise AssertionError(f"the Jupyter Server {proc.pid} survived its stop")


@pytest.fixture(scope="module")
def proxy(tmp_path_factory):
    running = LocalProxy(tmp_path_factory.mktemp("proxy")).start()
    yield running
    running.stop()


@pytest.fixture(scope="module")
def auth_proxy(tmp_path_factory):
    running = LocalProxy(tmp_path_factory.mktemp("auth-proxy"), basic_auth=f"agent:{SECRET}").start()
    yield running
    running.stop()


@pytest.fixture
def clean_env(monkeypatch):
    """No proxy variable and no server of the caller's leaks into a test."""
    for name in (*proxy_environment(), "JCLI_JUPYTER_SERVER_URL", "JCLI_JUPYTER_SERVER_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def _dead_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _text(result) -> str:
    return (result.stdout + result.stderr).decode(errors="replace")


# -- through the proxy, against a real server ----------------------------------------------


@pytest.mark.transport
def test_a_session_runs_and_its_outputs_are_read_through_the_proxy(proxied_jupyter, proxy, clean_env, tmp_path, exec_path, request):
    clean_env.setenv("HTTP_PROXY", proxy.url())
    clean_env.setenv("JCLI_JUPYTER_SERVER_URL", proxied_jupyter["proxied"])
    clean_env.setenv("JCLI_JUPYTER_SERVER_TOKEN", proxied_jupyter["token"])
    exec_path(tmp_path)
    name = f"px-{os.urandom(3).hex()}"
    created = run_cli("-j", "session", "create", "-n", name, cwd=tmp_path)
    assert created.returncode == 0, created.stderr
    try:
        code = "from IPython.display import HTML, display\nprint(6 * 7)\ndisplay(HTML('<b>through</b>'))"
        ran = run_cli("-j", "exec", name, "-c", code, cwd=tmp_path)
        assert ran.returncode == 0, ran.stderr
        doc = ran.json()
        assert doc["status"] == "ok" and doc["text"].startswith("42")
        runs = run_cli("-j", "output", "list", cwd=tmp_path)
        assert runs.returncode == 0, runs.stderr
        run_id = runs.json()["runs"][0]["run_id"]
        html = run_cli("-j", "output", "show", run_id, "--output", "1", "--mime", "text/html", cwd=tmp_path)
        assert html.returncode == 0, html.stderr
        assert "<b>through</b>" in html.json()["selected"]["data"]
    finally:
        assert run_cli("session", "kill", name, cwd=tmp_path).returncode == 0
    assert f"CONNECT {PROXIED}:{proxied_jupyter['port']}" in proxy.connects()
    if request.node.callspec.params["exec_path"] == "sidecar":  # the sidecar held the kernel connection, opened through the tunnel
        status = run_cli("-j", "sidecar", "status", cwd=tmp_path).json()
        assert status["kernels"]["opened"] >= 1


def test_no_proxy_sends_the_server_direct(proxied_jupyter, proxy, clean_env, tmp_path):
    clean_env.setenv("HTTP_PROXY", proxy.url())
    before = len(proxy.connects())
    for entry in (PROXIED, ".proxied.test", "*.proxied.test", f"{PROXIED}:{proxied_jupyter['port']}", "*"):
        clean_env.setenv("NO_PROXY", f"example.org, {entry}")
        result = run_cli("-j", "-s", proxied_jupyter["proxied"], "-t", proxied_jupyter["token"], "healthcheck", cwd=tmp_path)
        err = result.error()
        assert result.returncode == 1 and err["code"] == "SERVER_UNAVAILABLE", entry
        assert f"cannot connect to {PROXIED}:{proxied_jupyter['port']}" in err["message"] and "proxy" not in err, err
    assert len(proxy.connects()) == before  # nothing reached the proxy
    clean_env.setenv("NO_PROXY", f"{PROXIED}:1")  # another port: proxied again
    health = run_cli("-j", "-s", proxied_jupyter["proxied"], "-t", proxied_jupyter["token"], "healthcheck", cwd=tmp_path)
    assert health.returncode == 0 and health.json()["proxy"] == {"url": proxy.url(), "variable": "HTTP_PROXY"}


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_loopback_is_never_proxied_whatever_the_variables_say(jupyter, clean_env, tmp_path, host):
    dead = f"http://127.0.0.1:{_dead_port()}"
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "HTTPS_PROXY"):
        clean_env.setenv(name, dead)
    url = jupyter["url"].rstrip("/").replace("127.0.0.1", host)
    clean_env.setenv("JCLI_JUPYTER_SERVER_URL", url)
    clean_env.setenv("JCLI_JUPYTER_SERVER_TOKEN", jupyter["token"])
    health = run_cli("-j", "healthcheck", cwd=tmp_path)
    assert health.returncode == 0 and health.json()["proxy"] is None, health.stderr
    name = f"lo-{os.urandom(3).hex()}"
    assert run_cli("session", "create", "-n", name, cwd=tmp_path).returncode == 0
    try:
        ran = run_cli("-j", "exec", name, "-c", "print('direct')", cwd=tmp_path)
        assert ran.returncode == 0 and ran.json()["text"] == "direct\n", ran.stderr
    finally:
        run_cli("session", "kill", name, cwd=tmp_path)


def test_the_embedded_server_is_never_proxied(starts_jupyter, clean_env, tmp_path):
    clean_env.setenv("ALL_PROXY", f"http://127.0.0.1:{_dead_port()}")
    clean_env.setenv("http_proxy", f"http://127.0.0.1:{_dead_port()}")
    try:
        assert run_cli("session", "create", "-n", "emb", cwd=tmp_path).returncode == 0
        ran = run_cli("-j", "exec", "emb", "-c", "print('embedded')", cwd=tmp_path)
        assert ran.returncode == 0 and ran.json()["text"] == "embedded\n", ran.stderr
    finally:
        assert run_cli("server", "stop", cwd=tmp_path).returncode == 0


# -- proxy credentials and failures --------------------------------------------------------


@pytest.mark.transport
def test_a_proxy_that_wants_credentials_gets_them_from_its_url_and_never_shows_them(
    proxied_jupyter, auth_proxy, clean_env, tmp_path, exec_path, isolated_runtime
):
    clean_env.setenv("JCLI_JUPYTER_SERVER_URL", proxied_jupyter["proxied"])
    clean_env.setenv("JCLI_JUPYTER_SERVER_TOKEN", proxied_jupyter["token"])
    exec_path(tmp_path)
    clean_env.setenv("http_proxy", auth_proxy.url(f"agent:{SECRET}"))
    name = f"auth-{os.urandom(3).hex()}"
    created = run_cli("-j", "session", "create", "-n", name, cwd=tmp_path)
    assert created.returncode == 0, created.stderr
    try:
        ran = run_cli("-j", "exec", name, "-c", "print('authorised')", cwd=tmp_path)
        assert ran.returncode == 0 and ran.json()["text"] == "authorised\n", ran.stderr
        for userinfo in ("", "agent:wrong-password", f"someone:{SECRET}x"):
            clean_env.setenv("http_proxy", auth_proxy.url(userinfo))
            for argv in (["healthcheck"], ["exec", name, "-c", "print(1)"]):
                refused = run_cli("-j", *argv, cwd=tmp_path)
                err = refused.error()
                assert refused.returncode == 1 and err["code"] == "PROXY_AUTH_REQUIRED", _text(refused)
                assert err["proxy_status"] == 407 and err["proxy_variable"] == "http_proxy"
                assert "407" in err["message"] and "(from http_proxy)" in err["message"]
                assert SECRET not in _text(refused) and "wrong-password" not in _text(refused)
        human = run_cli("healthcheck", cwd=tmp_path)
        assert human.returncode == 1 and "wrong" not in _text(human) and SECRET not in _text(human)
    finally:
        clean_env.setenv("http_proxy", auth_proxy.url(f"agent:{SECRET}"))
        assert run_cli("session", "kill", name, cwd=tmp_path).returncode == 0
    for log in isolated_runtime.rglob("*.log"):  # a sidecar's log, if one ran: no password in it either
        assert SECRET not in log.read_text(errors="replace")


def test_a_dead_proxy_is_server_unavailable_naming_it_and_its_variable(clean_env, tmp_path):
    port = _dead_port()
    clean_env.setenv("HTTPS_PROXY", f"http://agent:{SECRET}@127.0.0.1:{port}")
    result = run_cli("-j", "-s", f"https://{PROXIED}", "-t", "x", "healthcheck", cwd=tmp_path)
    err = result.error()
    assert result.returncode == 1 and err["code"] == "SERVER_UNAVAILABLE"
    assert f"the proxy http://***@127.0.0.1:{port} (from HTTPS_PROXY)" in err["message"]
    assert err["proxy"] == f"http://***@127.0.0.1:{port}" and err["proxy_variable"] == "HTTPS_PROXY"
    assert SECRET not in _text(result)


def test_a_proxy_that_cannot_reach_the_server_is_server_unavailable_with_its_status(proxy, clean_env, tmp_path):
    clean_env.setenv("http_proxy", proxy.url())
    result = run_cli("-j", "-s", f"http://{PROXIED}:{_dead_port()}", "-t", "x", "healthcheck", cwd=tmp_path)
    err = result.error()
    assert result.returncode == 1 and err["code"] == "SERVER_UNAVAILABLE", _text(result)
    assert 500 <= err["proxy_status"] < 600 and f"answered {err['proxy_status']}" in err["message"]


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("https://proxy.corp:3128", "https:// proxy"),
        ("socks5://proxy.corp:1080", "socks5:// proxy"),
        (f"http://agent:{SECRET}@proxy.corp:99999", "malformed"),
    ],
)
def test_a_proxy_j_cli_cannot_speak_to_is_a_usage_error_before_anything_is_sent(clean_env, tmp_path, value, words):
    clean_env.setenv("HTTPS_PROXY", value)
    result = run_cli("-j", "-s", f"https://{PROXIED}", "-t", "x", "healthcheck", cwd=tmp_path)
    err = result.error()
    assert result.returncode == 2 and err["code"] == "USAGE_ERROR" and words in err["message"] and "HTTPS_PROXY" in err["message"]
    assert SECRET not in _text(result)


# -- the sidecar routes by its client's variables ------------------------------------------


def test_the_sidecar_routes_by_the_clients_proxy_variables_not_its_own(proxied_jupyter, proxy, clean_env, sidecar_on, tmp_path):
    clean_env.setenv("JCLI_JUPYTER_SERVER_URL", proxied_jupyter["proxied"])
    clean_env.setenv("JCLI_JUPYTER_SERVER_TOKEN", proxied_jupyter["token"])
    assert run_cli("-j", "sidecar", "start", cwd=tmp_path).returncode == 0  # started with no proxy variable at all
    clean_env.setenv("HTTP_PROXY", proxy.url())
    name = f"sc-{os.urandom(3).hex()}"
    assert run_cli("session", "create", "-n", name, cwd=tmp_path).returncode == 0
    try:
        ran = run_cli("-j", "exec", name, "-c", "print('via the sidecar')", cwd=tmp_path)
        assert ran.returncode == 0 and ran.json()["text"] == "via the sidecar\n", ran.stderr
        assert run_cli("-j", "sidecar", "status", cwd=tmp_path).json()["kernels"]["opened"] == 1
        job = run_cli("-j", "exec", name, "-c", "print('a job through the tunnel')", "--background", cwd=tmp_path)
        assert job.returncode == 0, job.stderr
        waited = run_cli("-j", "job", "wait", job.json()["job_id"], cwd=tmp_path)
        ended = waited.json()["jobs"][0]
        assert ended["state"] == "ok" and ended["result"]["text"] == "a job through the tunnel\n", waited.stdout
        opened = run_cli("-j", "sidecar", "status", cwd=tmp_path).json()["kernels"]["opened"]
        clean_env.setenv("NO_PROXY", ".proxied.test")  # this client says direct: the held connection is not its route
        direct = run_cli("-j", "exec", name, "-c", "print(2)", cwd=tmp_path)
        assert direct.returncode == 1 and direct.error()["code"] == "SERVER_UNAVAILABLE", _text(direct)
        assert run_cli("-j", "sidecar", "status", cwd=tmp_path).json()["kernels"]["opened"] == opened
        refused = run_cli("-j", "exec", name, "-c", "print(3)", "--background", cwd=tmp_path)
        assert refused.returncode == 1 and refused.error()["code"] == "SERVER_UNAVAILABLE", _text(refused)
    finally:
        clean_env.delenv("NO_PROXY")
        assert run_cli("session", "kill", name, cwd=tmp_path).returncode == 0


# -- the route itself: which variable, which hosts -----------------------------------------


def _route(url: str, **env: str):
    route = proxy_for(url, env)
    return None if route is None else (route.host, route.port, route.variable)


def test_the_scheme_picks_the_variable_and_all_proxy_is_the_fallback():
    assert _route("http://h:1", http_proxy="p:3", https_proxy="q:4") == ("p", 3, "http_proxy")
    assert _route("https://h", http_proxy="p:3", https_proxy="q:4") == ("q", 4, "https_proxy")
    assert _route("wss://h/api", HTTPS_PROXY="http://q") == ("q", 80, "HTTPS_PROXY")
    assert _route("https://h", http_proxy="p:3", ALL_PROXY="a:5") == ("a", 5, "ALL_PROXY")
    assert _route("https://h", http_proxy="p:3") is None


def test_the_lower_case_spelling_wins_and_an_empty_one_means_none():
    assert _route("http://h", http_proxy="low:1", HTTP_PROXY="up:2") == ("low", 1, "http_proxy")
    assert _route("http://h", http_proxy="", HTTP_PROXY="up:2") is None
    assert _route("http://h", http_proxy=" ", all_proxy="a:3") == ("a", 3, "all_proxy")
    assert _route("http://h", HTTP_PROXY="up:2", no_proxy="", NO_PROXY="h") == ("up", 2, "HTTP_PROXY")  # empty: no list


@pytest.mark.parametrize(
    ("host", "port", "no_proxy", "direct"),
    [
        ("a.corp.example", 80, "corp.example", True),
        ("corp.example", 80, ".corp.example", True),
        ("a.corp.example", 80, "*.corp.example", True),
        ("badcorp.example", 80, "corp.example", False),
        ("A.Corp.Example.", 80, "corp.example", True),
        ("anything", 80, "*", True),
        ("anything", 80, "a, *, b", True),
        ("h", 8888, "h:8888", True),
        ("h", 8889, "h:8888", False),
        ("10.1.2.3", 80, "10.0.0.0/8", True),
        ("11.1.2.3", 80, "10.0.0.0/8", False),
        ("10.1.2.3", 80, "10.1.2.3", True),
        ("fd00::5", 80, "fd00::/8", True),
        ("fe80::5", 80, "fd00::/8", False),
        ("fd00::5", 8888, "[fd00::5]:8888", True),
        ("fd00::5", 80, "fd00::5", True),
        ("name.example", 80, "10.0.0.0/8,  192.168.0.1", False),
        ("h", 80, "bogus/99, ,,", False),
    ],
)
def test_no_proxy_entries_read_as_curl_and_urllib_read_them(host, port, no_proxy, direct):
    assert bypassed(host, port, no_proxy) is direct


@pytest.mark.parametrize("host", ["localhost", "LOCALHOST.", "a.localhost", "127.0.0.1", "127.255.0.9", "::1", "[::1]", "::ffff:127.0.0.1"])
def test_loopback_hosts_are_recognised(host):
    assert is_loopback(host)
    bracketed = f"[{host.strip('[]')}]" if ":" in host else host
    assert proxy_for(f"http://{bracketed}:8888", {"all_proxy": "p:1", "HTTP_PROXY": "p:1"}) is None


@pytest.mark.parametrize("host", ["10.0.0.1", "localhost.example", "::2", "128.0.0.1", "mylocalhost"])
def test_other_hosts_are_not_loopback(host):
    assert not is_loopback(host)


def test_credentials_become_basic_authorization_and_never_appear_in_what_is_shown():
    route = proxy_for("https://hub.example", {"https_proxy": f"http://ag%40ent:{SECRET}%2F@proxy.corp:3128/ignored"})
    assert route is not None and route.authorization is not None
    import base64

    assert base64.b64decode(route.authorization.split()[1]).decode() == f"ag@ent:{SECRET}/"
    assert route.shown == "http://***@proxy.corp:3128"
    assert SECRET not in repr(route) and SECRET not in route.named()


def test_a_bad_proxy_variable_is_a_usage_error_naming_it_never_its_password():
    with pytest.raises(UsageError) as caught:
        proxy_for("https://h", {"ALL_PROXY": f"socks5h://u:{SECRET}@p:1080"})
    assert "ALL_PROXY" in caught.value.message and SECRET not in caught.value.message
    with pytest.raises(UsageError, match="names no host"):
        proxy_for("http://h", {"http_proxy": "http://:3128"})
