"""The read-only MCP server, driven by the MCP SDK's own client over stdio.

Starting ``j-cli mcp serve`` costs the MCP SDK's import each time, so the
tests that only read the fixture notebooks through ``--root`` share one
server and one client session per module (:class:`SharedSession`, on a
read-only copy of the fixtures); a test that needs its own roots, launch
directory, host flag, sidecar or files starts its own server with
:func:`call`, as a client would.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import hashlib
import json
import os
import shutil
import threading

import nbformat
import pytest
from helpers import (
    CHART_RENDERED_FROM,
    FIXTURES,
    JCLI,
    load_cases,
    requires_charts_extra,
    requires_svg_extra,
    shows_the_chart_bars,
    write_chart_notebook,
)
from mcp import ClientSession, StdioServerParameters, stdio_client

CASES = load_cases()
BOUND = 60  # seconds: a call on the shared session that takes longer than this is a hang, and fails


def _params(root_args, cwd=None, env=None) -> StdioServerParameters:
    return StdioServerParameters(
        command=JCLI, args=["mcp", "serve", *root_args], cwd=str(cwd) if cwd else None, env=env or dict(os.environ)
    )


def call(root_args, calls, cwd=None, env=None):
    """Start ``j-cli mcp serve``, run ``calls(session)``, return its result."""

    async def main():
        async with stdio_client(_params(root_args, cwd, env)) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await calls(session)

    return asyncio.run(main())


class SharedSession:
    """One ``j-cli mcp serve`` and one initialized SDK client session on it, kept open across tests.

    The SDK's client is async: the session lives in a task on an event
    loop of its own, in a background thread, and :meth:`call` runs one
    ``calls(session)`` coroutine on that loop and waits for its result.
    """

    def __init__(self, root_args, cwd=None) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="shared-mcp-session", daemon=True)
        self._thread.start()
        self._ready: concurrent.futures.Future = concurrent.futures.Future()
        self._stop = asyncio.Event()
        self._served = asyncio.run_coroutine_threadsafe(self._serve(_params(root_args, cwd)), self._loop)
        try:
            self._session = self._ready.result(BOUND)
        except BaseException:
            self._end_loop()
            raise

    async def _serve(self, params) -> None:
        try:
            async with stdio_client(params) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    self._ready.set_result(session)
                    await self._stop.wait()
        except BaseException as exc:
            if not self._ready.done():
                self._ready.set_exception(exc)
            raise

    def call(self, calls):
        """Run ``calls(session)`` on the shared session; return its result."""
        future = asyncio.run_coroutine_threadsafe(calls(self._session), self._loop)
        try:
            return future.result(BOUND)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise

    def close(self) -> None:
        """End the session and the server (the SDK's client closes its stdin and waits for it)."""
        try:
            self._loop.call_soon_threadsafe(self._stop.set)
            self._served.result(BOUND)
        finally:
            self._end_loop()

    def _end_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(BOUND)
        self._loop.close()


def tree_state(root) -> dict:
    """Every entry under ``root``: its kind, and a file's size, mtime and digest, a link's target."""
    state = {}
    for folder, subfolders, files in os.walk(root):
        for name in subfolders + files:
            path = os.path.join(folder, name)
            info = os.lstat(path)
            if os.path.islink(path):
                state[path] = ("link", os.readlink(path))
            elif os.path.isdir(path):
                state[path] = ("dir",)
            else:
                with open(path, "rb") as fh:
                    state[path] = ("file", info.st_size, info.st_mtime_ns, hashlib.sha256(fh.read()).hexdigest())
    return state


@pytest.fixture(scope="module")
def shared_dir(tmp_path_factory):
    """This module's copy of the fixtures, which the tests reading through :func:`shared` only read.

    It also holds ``escape.ipynb``, a link to a notebook outside it. After
    the module, every file must be as it was.
    """
    base = tmp_path_factory.mktemp("mcp-shared")
    target = base / "protocol"
    shutil.copytree(FIXTURES, target)
    outside = base / "outside.ipynb"
    shutil.copy(FIXTURES / "kernel_v4.5.ipynb", outside)
    (target / "escape.ipynb").symlink_to(outside)
    before = tree_state(base)
    yield target
    assert tree_state(base) == before, "a test wrote to the shared fixtures"


@pytest.fixture(scope="module")
def shared(shared_dir):
    """One server with ``--root shared_dir`` and one client session on it, for this module's reading tests."""
    session = SharedSession(["--root", str(shared_dir)])
    try:
        yield session
    finally:
        session.close()


def tool(name, **arguments):
    async def run(session):
        return await session.call_tool(name, arguments)

    return run


def test_the_tools_are_listed_read_only(shared):
    tools = shared.call(lambda s: s.list_tools()).tools
    assert {t.name for t in tools} == {"read_notebook_output", "read_run_output", "notebook_grep", "job_status", "job_wait"}
    assert all(t.annotations.read_only_hint for t in tools)
    assert all(t.annotations.destructive_hint is False and t.annotations.open_world_hint is False for t in tools)


@pytest.mark.parametrize("case", [c for c in CASES if "envelope" in c["expect"]], ids=lambda c: c["name"])
def test_every_fixture_reads_the_same_through_mcp(shared, case):
    request = dict(case["request"])
    result = shared.call(tool("read_notebook_output", **request))
    assert not result.is_error, result.content
    expected = case["expect"]["envelope"]
    if "outputs" in expected:
        catalog = json.loads(result.content[0].text)
        assert catalog["outputs"] == expected["outputs"]
        return
    first = result.content[0]
    if "stream" in expected:
        assert first.text == expected["stream"]["data"]
    elif "error" in expected:
        block = expected["error"]
        assert first.text == (block["data"] if "data" in block else json.dumps(block, indent=2, ensure_ascii=False))
    elif expected["selected"]["encoding"] == "base64":
        assert first.type == "image" and first.mime_type == expected["selected"]["mime_type"]
        assert first.data == expected["selected"]["data"]
        assert result.structured_content is None  # hosts drop images that come with one
    elif expected["selected"]["encoding"] == "json":
        assert json.loads(first.text) == expected["selected"]["data"]
    else:
        assert first.text == expected["selected"]["data"]  # verbatim
    assert result.content[-1].type == "text" and result.content[-1].text.startswith("[")


def test_a_png_arrives_as_the_notebooks_own_bytes(shared, shared_dir):
    result = shared.call(tool("read_notebook_output", file_path="kernel_v4.5.ipynb", cell_index=2, output_index=0))
    stored = nbformat.read(str(shared_dir / "kernel_v4.5.ipynb"), 4).cells[2].outputs[0].data["image/png"]
    assert base64.b64decode(result.content[0].data) == base64.b64decode(stored)
    assert "iVBOR" not in result.content[1].text  # no base64 outside image content


@pytest.mark.parametrize(
    "arguments, code",
    [
        ({"file_path": "kernel_v4.5.ipynb", "cell_index": 99}, "CELL_NOT_FOUND"),
        ({"file_path": "kernel_v4.5.ipynb", "cell_index": 5, "output_index": 0, "mime_type": "image/png"}, "MIME_NOT_FOUND"),
        ({"file_path": "/etc/hostname", "cell_index": 0}, "PATH_NOT_ALLOWED"),
        ({"file_path": "escape.ipynb", "cell_index": 0}, "PATH_NOT_ALLOWED"),
        ({"file_path": "kernel_v4.5.ipynb", "cell_index": 0, "bogus": 1}, "USAGE_ERROR"),
    ],
)
def test_errors_are_tool_results_with_is_error(shared, shared_dir, arguments, code):
    assert (shared_dir / "escape.ipynb").resolve().parent != shared_dir  # the link leads outside the root
    result = shared.call(tool("read_notebook_output", **arguments))
    assert result.is_error and result.content[0].text.startswith(f"{code}:")


def test_relative_paths_need_a_single_root(fixture_dir, tmp_path):
    async def both(session):
        relative = await session.call_tool("read_notebook_output", {"file_path": "kernel_v4.5.ipynb", "cell_index": 1})
        absolute = await session.call_tool("read_notebook_output", {"file_path": str(fixture_dir / "kernel_v4.5.ipynb"), "cell_index": 1})
        return relative, absolute

    result, absolute = call(["--root", str(fixture_dir), "--root", str(tmp_path)], both)
    assert result.is_error and result.content[0].text.startswith("PATH_AMBIGUOUS:")
    assert not absolute.is_error


def test_without_roots_only_the_launch_cwd_is_allowed(fixture_dir, tmp_path):
    inside = call([], tool("read_notebook_output", file_path="kernel_v4.5.ipynb", cell_index=1), cwd=fixture_dir)
    assert not inside.is_error
    other = tmp_path / "other"
    other.mkdir()
    outside = call([], tool("read_notebook_output", file_path=str(fixture_dir / "kernel_v4.5.ipynb"), cell_index=1), cwd=other)
    assert outside.is_error and outside.content[0].text.startswith("PATH_NOT_ALLOWED:")


def test_twenty_parallel_calls_all_answer(shared):
    async def many(session):
        return await asyncio.gather(
            *(
                session.call_tool("read_notebook_output", {"file_path": "kernel_v4.5.ipynb", "cell_index": 2 + i % 2, "output_index": 0})
                for i in range(20)
            )
        )

    results = shared.call(many)
    assert len(results) == 20 and all(not r.is_error and r.content[0].type == "image" for r in results)


def test_reads_change_nothing_in_the_workspace(shared, shared_dir):
    def snapshot():
        return {p.name: (p.lstat().st_mtime_ns, p.lstat().st_size) for p in shared_dir.iterdir()}

    before = snapshot()
    shared.call(tool("read_notebook_output", file_path="pair_ids.py", cell_index=1, output_index=0))
    assert snapshot() == before and not (shared_dir / ".j-cli").exists()


def test_repeated_calls_hit_the_sidecar_and_it_never_owns_our_stdout(fixture_dir, sidecar_on, monkeypatch):
    from helpers import run_cli

    monkeypatch.setenv("JCLI_SIDECAR_RACY_MS", "0")  # a just-copied file: trusted at once, no waiting
    assert run_cli("sidecar", "start", cwd=fixture_dir).returncode == 0

    async def repeated(session):
        return [
            await session.call_tool("read_notebook_output", {"file_path": "kernel_v4.5.ipynb", "cell_index": 2, "output_index": 0})
            for _ in range(5)
        ]

    results = call(["--root", str(fixture_dir)], repeated, cwd=fixture_dir)
    assert all(not r.is_error for r in results)
    status = run_cli("-j", "sidecar", "status", cwd=fixture_dir).json()
    assert status["cache"]["hits"] >= 4
    assert os.readlink(f"/proc/{status['pid']}/fd/1").endswith(".log")


def test_read_run_output_by_id_and_manifest(tmp_path):
    from jcli_sidecar.runs.store import publish_run, stage_run

    png = nbformat.read(str(__import__("helpers").FIXTURES / "kernel_v4.5.ipynb"), 4).cells[2].outputs[0].data["image/png"]
    staged = stage_run(
        str(tmp_path),
        [{"output_type": "display_data", "metadata": {}, "data": {"image/png": png, "text/html": "<i>x</i>"}}],
        source={},
        status="ok",
        created_ns=1,
    )
    manifest = publish_run(staged.outputs_dir, staged.run_id)["manifest"]

    async def reads(session):
        return [
            await session.call_tool("read_run_output", {"run": staged.run_id, "output_index": 0}),
            await session.call_tool("read_run_output", {"run": manifest, "output_index": 0, "mime_type": "text/html"}),
            await session.call_tool("read_run_output", {"run": "20200101T000000.000000000Z-00000000"}),
        ]

    by_id, html, gone = call(["--root", str(tmp_path)], reads)
    assert by_id.content[0].type == "image" and base64.b64decode(by_id.content[0].data) == base64.b64decode(png)
    assert html.content[0].text == "<i>x</i>"
    assert gone.is_error and gone.content[0].text.startswith("RUN_NOT_FOUND:")


def test_without_root_flags_the_clients_roots_are_used(fixture_dir, tmp_path):
    import warnings

    import mcp_types as types

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    async def roots(context):
        return types.ListRootsResult(roots=[types.Root(uri=f"file://{fixture_dir}", name="fixtures")])

    async def main():
        params = StdioServerParameters(command=JCLI, args=["mcp", "serve"], cwd=str(elsewhere), env=dict(os.environ))
        async with stdio_client(params) as (read, write):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the roots capability is deprecated in newer protocol revisions
                session = ClientSession(read, write, list_roots_callback=roots)
            async with session:
                await session.initialize()
                inside = await session.call_tool("read_notebook_output", {"file_path": "kernel_v4.5.ipynb", "cell_index": 1})
                outside = await session.call_tool("read_notebook_output", {"file_path": str(elsewhere / "x.ipynb"), "cell_index": 0})
                return inside, outside

    inside, outside = asyncio.run(main())
    assert not inside.is_error  # relative to the client's single root, not the launch cwd
    assert outside.is_error and outside.content[0].text.startswith("PATH_NOT_ALLOWED:")


@requires_svg_extra
def test_a_host_flag_fits_images_and_svg_renders_through_mcp(tmp_path):
    import io

    from PIL import Image

    big = io.BytesIO()
    Image.new("RGB", (5000, 1000), (10, 200, 30)).save(big, "PNG")
    svg = '<svg xmlns="http://www.w3.org/2000/svg" width="120" height="60"><rect width="120" height="60" fill="#ff0000"/></svg>'
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("x")
    cell.outputs = [
        nbformat.v4.new_output("display_data", data={"image/png": base64.b64encode(big.getvalue()).decode()}),
        nbformat.v4.new_output("display_data", data={"image/svg+xml": svg, "text/plain": "<svg>"}),
    ]
    nb.cells = [cell]
    path = tmp_path / "plots.ipynb"
    nbformat.write(nb, str(path))
    before = path.read_bytes()
    svg_as_png = {"file_path": str(path), "cell_index": 0, "output_index": 1, "mime_type": "image/svg+xml", "as_mime_type": "image/png"}

    async def reads(session):
        return [
            await session.call_tool("read_notebook_output", {"file_path": str(path), "cell_index": 0, "output_index": 0}),
            await session.call_tool("read_notebook_output", svg_as_png),
        ]

    fitted, rendered = call(["--root", str(tmp_path), "--host", "codex"], reads)
    image = Image.open(io.BytesIO(base64.b64decode(fitted.content[0].data)))
    assert image.size == (2048, 409) and "fitted from 5000x1000" in fitted.content[1].text
    assert not rendered.is_error and rendered.content[0].type == "image" and rendered.content[0].mime_type == "image/png"
    assert Image.open(io.BytesIO(base64.b64decode(rendered.content[0].data))).convert("RGB").getpixel((5, 5)) == (255, 0, 0)
    assert "rendered from image/svg+xml" in rendered.content[1].text
    assert path.read_bytes() == before


@requires_charts_extra
def test_a_chart_reaches_the_sdk_client_as_one_image_part(tmp_path):
    import io

    from PIL import Image

    path = write_chart_notebook(tmp_path / "chart.ipynb")
    asked = {"file_path": str(path), "cell_index": 0, "output_index": 0}

    async def reads(session):
        return [
            await session.call_tool("read_notebook_output", {**asked, "as_mime_type": "image/png"}),
            await session.call_tool("read_notebook_output", {**asked, "mime_type": "application/vnd.vegalite.v5+json"}),
        ]

    rendered, verbatim = call(["--root", str(tmp_path), "--host", "claude"], reads)
    images = [part for part in rendered.content if part.type == "image"]
    assert not rendered.is_error and len(images) == 1 and images[0].mime_type == "image/png"
    png = base64.b64decode(images[0].data)
    assert max(Image.open(io.BytesIO(png)).size) > 200 and shows_the_chart_bars(png)
    assert CHART_RENDERED_FROM in rendered.content[1].text
    assert all(part.type == "text" for part in verbatim.content) and '"mark"' in verbatim.content[0].text, "without as_mime_type the spec"


def test_an_mcp_read_never_maps_by_an_id_the_py_repeats(tmp_path):
    """The pasted cell's marker keeps the original's id: the MCP read refuses as the CLI does, it never answers by that id."""
    cells = [nbformat.v4.new_code_cell('print("original")', id="a1"), nbformat.v4.new_code_cell('print("other")', id="b2")]
    for cell, text in zip(cells, ("original\n", "other\n"), strict=True):
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
    (tmp_path / "p.ipynb").write_text(nbformat.writes(nbformat.v4.new_notebook(cells=cells)))
    (tmp_path / "p.py").write_text('# %% id="a1"\nprint("original")\n\n# %% id="a1"\nprint("pasted")\n\n# %% id="b2"\nprint("other")\n')

    async def reads(session):
        return [
            await session.call_tool("read_notebook_output", {"file_path": "p.py", "cell_index": index, "output_index": 0})
            for index in (1, 0)
        ]

    pasted, original = call(["--root", str(tmp_path)], reads)
    assert pasted.is_error and pasted.content[0].text.startswith("CELL_MAPPING_UNRELIABLE:") and 'id="a1"' in pasted.content[0].text
    assert not original.is_error and original.content[0].text == "original\n"
