"""The reading core against notebooks written by real tools.

nbformat's own reader is the oracle for what is stored; Pillow checks that
images decode to what the header says.
"""

from __future__ import annotations

import base64
import io
import json
import re

import nbformat
import pytest
from helpers import FIXTURES
from PIL import Image

from jcli_sidecar.base.errors import CellNotFound, InvalidWindow, MimeNotFound, OutputTooLarge
from jcli_sidecar.base.protocol import json_text
from jcli_sidecar.read.reader import OutputQuery, list_outputs, read_output

V45 = str(FIXTURES / "kernel_v4.5.ipynb")
MINORS = [str(FIXTURES / f"kernel_v4.{m}.ipynb") for m in range(5)]
V3 = str(FIXTURES / "kernel_v3.ipynb")


def stored(path: str) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)


def comparable(env: dict) -> dict:
    """Drop what legitimately differs between copies (paths, ids, bundle key order)."""
    env = json.loads(json.dumps(env))
    for key in ("path", "requested_path", "cell_id", "label"):  # the label names the path
        env["source"].pop(key, None)
    for item in [env, *env.get("outputs", [])]:
        if "available_mime_types" in item:
            item["available_mime_types"].sort()
    return env


def every_output(path: str):
    nb = stored(path)
    for ci, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        for oi in range(len(cell.outputs)):
            yield ci, oi


def test_the_fixture_files_really_use_list_valued_strings_and_lack_ids():
    raw = json.loads((FIXTURES / "kernel_v4.4.ipynb").read_text())
    assert raw["nbformat_minor"] == 4
    assert all("id" not in cell for cell in raw["cells"])
    assert isinstance(raw["cells"][0]["source"], list)
    stream = raw["cells"][1]["outputs"][0]
    assert isinstance(stream["text"], list) and len(stream["text"]) == 2


@pytest.mark.parametrize("path", MINORS, ids=lambda p: p.rsplit("/", 1)[1])
def test_every_minor_version_reads_like_4_5(path):
    for ci, oi in every_output(V45):
        assert comparable(read_output(path, ci, oi)) == comparable(read_output(V45, ci, oi)), (ci, oi)
    for ci in range(len(stored(V45).cells)):
        assert comparable(list_outputs(path, ci))["outputs"] == comparable(list_outputs(V45, ci))["outputs"]


def test_a_v3_notebook_is_upgraded_in_memory_and_reads():
    # v3 cannot hold text/markdown, so compare what the format can carry.
    for ci, oi in [(1, 0), (1, 1), (2, 0), (3, 0), (5, 0), (9, 0), (9, 1), (11, 0), (14, 0)]:
        assert comparable(read_output(V3, ci, oi)) == comparable(read_output(V45, ci, oi)), (ci, oi)
    before = (FIXTURES / "kernel_v3.ipynb").read_bytes()
    read_output(V3, 2, 0)
    assert (FIXTURES / "kernel_v3.ipynb").read_bytes() == before


def test_cell_ids_are_reported_only_when_the_notebook_has_them():
    assert read_output(V45, 2, 0)["source"]["cell_id"] == "cell-02"
    for path in [*MINORS, V3]:
        assert read_output(path, 2, 0)["source"]["cell_id"] is None


@pytest.mark.parametrize(
    "path, cell, mime",
    [(V45, 2, "image/png"), (V45, 3, "image/jpeg"), (V45, 9, "image/png"), (V45, 9, "image/jpeg")],
)
def test_images_decode_to_the_stored_bytes(path, cell, mime):
    expected = base64.b64decode(stored(path).cells[cell].outputs[0].data[mime])
    env = read_output(path, cell, 0, OutputQuery(mime_type=mime))
    sel = env["selected"]
    data = base64.b64decode(sel["data"], validate=True)
    assert data == expected
    assert sel["bytes"] == len(expected)
    assert sel["data"] == base64.b64encode(expected).decode()  # canonical, unwrapped
    with Image.open(io.BytesIO(data)) as img:
        assert img.format == {"image/png": "PNG", "image/jpeg": "JPEG"}[mime]
        assert img.size == (sel["width"], sel["height"])


def test_a_png_wrapped_at_76_columns_reads_as_the_same_image():
    path = str(FIXTURES / "wrapped_png.ipynb")
    raw = json.loads((FIXTURES / "wrapped_png.ipynb").read_text())
    stored_value = raw["cells"][2]["outputs"][0]["data"]["image/png"]
    text = "".join(stored_value) if isinstance(stored_value, list) else stored_value
    assert "\n" in text and max(len(line) for line in text.splitlines()) == 76
    assert read_output(path, 2, 0)["selected"] == read_output(V45, 2, 0)["selected"]


def test_a_png_jpeg_bundle_is_one_output_and_the_next_index_does_not_move():
    catalog = list_outputs(V45, 9)
    assert catalog["output_count"] == 2
    first, second = catalog["outputs"]
    assert set(first["available_mime_types"]) == {"image/png", "image/jpeg", "text/plain"}
    assert first["default_mime_type"] == "image/png"
    assert second["output_type"] == "stream"
    assert read_output(V45, 9, 1)["stream"]["data"] == "after the bundle\n"


