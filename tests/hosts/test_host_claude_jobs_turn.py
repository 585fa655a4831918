"""A Claude Code turn that outlives its shell calls: a background job, waited on across two Bash calls.

The real ``claude -p`` runs against the scripted model (``tests/hosts/model_server.py``,
Anthropic Messages) as in ``test_host_claude_turn``. The model starts
``j-cli -j exec S -c CODE --background`` through Bash, learns the job id from
that tool result, calls ``j-cli -j job wait ID --timeout 1`` while a
kernel-side barrier holds the job (a snapshot, ``timed_out: true``), and,
once the test released the barrier, calls ``job wait`` again and receives
the result. Timing is driven by the barrier, never by sleeps.
"""

from __future__ import annotations

import json
import shlex

import pytest
from claude_world import FINAL, claude_turn, setup_claude
from model_server import Say, Seen, ToolCall
from test_jobs_run import Barrier


@pytest.fixture
def jobs_on(use_jupyter, sidecar_on):
    """A real Jupyter Server and a real sidecar for the turn's j-cli calls."""
    return sidecar_on


def tool_doc(seen: Seen, index: int) -> dict:
    """The JSON document a Bash tool result holds (j-cli's stdout)."""
    (part,) = seen.tool_results[index]
    return json.loads(part.text)


def test_the_model_starts_a_background_job_and_waits_on_it_across_two_bash_calls(
    host_bin, home, project, jobs_on, kernel_session, tmp_path
):
    setup_claude(project, "--user")
    barrier = Barrier(tmp_path, "turn")
    code = "print('before', flush=True)\n" + barrier.code() + "print('after')\n"
    learned: dict = {}

    def first_wait(seen: Seen) -> ToolCall:
        started = tool_doc(seen, 0)
        learned["job_id"] = started["job_id"]
        barrier.reached()  # the kernel holds the job at the barrier
        return ToolCall("Bash", {"command": f"j-cli -j job wait {learned['job_id']} --timeout 1"})

    def second_wait(seen: Seen) -> ToolCall:
        learned["snapshot"] = tool_doc(seen, 1)
        barrier.release()  # between the two tool calls, the job is let go
        return ToolCall("Bash", {"command": f"j-cli -j job wait {learned['job_id']} --timeout 30"})

    start = f"j-cli -j exec {kernel_session} -c {shlex.quote(code)} --background"
    script = [ToolCall("Bash", {"command": start}), first_wait, second_wait, Say(FINAL)]

    model = claude_turn(host_bin, home, project, script, "Bash")

    after = model.turn[-1]
    assert len(after.tool_results) == 3
    started, snapshot, ended = (tool_doc(after, i) for i in range(3))
    job_id = started["job_id"]
    assert started["status"] == "running" and started["kind"] == "inline" and started["session"] == kernel_session
    assert snapshot == learned["snapshot"]  # what the script acted on is what the model received
    assert snapshot["timed_out"] is True and snapshot["pending"] == [job_id]
    assert [job["job_id"] for job in snapshot["jobs"]] == [job_id] and snapshot["jobs"][0]["state"] == "running"
    assert ended["timed_out"] is False and ended["ended"] == [job_id] and ended["pending"] == []
    (job,) = ended["jobs"]
    assert job["job_id"] == job_id and job["state"] == "ok"
    assert job["result"]["status"] == "ok" and job["result"]["text"] == "before\nafter\n"
    assert all(seen.images() == [] for seen in model.requests)
