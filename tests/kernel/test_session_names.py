"""The names file j-cli keeps per server (jcli_sidecar/kernel/session_names.py), on real files, no server.

What it reads (only this user's own regular file, in its format), how it
writes (0600, whole, by a rename that never follows a link), that
concurrent writers under its lock lose nothing, and its lock's refusals.
The same rules against real gateways: tests/remote/test_remote_names.py.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from jcli_sidecar.base import private_lock
from jcli_sidecar.kernel.session_names import MEMORY_MAX_BYTES, NameMemory, server_key

URL = "http://127.0.0.1:8888/gw"
K1, K2 = "11111111-2222-4333-8444-555555555555", "66666666-7777-4888-8999-aaaaaaaaaaaa"
S1 = "bbbbbbbb-cccc-4ddd-8eee-ffffffffffff"


def _entry(kernel_id: str, session_id: str | None = None) -> dict:
    return {"kernel_id": kernel_id, "session_id": session_id, "path": "p", "kernel_name": "python3", "created": "2026-01-01T00:00:00Z"}


@pytest.fixture
def memory(tmp_path) -> NameMemory:
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    return NameMemory(URL, URL, str(runtime))


def _write_doc(path: str, sessions: dict, mode: int = 0o600) -> None:
    Path(path).write_text(json.dumps({"schema_version": 1, "server": URL, "sessions": sessions}))
    os.chmod(path, mode)


def test_the_file_is_named_by_the_url_and_never_holds_the_token(tmp_path):
    memory = NameMemory("http://me:s3cret@127.0.0.1:8888/gw/", "http://***@127.0.0.1:8888/gw", str(tmp_path))
    assert os.path.basename(memory.path) == server_key(URL) + ".names.json"
    with memory.changing() as entries:
        entries["job"] = _entry(K1, S1)
    text = Path(memory.path).read_text()
    assert "s3cret" not in text and "s3cret" not in memory.path and json.loads(text)["server"] == "http://***@127.0.0.1:8888/gw"


def test_a_change_is_written_whole_0600_and_read_back(memory):
    with memory.changing() as entries:
        assert entries == {}
        entries["job"] = _entry(K1, S1)
    info = os.lstat(memory.path)
    assert stat.S_ISREG(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o600
    assert memory.entries() == {"job": _entry(K1, S1)}
    assert [name for name in os.listdir(os.path.dirname(memory.path)) if ".jcli-" in name] == []  # no temp file left


def test_an_unchanged_memory_writes_nothing(memory):
    with memory.changing():
        pass
    assert not os.path.lexists(memory.path)


def test_forgetting_the_last_name_removes_the_file_and_forgetting_nothing_takes_no_lock(memory):
    assert memory.forget({K1}) == [] and not os.path.lexists(memory.lock_path)
    with memory.changing() as entries:
        entries.update(one=_entry(K1), two=_entry(K2))
    assert memory.forget({K1}) == ["one"] and list(memory.entries()) == ["two"]
    assert memory.forget({K2}) == ["two"] and not os.path.lexists(memory.path)


def test_only_well_formed_entries_count(memory):
    _write_doc(
        memory.path,
        {
            "good": _entry(K1),
            "bad-kernel": {"kernel_id": "../../etc/passwd"},
            "bad-session": {"kernel_id": K2, "session_id": "s1"},
            "bad-field": {**_entry(K2), "kernel_name": ["x"]},
            "not-a-map": K2,
            "": _entry(K2),
        },
    )
    assert list(memory.entries()) == ["good"]


def _plant(path: str, kind: str, elsewhere: Path) -> None:
    good = json.dumps({"schema_version": 1, "server": URL, "sessions": {"planted": _entry(K1)}})
    if kind == "symlink":
        elsewhere.write_text(good)
        os.symlink(elsewhere, path)
    elif kind == "fifo":
        os.mkfifo(path, 0o600)
    elif kind == "directory":
        os.mkdir(path, 0o700)
    elif kind == "others_can_write":
        Path(path).write_text(good)
        os.chmod(path, 0o622)
    elif kind == "hard_link":
        elsewhere.write_text(good)
        os.chmod(elsewhere, 0o600)
        os.link(elsewhere, path)
    elif kind == "too_big":
        Path(path).write_text(good[:-1] + " " * MEMORY_MAX_BYTES + "}")
        os.chmod(path, 0o600)
    elif kind == "too_deep":
        Path(path).write_text('{"schema_version": 1, "sessions": ' + "[" * 5000 + "]" * 5000 + "}")
        os.chmod(path, 0o600)
    elif kind == "garbage":
        Path(path).write_bytes(b"\x00\xff{not json")
        os.chmod(path, 0o600)
    elif kind == "other_version":
        Path(path).write_text(good.replace('"schema_version": 1', '"schema_version": 2'))
        os.chmod(path, 0o600)


KINDS = ["symlink", "fifo", "directory", "others_can_write", "hard_link", "too_big", "too_deep", "garbage", "other_version"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_planted_file_is_ignored_then_replaced_never_followed(memory, tmp_path, kind):
    elsewhere = tmp_path / "elsewhere.json"
    _plant(memory.path, kind, elsewhere)
    before = elsewhere.read_bytes() if elsewhere.exists() else None
    assert memory.entries() == {}  # a FIFO does not block: the test would hang
    if kind == "directory":
        with memory.changing() as entries:
            entries["job"] = _entry(K2)
        assert isinstance(memory.failed, OSError) and os.path.isdir(memory.path)  # cannot replace it: kept aside, nothing lost
        return
    with memory.changing() as entries:
        assert entries == {}
        entries["job"] = _entry(K2)
    assert memory.failed is None and list(memory.entries()) == ["job"]
    info = os.lstat(memory.path)
    assert stat.S_ISREG(info.st_mode) and info.st_nlink == 1 and stat.S_IMODE(info.st_mode) == 0o600
    if before is not None:
        assert elsewhere.read_bytes() == before  # the link's target is untouched


def test_another_users_file_is_ignored(memory):
    _write_doc(memory.path, {"planted": _entry(K1)})
    assert list(memory.entries()) == ["planted"]
    os.chown(memory.path, 65534, 65534)  # as root: the same bytes, owned by nobody
    assert memory.entries() == {}


@pytest.mark.parametrize("kind", ["symlink", "fifo", "other_owner"])
def test_the_lock_is_never_taken_through_a_link_nor_on_what_is_not_ours(tmp_path, kind):
    path = tmp_path / "x.names.lock"
    target = tmp_path / "target"
    if kind == "symlink":
        os.symlink(target, path)
    elif kind == "fifo":
        os.mkfifo(path, 0o600)
    else:
        path.write_bytes(b"")
        os.chown(path, 65534, 65534)
    with pytest.raises(OSError) as caught:
        with private_lock(str(path)):
            pass
    assert caught.value.errno in (errno.ELOOP, errno.EINVAL)
    assert not target.exists()


_WRITER = """
import sys
from jcli_sidecar.kernel.session_names import NameMemory
memory = NameMemory(sys.argv[1], sys.argv[1], sys.argv[2])
for number in range(int(sys.argv[4])):
    with memory.changing() as entries:
        entries[f"{sys.argv[3]}-{number}"] = {"kernel_id": f"{number:08x}-0000-4000-8000-{sys.argv[5]}", "session_id": None}
"""


def test_writers_at_once_lose_no_name(memory):
    directory = os.path.dirname(memory.path)
    writers = [
        subprocess.Popen([sys.executable, "-c", _WRITER, URL, directory, side, "25", suffix * 12])
        for side, suffix in (("left", "a"), ("right", "b"), ("third", "c"))
    ]
    assert [writer.wait(timeout=120) for writer in writers] == [0, 0, 0]
    names = memory.entries()
    assert len(names) == 75 and {name.split("-")[0] for name in names} == {"left", "right", "third"}
