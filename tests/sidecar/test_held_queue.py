"""A kernel's queue of background jobs in the sidecar (``HeldKernels``): first in, first out, whatever thread runs first.

No kernel: the jobs are threads that claim the kernel, note that they ran
and release it. Each job's place is taken when it is submitted
(``enqueue``), so the order the threads are started in, or scheduled, does
not matter. Nothing is timed: every wait is on the queue itself.
"""

from __future__ import annotations

import threading

import pytest

from jcli_sidecar.base.errors import KernelBusy
from jcli_sidecar.sidecar.held_kernels import HeldKernels

K = "kernel-1"


def job(kernels: HeldKernels, job_id: str, ran: list[str], **claim) -> threading.Thread:
    def run() -> None:
        if kernels.claim(K, job_id, **claim):
            ran.append(job_id)
            kernels.release(K, job_id)
        else:
            ran.append(f"cancelled {job_id}")

    return threading.Thread(target=run, name=job_id, daemon=True)


def test_fifty_queued_jobs_run_in_the_order_they_were_queued_whatever_order_their_threads_start_in():
    kernels = HeldKernels()
    ids = [f"job-{n:02d}" for n in range(50)]
    behind = [kernels.enqueue(K, job_id, queue=True) for job_id in ids]
    assert behind == [None] + ids[:-1]  # each behind the one directly ahead
    ran: list[str] = []
    threads = [job(kernels, job_id, ran) for job_id in ids]
    for thread in reversed(threads):
        thread.start()
    for thread in threads:
        thread.join()
    assert ran == ids
    assert kernels.job_on(K) is None and kernels.busy_with(K) is None


def test_a_job_that_does_not_queue_is_refused_naming_the_job_that_runs_not_one_that_waits():
    kernels = HeldKernels()
    kernels.enqueue(K, "a", queue=False)
    assert kernels.claim(K, "a")
    kernels.enqueue(K, "b", queue=True)
    with pytest.raises(KernelBusy) as refused:
        kernels.enqueue(K, "c", queue=False)
    assert refused.value.details["job_id"] == "a"
    assert kernels.busy_with(K) == "a"
    kernels.release(K, "a")
    assert kernels.busy_with(K) == "b"  # it waits: a run that is no job may not slip in before it
    kernels.release(K, "b")
    kernels.enqueue(K, "c", queue=False)  # free again


def test_a_job_cancelled_while_queued_leaves_and_the_one_behind_it_names_the_one_now_ahead():
    kernels = HeldKernels()
    for job_id in ("a", "b", "c", "d"):
        kernels.enqueue(K, job_id, queue=True)
    assert kernels.claim(K, "a")
    cancelled = {"b": False, "c": False}
    waiting = {name: threading.Event() for name in ("b", "c", "d")}

    def asks(name: str) -> bool:  # called in claim under the queue's lock, right before it waits
        waiting[name].set()
        return cancelled.get(name, False)

    renamed: list[str | None] = []
    ran: list[str] = []
    threads = {
        name: job(kernels, name, ran, cancelled=lambda n=name: asks(n), on_ahead=renamed.append if name == "d" else None)
        for name in ("b", "c", "d")
    }
    for thread in threads.values():
        thread.start()
    for event in waiting.values():
        event.wait()
    cancelled["b"] = cancelled["c"] = True
    kernels.wake()
    threads["b"].join()
    threads["c"].join()
    assert sorted(ran) == ["cancelled b", "cancelled c"]
    kernels.release(K, "a")
    threads["d"].join()
    assert ran[2:] == ["d"]
    assert renamed and renamed[-1] == "a"  # b and c left: d is directly behind a


def test_a_job_queued_behind_another_sidecars_job_waits_until_its_record_ends():
    kernels = HeldKernels()
    over = {"theirs": False}
    kernels.foreign = lambda kernel_id: [] if over["theirs"] else ["theirs"]
    assert kernels.busy_with(K) == "theirs"  # a run that is no job is refused from the records
    with pytest.raises(KernelBusy) as refused:
        kernels.enqueue(K, "mine", queue=False, foreign=["theirs"])
    assert refused.value.details["job_id"] == "theirs"
    assert kernels.enqueue(K, "mine", queue=True, foreign=["theirs"]) == "theirs"
    looked = threading.Event()

    def ended(job_id: str) -> bool:
        looked.set()
        return over[job_id]

    ran: list[str] = []
    thread = job(kernels, "mine", ran, foreign=["theirs"], ended=ended)
    thread.start()
    looked.wait()
    assert ran == [] and kernels.busy_with(K) == "mine"
    over["theirs"] = True
    thread.join()
    assert ran == ["mine"]
