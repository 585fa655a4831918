"""The order in which a kernel's messages arrive decides whether a run ended; a scripted websocket replays each order.

A kernel answers on two channels: the shell reply goes out from its shell
thread, the iopub broadcasts from its own I/O thread. On a loaded machine
the shell reply can arrive first. Right after ``j-cli kernel restart`` the
new kernel's iopub ``status: starting`` can then come after the reply to
the first request: a kernel that started, not one that restarted during
the run. Each kernel process signs its messages with its own
``header.session``, which tells the two apart. These orders cannot be
caused on demand with a real kernel (they need the kernel's I/O thread to
lose a race), so these tests feed the client the messages through a
websocket stand-in; everything else is the real client.
"""

from __future__ import annotations

import json

import pytest

from jcli_sidecar.base.errors import KernelDied
from jcli_sidecar.kernel.kernel_client import KernelConnection


class ScriptedSocket:
    """A kernel websocket that answers each request sent with the messages a script builds for it."""

    def __init__(self, script):
        self.script = script
        self.queue: list[str] = []
        self.closed = False

    def send_text(self, text: str) -> None:
        request = json.loads(text)
        self.queue.extend(json.dumps(msg) for msg in self.script(request["header"]["msg_id"]))

    def buffered(self) -> bool:
        return bool(self.queue)

    def recv(self, timeout=None) -> str:
        if not self.queue:
            raise TimeoutError("the script has no more messages")
        return self.queue.pop(0)

    def close(self) -> None:
        self.closed = True


class ScriptedServer:
    def __init__(self, script):
        self.socket = ScriptedSocket(script)
        self.interrupted = 0

    def channels(self, kernel_id: str, session_id: str) -> ScriptedSocket:
        return self.socket

    def interrupt(self, kernel_id: str) -> None:
        self.interrupted += 1


NEW, OLD = "kernel-process-2", "kernel-process-1"  # the header.session of a restarted kernel, and of the one before it


def _msg(channel: str, msg_type: str, content: dict, parent: str | None, sender: str = NEW) -> dict:
    header = {"msg_id": f"{channel}-{msg_type}", "msg_type": msg_type, "session": sender, "date": "2026-01-01T00:00:00.000000Z"}
    return {"channel": channel, "header": header, "parent_header": {"msg_id": parent} if parent else {}, "content": content}


def _status(state: str, parent: str | None, sender: str = NEW) -> dict:
    return _msg("iopub", "status", {"execution_state": state}, parent, sender)


def _shutdown_reply(sender: str) -> dict:
    return _msg("iopub", "shutdown_reply", {"restart": True}, None, sender)


def _reply(parent: str, sender: str = NEW) -> dict:
    return _msg("shell", "execute_reply", {"status": "ok", "execution_count": 1}, parent, sender)


def _run(mine: str, sender: str = NEW) -> list[dict]:
    """The iopub broadcasts of one request that prints ``False``."""
    return [
        _status("busy", mine, sender),
        _msg("iopub", "execute_input", {"code": "'kept' in dir()", "execution_count": 1}, mine, sender),
        _msg("iopub", "execute_result", {"data": {"text/plain": "False"}, "metadata": {}, "execution_count": 1}, mine, sender),
        _status("idle", mine, sender),
    ]


def _execute(script):
    with KernelConnection(ScriptedServer(script), "k-1") as kernel:
        return kernel.execute("'kept' in dir()", timeout=5)


def test_a_reply_that_overtakes_its_own_kernels_starting_status_is_not_a_restart():
    result = _execute(lambda mine: [_reply(mine), _status("starting", None), *_run(mine)])
    assert result.status == "ok" and result.execution_count == 1
    assert [o["data"]["text/plain"] for o in result.outputs] == ["False"]


def test_an_earlier_kernels_shutdown_reply_arriving_late_is_not_a_restart_either():
    result = _execute(lambda mine: [_reply(mine), _shutdown_reply(OLD), *_run(mine)])
    assert result.status == "ok"


@pytest.mark.parametrize(
    "gone",
    [_status("starting", None, NEW), _shutdown_reply(OLD)],
    ids=["another-kernel-starting", "its-kernel-shutting-down"],
)
def test_a_restart_after_the_kernel_began_the_request_ends_the_run(gone):
    """The request began on kernel process 1 (its busy and input arrived); then it shuts down, or process 2 starts."""
    with pytest.raises(KernelDied) as caught:
        _execute(lambda mine: [*_run(mine, OLD)[:2], gone, *_run(mine, OLD)[2:], _reply(mine, OLD)])
    assert caught.value.code == "KERNEL_DIED" and caught.value.details["executed"] is True


def test_a_kernel_that_replied_then_restarted_before_its_iopub_arrived_ends_the_run():
    """Process 1 replied; its broadcasts never came (it was restarted), process 2 starts: not a wait until the timeout."""
    with pytest.raises(KernelDied):
        _execute(lambda mine: [_reply(mine, OLD), _shutdown_reply(OLD), _status("starting", None, NEW)])


@pytest.mark.parametrize("state", ["dead", "restarting"])
def test_a_dead_or_restarting_kernel_ends_the_run_whatever_came_before(state):
    with pytest.raises(KernelDied):
        _execute(lambda mine: [_status(state, None), *_run(mine), _reply(mine)])
