"""``-s`` takes a URL as a Jupyter Server prints it (``/lab?token=...``), against a real server.

The UI route is cut off, the token in the URL is used when no ``-t`` or
``JCLI_JUPYTER_SERVER_TOKEN`` is given (a given one wins), and the token is
never printed.
"""

from __future__ import annotations

import pytest
from helpers import run_cli


@pytest.fixture
def no_token_env(monkeypatch):
    for name in ("JCLI_JUPYTER_SERVER_URL", "JCLI_JUPYTER_SERVER_TOKEN"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("route", ["/lab?token={t}", "/tree?token={t}", "/lab/tree/a.ipynb?token={t}#cell", "/?token={t}&reset"])
@pytest.mark.parametrize("mode", [["-j"], []], ids=["json", "human"])
def test_a_printed_url_carries_its_token_and_never_shows_it(jupyter, no_token_env, tmp_path, route, mode):
    url = jupyter["url"].rstrip("/") + route.format(t=jupyter["token"])
    result = run_cli(*mode, "-s", url, "healthcheck", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    text = (result.stdout + result.stderr).decode()
    assert jupyter["token"] not in text and "/lab" not in text and "/tree" not in text
    if mode:
        assert result.json()["server"] == jupyter["url"].rstrip("/")


def test_the_environment_takes_a_printed_url_too(jupyter, no_token_env, tmp_path, monkeypatch):
    monkeypatch.setenv("JCLI_JUPYTER_SERVER_URL", f"{jupyter['url'].rstrip('/')}/lab?token={jupyter['token']}")
    result = run_cli("-j", "session", "list", cwd=tmp_path)
    assert result.returncode == 0 and jupyter["token"] not in (result.stdout + result.stderr).decode(), result.stderr


def test_a_token_given_on_its_own_wins_over_the_urls(jupyter, no_token_env, tmp_path):
    stale = f"{jupyter['url'].rstrip('/')}/lab?token=stale0123456789"
    right = run_cli("-j", "-s", stale, "-t", jupyter["token"], "healthcheck", cwd=tmp_path)
    assert right.returncode == 0, right.stderr
    wrong = run_cli("-j", "-s", stale, "healthcheck", cwd=tmp_path)
    err = wrong.error()
    assert wrong.returncode == 1 and err["code"] == "NOT_AUTHORIZED" and "token" in err["message"]
    assert "stale0123456789" not in (wrong.stdout + wrong.stderr).decode()


@pytest.mark.parametrize("url", ["http://me:{s}@host.invalid/?token={s}", "http://host.invalid/lab#token={s}"])
def test_a_secret_in_an_unreachable_printed_url_is_never_shown(tmp_path, no_token_env, url):
    secret = "s3cretvalue42"
    result = run_cli("-j", "-s", url.format(s=secret), "healthcheck", cwd=tmp_path)
    assert result.returncode != 0 and secret not in (result.stdout + result.stderr).decode()
    assert "Traceback" not in result.stderr.decode()
