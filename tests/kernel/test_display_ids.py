"""Display ids folded as nbclient folds them (``_output_hook``, ``_update_display_id``, ``clear_display_id_mapping``), no kernel needed."""

from __future__ import annotations

from jcli_sidecar.kernel.exec_result import ExecutionResult
from jcli_sidecar.kernel.output_collector import DisplayIds, OutputCollector


def shown(text: str, display_id: str | None = None) -> dict:
    content: dict = {"data": {"text/plain": text}, "metadata": {}}
    if display_id is not None:
        content["transient"] = {"display_id": display_id}
    return content


def texts(result: ExecutionResult) -> list[str]:
    return [o["data"]["text/plain"] if "data" in o else o["text"] for o in result.outputs]


def test_a_new_output_with_an_id_in_use_refreshes_the_earlier_ones_then_is_appended():
    events = []
    collector = OutputCollector(lambda **kw: events.append((kw["event"], kw["index"])))
    collector.handle("display_data", shown("a", "same"))
    collector.handle("display_data", shown("b", "same"))
    assert texts(collector.result) == ["b", "b"]
    assert events == [("append", 0), ("update", 0), ("append", 1)]


def test_a_later_cells_update_reaches_an_earlier_cells_outputs_and_names_that_cell():
    displays = DisplayIds()
    first = OutputCollector(None, displays=displays, owner=0)
    first.handle("display_data", shown("first", "h"))
    first.handle("stream", {"name": "stdout", "text": "x\n"})
    later = OutputCollector(None, displays=displays, owner=3)
    later.handle("update_display_data", shown("second", "h"))
    assert texts(first.result) == ["second", "x\n"] and later.result.outputs == []
    assert displays.changed == {0}
    later.handle("execute_result", {**shown("third", "h"), "execution_count": 4})
    assert texts(first.result) == ["third", "x\n"] and texts(later.result) == ["third"]


def test_cleared_outputs_are_forgotten_and_a_waiting_clear_comes_after_the_update():
    displays = DisplayIds()
    first = OutputCollector(None, displays=displays, owner=0)
    first.handle("display_data", shown("gone", "c"))
    first.handle("clear_output", {"wait": False})
    first.handle("display_data", shown("kept"))
    OutputCollector(None, displays=displays, owner=1).handle("update_display_data", shown("nowhere", "c"))
    assert texts(first.result) == ["kept"] and displays.changed == set()

    other = OutputCollector(None, displays=displays, owner=2)
    other.handle("display_data", shown("old", "w"))
    waiting = OutputCollector(None, displays=displays, owner=3)
    waiting.handle("display_data", shown("mine", "w2"))
    waiting.handle("clear_output", {"wait": True})
    waiting.handle("display_data", shown("new", "w"))  # the other cell is refreshed first, then this cell clears
    assert texts(other.result) == ["new"] and texts(waiting.result) == ["new"]
    waiting.handle("update_display_data", shown("newer", "w"))
    assert texts(other.result) == ["newer"] and texts(waiting.result) == ["newer"]


def test_an_update_for_an_id_never_shown_changes_nothing():
    collector = OutputCollector(None)
    collector.handle("update_display_data", shown("x", "unknown"))
    collector.handle("update_display_data", {"data": {}, "metadata": {}, "transient": None})
    assert collector.result.outputs == []
