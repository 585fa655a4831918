"""Charts read as images: Vega-Lite (Altair and raw), Plotly, rendered on ``--as`` only.

The charts are made by a real kernel (Altair, plotly, IPython's display) and
rendered by the real renderers (vl-convert; kaleido with the system
Chromium); the images are checked for their size, their colours and their
fitting, never against stored pixels. The refusals (remote data, no
browser, no extra, a render that never ends) run without a kernel.
"""

from __future__ import annotations

import base64
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from helpers import requires_browser, requires_charts_extra, run_cli
from PIL import Image

from jcli_sidecar.base import BrowserNotFound, ImageTooLarge, JcliError, RemoteDataRefused, RenderFailed
from jcli_sidecar.read.charts import check_chart

RED, GREEN, BLUE = (214, 39, 40), (44, 160, 44), (31, 119, 180)

VEGALITE_BARS = {
    "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
    "data": {"values": [{"k": "x", "v": 4}, {"k": "y", "v": 7}, {"k": "z", "v": 2}]},
    "mark": {"type": "bar", "color": "#2ca02c"},
    "encoding": {"x": {"field": "k", "type": "nominal"}, "y": {"field": "v", "type": "quantitative"}},
    "width": 300,
    "height": 200,
}

#: The kernel's cells: an Altair chart, a raw Vega-Lite bundle, a Plotly figure, and two that ask for remote data.
CELLS = [
    "import altair as alt, pandas as pd\n"
    "alt.renderers.enable('mimetype')  # what JupyterLab shows: the Vega-Lite bundle\n"
    "df = pd.DataFrame({'a': list('ABC'), 'b': [3, 5, 2]})\n"
    "alt.Chart(df).mark_bar(color='#d62728').encode(x='a', y='b').properties(width=240, height=180)",
    "from IPython.display import display\n"
    f"display({{'application/vnd.vegalite.v5+json': {VEGALITE_BARS!r}, 'text/plain': 'a Vega-Lite chart'}}, raw=True)",
    "import plotly.graph_objects as go, plotly.io as pio\n"
    "pio.renderers.default = 'plotly_mimetype'\n"
    "go.Figure(go.Bar(x=[1, 2, 3], y=[3, 1, 2], marker_color='#1f77b4'), layout={'width': 500, 'height': 400}).show()",
    "alt.Chart('https://example.invalid/cars.json').mark_point().encode(x='a:Q')",
    "fig = go.Figure(go.Bar(x=[1], y=[1]))\n"
    "fig.add_layout_image(source='https://example.invalid/logo.png', x=0, y=1, sizex=1, sizey=1)\n"
    "fig.show()",
]


def _chart_mime(output) -> str:
    return next(m for m in output["data"] if "vegalite" in m or "plotly" in m)


