"""A stale read through the sidecar: a restored mtime must not fool the cache.

An in-place, same-size rewrite that sets the old mtime back (``touch -r``,
``os.utime``, a tool restoring timestamps) keeps ``(dev, ino, size,
mtime)`` unchanged. The ctime cannot be set back by a user: the rewrite and
the ``utime`` both move it, so the cache keys on it too and applies the
racy-timestamp rule to it. Tested in-process and through a real sidecar, with
the racy window at its default (the rule) and at 0 (the key alone).
"""

from __future__ import annotations

import os
import shutil

import pytest
from helpers import FIXTURES, run_cli

from jcli_sidecar.read.reader import read_output
from jcli_sidecar.sidecar.cache import RACY_NS, NotebookCache, racy_from_env

V45 = FIXTURES / "kernel_v4.5.ipynb"
OLD = 1_600_000_000
READ = ["-j", "notebook", "output", "kernel_v4.5.ipynb", "--cell", "1", "--output", "1"]


@pytest.fixture
def notebook(tmp_path):
    path = tmp_path / "nb.ipynb"
    shutil.copy(V45, path)
    os.utime(path, (OLD, OLD))
    return os.path.realpath(path)


def stream_text(cache, path) -> str:
    return read_output(path, 1, 1, load=cache.load)["stream"]["data"]


def rewrite_same_size_keeping_the_mtime(path: str, old: bytes, new: bytes) -> None:
    """Replace ``old`` by ``new`` (same length) in place, then put the mtime back; wait out one clock tick for the ctime.

    The loop ends as soon as the ctime differs from the one before the
    rewrite (at most one coarse clock tick): without that, a rewrite in the
    same tick as the copy would be invisible to any timestamp, which is
    what the racy window is for, not what this test is about.
    """
    assert len(old) == len(new)
    before = os.stat(path)
    with open(path, "r+b") as fh:
        data = fh.read()
        assert data.count(old) == 1
        fh.seek(0)
        fh.write(data.replace(old, new))
    while True:
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
        after = os.stat(path)
        if after.st_ctime_ns != before.st_ctime_ns:
            break
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns, before.st_ino)


def test_a_restored_mtime_does_not_serve_stale_content(notebook):
    cache = NotebookCache(64 << 20)  # the defaults the sidecar uses
    assert stream_text(cache, notebook) == "warned\n"
    rewrite_same_size_keeping_the_mtime(notebook, b'"warned\\n"', b'"WARNED\\n"')
    assert stream_text(cache, notebook) == "WARNED\n"
    rewrite_same_size_keeping_the_mtime(notebook, b'"WARNED\\n"', b'"wArned\\n"')
    assert stream_text(cache, notebook) == "wArned\n"


def test_the_ctime_in_the_key_catches_it_even_with_no_racy_window(notebook):
    cache = NotebookCache(64 << 20, racy_ns=0)  # every entry trusted at once: only the key protects
    assert stream_text(cache, notebook) == "warned\n"
    assert cache.load(notebook) is cache.load(notebook)  # trusted, and reused
    rewrite_same_size_keeping_the_mtime(notebook, b'"warned\\n"', b'"WARNED\\n"')
    assert stream_text(cache, notebook) == "WARNED\n"


def test_is_fresh_sees_the_rewrite_too(notebook):
    cache = NotebookCache(64 << 20, racy_ns=0)
    cache.load(notebook)
    assert cache.is_fresh(notebook)
    rewrite_same_size_keeping_the_mtime(notebook, b'"warned\\n"', b'"WARNED\\n"')
    assert not cache.is_fresh(notebook)


def test_a_chmod_alone_moves_the_ctime_and_is_re_read(notebook):
    cache = NotebookCache(64 << 20, racy_ns=0)
    first = cache.load(notebook)
    before = os.stat(notebook).st_ctime_ns
    while os.stat(notebook).st_ctime_ns == before:  # at most one clock tick
        os.chmod(notebook, 0o644)
    assert cache.load(notebook) is not first


@pytest.mark.slow
@pytest.mark.parametrize("racy_ms", [None, "0"], ids=["default-racy-window", "no-racy-window"])
def test_through_the_sidecar_a_restored_mtime_never_serves_stale_content(fixture_dir, sidecar_on, monkeypatch, racy_ms):
    if racy_ms is not None:
        monkeypatch.setenv("JCLI_SIDECAR_RACY_MS", racy_ms)
    path = str(fixture_dir / "kernel_v4.5.ipynb")
    os.utime(path, (OLD, OLD))
    assert run_cli("-j", "sidecar", "start", cwd=fixture_dir).returncode == 0
    words = [b"warned", b"WARNED", b"wArned", b"waRned", b"warNed", b"warnEd", b"warneD"]
    assert run_cli(*READ, cwd=fixture_dir).json()["stream"]["data"] == "warned\n"
    for old, new in zip(words, words[1:], strict=False):  # the issue saw 2 stale answers in 6 tries
        assert run_cli(*READ, cwd=fixture_dir).json()["stream"]["data"] == old.decode() + "\n"  # cached now
        rewrite_same_size_keeping_the_mtime(path, b'"' + old + b'\\n"', b'"' + new + b'\\n"')
        assert run_cli(*READ, cwd=fixture_dir).json()["stream"]["data"] == new.decode() + "\n"


@pytest.mark.parametrize(
    "raw, expected", [("", RACY_NS), ("0", 0), ("2500", 2_500_000_000), ("-1", RACY_NS), ("x", RACY_NS), ("inf", RACY_NS)]
)
def test_the_racy_window_setting(monkeypatch, raw, expected):
    monkeypatch.setenv("JCLI_SIDECAR_RACY_MS", raw)
    assert racy_from_env() == expected