def test_html_markdown_and_plain_text_are_verbatim():
    nb = stored(V45)
    html = read_output(V45, 5, 0)["selected"]
    assert html["mime_type"] == "text/html"
    assert html["data"] == nb.cells[5].outputs[0].data["text/html"]
    md = read_output(V45, 6, 0)["selected"]
    assert (md["mime_type"], md["data"]) == ("text/markdown", nb.cells[6].outputs[0].data["text/markdown"])
    plain = read_output(V45, 5, 0, OutputQuery(mime_type="text/plain"))["selected"]
    assert plain["data"] == nb.cells[5].outputs[0].data["text/plain"]


def test_json_keeps_its_structure_and_a_window_is_text_flagged_truncated():
    value = stored(V45).cells[7].outputs[0].data["application/json"]
    whole = read_output(V45, 7, 0, OutputQuery(mime_type="application/json"))["selected"]
    assert whole["encoding"] == "json" and whole["data"] == value
    serialised = json_text(value)
    pieces, offset = [], 0
    while offset is not None:
        sel = read_output(V45, 7, 0, OutputQuery(mime_type="application/json", offset=offset, limit=7))["selected"]
        assert sel["encoding"] == "utf-8" and sel["serialization"] == "json" and sel["truncated"]
        pieces.append(sel["data"])
        offset = sel["next_offset"]
    assert "".join(pieces) == serialised


def test_stream_and_error_keep_their_structure():
    out = read_output(V45, 1, 1)
    assert out["stream"]["name"] == "stderr" and out["stream"]["data"] == "warned\n"
    err = read_output(V45, 11, 0)
    stored_err = stored(V45).cells[11].outputs[0]
    assert any("\x1b[" in line for line in stored_err.traceback)  # the notebook keeps IPython's colours
    assert err["error"] == {
        "ename": "ZeroDivisionError",
        "evalue": "division by zero",
        "traceback": [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in stored_err.traceback],  # a read returns plain text
    }
    assert "selected" not in err


def test_unknown_mimes_are_listed_and_readable():
    entry = list_outputs(V45, 10)["outputs"][0]
    assert entry["available_mime_types"] == [
        "application/vnd.acme.chart+json",
        "application/x-acme-opaque",
        "text/plain",
    ]
    vendor = read_output(V45, 10, 0, OutputQuery(mime_type="application/vnd.acme.chart+json"))["selected"]
    assert vendor["data"] == {"series": [3, 1, 2]}
    with pytest.raises(MimeNotFound) as info:
        read_output(V45, 10, 0, OutputQuery(mime_type="text/html"))
    assert info.value.details["available"] == entry["available_mime_types"]


def test_markdown_and_raw_cells_have_empty_catalogs_naming_their_type():
    assert list_outputs(V45, 4)["cell_type"] == "markdown"
    assert list_outputs(V45, 12)["cell_type"] == "raw"
    assert list_outputs(V45, 4)["outputs"] == []


def test_text_windows_count_code_points():
    full = read_output(V45, 1, 0)["stream"]
    assert full["bytes"] > full["total_characters"]  # non-ASCII text
    emoji_at = full["data"].index("🌍")
    one = read_output(V45, 1, 0, OutputQuery(offset=emoji_at, limit=1))["stream"]
    assert one["data"] == "🌍" and one["returned_characters"] == 1
    assert one["next_offset"] == emoji_at + 1 and one["truncated"]
    last = read_output(V45, 1, 0, OutputQuery(offset=full["total_characters"] - 1))["stream"]
    assert last["next_offset"] is None and last["truncated"]


@pytest.mark.parametrize("offset, limit", [(-1, None), (0, 0), (0, -3), (10_000, None)])
def test_bad_windows_are_refused(offset, limit):
    with pytest.raises(InvalidWindow):
        read_output(V45, 1, 0, OutputQuery(offset=offset, limit=limit))


def test_a_response_over_the_cap_says_its_real_size():
    with pytest.raises(OutputTooLarge) as info:
        read_output(V45, 14, 0, OutputQuery(max_response_bytes=2000))
    assert info.value.details["response_bytes"] > 5000
    assert "--offset/--limit" in info.value.message
    assert read_output(V45, 14, 0, OutputQuery(limit=100, max_response_bytes=2000))["stream"]["returned_characters"] == 100


def test_cell_not_found_counts_the_cells():
    with pytest.raises(CellNotFound) as info:
        list_outputs(V45, 15)
    assert info.value.details["cell_count"] == 15


def test_lazy_and_full_parsing_agree_on_a_compact_rewrite(tmp_path):
    # Same notebook, no whitespace at all, keys in another order.
    raw = json.loads((FIXTURES / "kernel_v4.5.ipynb").read_text())
    compact = tmp_path / "compact.ipynb"
    compact.write_text(json.dumps(dict(reversed(list(raw.items()))), separators=(",", ":")))
    for ci, oi in every_output(V45):
        assert comparable(read_output(str(compact), ci, oi)) == comparable(read_output(V45, ci, oi))