def _run_chart_notebook(tmp_path: Path, session: str) -> tuple[Path, dict, str]:
    """The chart cells run by ``j-cli exec`` in a real kernel; the notebook, as saved, and what exec printed."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in CELLS]
    path = tmp_path / "charts.ipynb"
    nbformat.write(nb, str(path))
    ran = run_cli("exec", session, "-f", str(path), cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    return path, json.loads(path.read_text(encoding="utf-8")), ran.stdout.decode()


def _read(path, cell, *extra, env=None):
    return run_cli("-j", "notebook", "output", str(path), "--cell", str(cell), "--output", "0", *extra, env=env)


def _image(result) -> tuple[dict, Image.Image]:
    assert result.returncode == 0, result.stderr
    selected = result.json()["selected"]
    return selected, Image.open(io.BytesIO(base64.b64decode(selected["data"])))


def _count(image: Image.Image, colour: tuple[int, int, int], tolerance: int = 12) -> int:
    rgb = image.convert("RGB")
    data, (width, height) = rgb.tobytes(), rgb.size
    pixels = (data[i : i + 3] for i in range(0, width * height * 3, 3))
    return sum(1 for pixel in pixels if all(abs(a - b) <= tolerance for a, b in zip(pixel, colour, strict=True)))


@requires_charts_extra
@requires_browser
@pytest.mark.timeout(300)  # a kernel run, then a dozen renders, some in Chromium, each a whole j-cli process
def test_charts_made_by_a_kernel_read_as_images_only_when_asked(tmp_path, use_jupyter, kernel_session):
    path, nb, printed = _run_chart_notebook(tmp_path, kernel_session)
    before = path.read_bytes()
    for cell, colour in ((0, RED), (1, GREEN), (2, BLUE)):
        output = nb["cells"][cell]["outputs"][0]
        mime = _chart_mime(output)
        assert f"{mime} " in printed and f"--cell {cell} --output 0 --as image/png" in printed, "exec names the read that renders it"
        catalog = run_cli("-j", "notebook", "outputs", str(path), "--cell", str(cell)).json()
        assert catalog["outputs"][0]["renders_as"] == {"mime_type": mime, "read_with": "--as image/png"}
        human = run_cli("notebook", "outputs", str(path), "--cell", str(cell))
        assert b"as an image: --output 0 --as image/png" in human.stdout
        plain = _read(path, cell)
        assert plain.returncode == 0 and plain.json()["selected"]["mime_type"] != "image/png", "without --as nothing renders"
        verbatim = _read(path, cell, "--mime", mime).json()["selected"]
        assert verbatim["encoding"] == "json" and verbatim["data"] == output["data"][mime], "the spec comes back verbatim"

        shown = _read(path, cell, "--as", "image/png", "--agent-text")
        selected, image = _image(shown)
        assert "rendered from " + mime in shown.json()["agent_text"]["caption"]
        assert selected["mime_type"] == "image/png" and image.format == "PNG"
        assert selected["converted_from"] == mime and selected["original"]["mime_type"] == mime
        assert image.size == (selected["width"], selected["height"]) and min(image.size) >= 150
        assert _count(image, colour) > 2000, f"cell {cell}: the marks are drawn in their colour"

        small, shrunk = _image(_read(path, cell, "--as", "image/png", "--max-edge", "160"))
        assert max(shrunk.size) <= 160 and small["fitted_to"]["max_edge"] == 160 and _count(shrunk, colour) > 300
    jpeg, image = _image(_read(path, 0, "--as", "image/jpeg", "--host", "codex"))
    assert jpeg["mime_type"] == "image/jpeg" and image.format == "JPEG"
    told = _read(path, 1, "--as", "image/png", "--text-only").json()["selected"]
    assert told["withheld"] and "data" not in told and told["mime_type"] == "application/vnd.vegalite.v5+json"
    assert {"mime_type": "text/plain", "bytes": 17} in told["text_forms"]
    for cell in (3, 4):  # data or an image by URL: refused before anything renders, and nothing is fetched
        refused = _read(path, cell, "--as", "image/png")
        assert refused.returncode == 1 and json.loads(refused.stderr)["code"] == "REMOTE_DATA_REFUSED"
    assert path.read_bytes() == before, "a render never changes the notebook"


def _notebook(tmp_path: Path, mime: str, spec: dict) -> Path:
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("chart")
    cell.outputs = [nbformat.v4.new_output("display_data", data={mime: spec, "text/plain": "a chart"})]
    nb.cells = [cell]
    path = tmp_path / "chart.ipynb"
    nbformat.write(nb, str(path))
    return path


REMOTE = [
    ("vegalite", {"data": {"url": "data/cars.json"}, "mark": "point"}),
    ("vegalite", {"layer": [{"data": {"url": "https://example.invalid/x.csv"}, "mark": "bar"}]}),
    ("vegalite", {"data": {"values": [{}]}, "mark": "image", "encoding": {"url": {"value": "https://example.invalid/i.png"}}}),
    ("vega", {"data": [{"name": "t", "url": "file:///etc/passwd"}], "marks": []}),
    ("plotly", {"data": [{"type": "bar", "y": [1]}], "layout": {"images": [{"source": "https://example.invalid/i.png"}]}}),
    ("plotly", {"data": [{"type": "bar", "y": [1]}], "layout": {"images": [{"source": "logo.png"}]}}),
    ("plotly", {"data": [{"type": "scattergeo", "lon": [0], "lat": [0]}]}),
    ("plotly", {"data": [{"type": "scattermapbox", "lon": [0], "lat": [0]}]}),
]


@pytest.mark.parametrize(("renderer", "spec"), REMOTE)
def test_a_chart_asking_for_anything_by_url_is_refused_before_rendering(renderer, spec):
    with pytest.raises(RemoteDataRefused):
        check_chart(renderer, spec)


@requires_charts_extra
def test_inline_data_passes_the_check_whatever_its_rows_hold():
    rows = {"data": {"values": [{"url": "https://example.invalid/not-fetched"}]}, "mark": "text"}
    assert json.loads(check_chart("vegalite", rows)) == rows
    altair = {"datasets": {"d1": [{"url": "x"}]}, "data": {"name": "d1"}, "mark": "point"}
    assert json.loads(check_chart("vegalite", altair)) == altair
    inline = {"data": [{"type": "bar", "y": [1]}], "layout": {"images": [{"source": "data:image/png;base64,iVBORw0KGgo="}]}}
    assert json.loads(check_chart("plotly", inline)) == inline
    with pytest.raises(RenderFailed):
        check_chart("vegalite", ["not", "an", "object"])
    with pytest.raises(ImageTooLarge):
        check_chart("vegalite", {"data": {"values": ["x" * 1024] * (17 * 1024)}})


def test_a_remote_chart_is_a_coded_error_on_the_command_line(tmp_path):
    path = _notebook(tmp_path, "application/vnd.vegalite.v5+json", REMOTE[0][1])
    refused = _read(path, 0, "--as", "image/png")
    assert refused.returncode == 1 and json.loads(refused.stderr)["code"] == "REMOTE_DATA_REFUSED"
    assert _read(path, 0, "--mime", "application/vnd.vegalite.v5+json").json()["selected"]["data"] == REMOTE[0][1]


@requires_charts_extra
def test_a_chart_that_would_render_for_ever_is_ended_at_its_time_limit(tmp_path):
    """A regular expression that backtracks exponentially, in a filter: CPU for ever, memory flat."""
    spec = {
        "data": {"values": [{"s": "a" * 48 + "b"}]},
        "transform": [{"filter": "test(/^(a+)+$/, datum.s)"}],
        "mark": "point",
        "encoding": {"x": {"field": "s", "type": "nominal"}},
    }
    path = _notebook(tmp_path, "application/vnd.vegalite.v5+json", spec)
    ended = _read(path, 0, "--as", "image/png", env=dict(os.environ, JCLI_CHART_SECONDS="2"))
    error = json.loads(ended.stderr)
    assert ended.returncode == 1 and error["code"] == "RENDER_TIMEOUT" and "JCLI_CHART_SECONDS" in error["message"]


@requires_charts_extra
def test_plotly_without_a_browser_on_path_names_what_to_install(tmp_path):
    path = _notebook(tmp_path, "application/vnd.plotly.v1+json", {"data": [{"type": "bar", "y": [2, 1]}], "layout": {}})
    bare = tmp_path / "bin"
    bare.mkdir()
    refused = _read(path, 0, "--as", "image/png", env=dict(os.environ, PATH=str(bare)))
    error = json.loads(refused.stderr)
    assert refused.returncode == 1 and error["code"] == BrowserNotFound.code
    assert "apt-get install chromium" in error["message"] and "none is downloaded" in error["message"]


def test_without_the_charts_extra_the_spec_reads_and_rendering_names_the_extra(tmp_path):
    """A real install without the renderers: the package and its base dependencies only, no site-packages."""
    import click
    import msgpack

    import jcli
    import jcli_sidecar

    libs = tmp_path / "lib"
    for package in (jcli_sidecar, jcli, click, msgpack):
        src = Path(package.__file__).parent
        shutil.copytree(src, libs / src.name, ignore=shutil.ignore_patterns("__pycache__"))
    path = _notebook(tmp_path, "application/vnd.vegalite.v5+json", VEGALITE_BARS)
    env = {"PYTHONPATH": str(libs), "PATH": os.environ["PATH"], "XDG_RUNTIME_DIR": os.environ["XDG_RUNTIME_DIR"], "JCLI_SIDECAR": "off"}
    probe = subprocess.run([sys.executable, "-S", "-c", "import vl_convert"], env=env, capture_output=True)
    assert probe.returncode != 0, "vl-convert must be missing in this environment"
    base = [sys.executable, "-S", "-m", "jcli", "-j", "notebook", "output", str(path), "--cell", "0", "--output", "0"]
    spec = subprocess.run([*base, "--mime", "application/vnd.vegalite.v5+json"], env=env, capture_output=True, timeout=60)
    assert spec.returncode == 0 and json.loads(spec.stdout)["selected"]["data"] == VEGALITE_BARS
    render = subprocess.run([*base, "--as", "image/png"], env=env, capture_output=True, timeout=60)
    error = json.loads(render.stderr)
    assert render.returncode == 1 and error["code"] == "RENDERER_UNAVAILABLE" and "pip install 'j-cli[charts]'" in error["message"]


@requires_charts_extra
@requires_browser
def test_a_rendered_chart_is_kept_by_its_content_for_the_next_read(monkeypatch):
    """The second read renders nothing: it succeeds with a deadline no render meets, and for Plotly with no browser on PATH."""
    from jcli_sidecar.read import OutputQuery, output_envelope, view_spec

    plotly = {"data": [{"type": "bar", "y": [2, 5, 1], "marker": {"color": "#d62728"}}], "layout": {"width": 300, "height": 240}}
    query = OutputQuery(binary=True, view=view_spec(as_mime_type="image/png", max_edge=400))
    for mime, spec in (("application/vnd.vegalite.v5+json", VEGALITE_BARS), ("application/vnd.plotly.v1+json", plotly)):
        raw = {"output_type": "display_data", "metadata": {}, "data": {mime: spec}}
        first = output_envelope(raw, 0, {"kind": "run", "run_id": "r1"}, query)["selected"]
        monkeypatch.setenv("JCLI_CHART_SECONDS", "0.001")
        monkeypatch.setenv("PATH", "/nonexistent")
        again = output_envelope(raw, 0, {"kind": "run", "run_id": "r1"}, query)["selected"]
        assert again["data"] == first["data"] and again["converted_from"] == mime
        changed = {**raw, "data": {mime: {**spec, "width": 301} if "vegalite" in mime else {**spec, "layout": {"width": 301}}}}
        with pytest.raises(JcliError) as other:
            output_envelope(changed, 0, {"kind": "run", "run_id": "r1"}, query)
        assert other.value.code in ("RENDER_TIMEOUT", "BROWSER_NOT_FOUND"), "another content is rendered anew"
        monkeypatch.undo()


def test_exec_lines_name_the_read_that_renders_a_chart(tmp_path, capsys):
    from jcli import emit
    from jcli.notebook_exec import _CellLines

    lines = _CellLines()
    lines.notebook = "nb.ipynb"
    lines.reader(3)(0, "application/vnd.vegalite.v5+json", 417)
    lines.reader(3)(1, "image/png", 417)
    said = capsys.readouterr().out.splitlines()
    assert said[0].endswith("-> j-cli notebook output nb.ipynb --cell 3 --output 0 --as image/png")
    assert said[1].endswith("--cell 3 --output 1")

    doc = {
        "run": {"run_id": "r7"},
        "outputs": [
            {
                "type": "json",
                "output_index": 0,
                "mime": "application/vnd.vegalite.v5+json",
                "path": ".j-cli/outputs/r7/o.json",
                "bytes": 10,
            },
            {"type": "image", "output_index": 1, "mime": "image/png", "path": ".j-cli/outputs/r7/o.png", "bytes": 10},
        ],
    }
    chart, png = emit.stored_output_lines(doc)
    assert chart.endswith("(as an image: j-cli output show r7 --output 0 --as image/png)")
    assert "--as" not in png
    plotly = {"output_type": "display_data", "data": {"application/vnd.plotly.v1+json": {"data": []}, "text/html": "<div>"}}
    assert emit.rich_output(plotly)[0] == "application/vnd.plotly.v1+json"


@requires_charts_extra
def test_a_long_render_in_the_sidecar_leaves_other_reads_answered(tmp_path, sidecar_on):
    """A chart render runs on a sidecar worker thread, never on its loop: a read of the same notebook is answered meanwhile."""
    import psutil

    spec = {
        "data": {"values": [{"s": "a" * 48 + "b"}]},
        "transform": [{"filter": "test(/^(a+)+$/, datum.s)"}],
        "mark": "point",
    }
    path = _notebook(tmp_path, "application/vnd.vegalite.v5+json", spec)
    old = path.stat().st_mtime - 3600
    os.utime(path, (old, old))  # past the racy window: the sidecar trusts its cached notebook and would answer on its loop
    env = dict(os.environ, JCLI_CHART_SECONDS="8")
    started = run_cli("-j", "sidecar", "start", env=env, cwd=tmp_path)
    assert started.returncode == 0, started.stderr
    sidecar = psutil.Process(started.json()["pid"])
    assert run_cli("-j", "notebook", "output", str(path), "--cell", "0", "--output", "0", cwd=tmp_path).returncode == 0
    argv = [sys.executable, "-m", "jcli", "-j", "notebook", "output", str(path), "--cell", "0", "--output", "0", "--as", "image/png"]
    render = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        worker = None
        for _ in range(600):  # bounded: the render's worker appears under the sidecar
            worker = next((p for p in sidecar.children(recursive=True) if "jcli_sidecar.read.chartwork" in " ".join(p.cmdline())), None)
            if worker is not None or render.poll() is not None:
                break
            psutil.wait_procs([], timeout=0.05)
        assert worker is not None, "the render runs in the sidecar's chart worker"
        before = run_cli("-j", "sidecar", "status", cwd=tmp_path).json()
        other = run_cli("-j", "notebook", "output", str(path), "--cell", "0", "--output", "0", cwd=tmp_path)
        assert other.returncode == 0 and other.json()["selected"]["mime_type"] == "text/plain"
        after = run_cli("-j", "sidecar", "status", cwd=tmp_path).json()
        assert before["running"] and after["requests_served"] - before["requests_served"] == 2, "the sidecar itself answered"
        assert worker.is_running() and render.poll() is None, "answered while the render still ran"
    finally:
        render.kill()
        render.communicate()
        run_cli("sidecar", "stop", cwd=tmp_path)
