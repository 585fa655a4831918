"""View-time images: host profiles, fitting, SVG rendering, WebP/GIF, caps.

Everything goes through the real CLI (or the core's view functions) and a
real child process; the notebooks are checked byte for byte afterwards.
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import io
import json
import math
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from helpers import examples, requires_svg_extra, run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from jcli_sidecar.base.errors import JcliError, RenderFailed
from jcli_sidecar.read import imageview
from jcli_sidecar.read.imageview import HOST_PROFILES, render_svg, view_image, view_spec


def _png(width: int, height: int, seed: int = 1, mode: str = "RGB") -> bytes:
    im = (
        Image.effect_noise((width, height), 60).convert(mode)
        if mode != "RGB"
        else Image.merge("RGB", [Image.effect_noise((width, height), 40 + 10 * i + seed) for i in range(3)])
    )
    out = io.BytesIO()
    im.save(out, "PNG", compress_level=1)
    return out.getvalue()


def _encode(frames: list[Image.Image], fmt: str) -> bytes:
    out = io.BytesIO()
    frames[0].save(out, fmt, save_all=len(frames) > 1, append_images=frames[1:])
    return out.getvalue()


def _notebook(path: Path, bundles: list[dict]) -> Path:
    outputs = [{"output_type": "display_data", "metadata": {}, "data": b} for b in bundles]
    nb = {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {},
        "cells": [{"cell_type": "code", "id": "c0", "metadata": {}, "execution_count": 1, "source": "x", "outputs": outputs}],
    }
    path.write_text(json.dumps(nb))
    return path


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _read(nb: Path, output: int, *flags: str):
    return run_cli("-j", "notebook", "output", str(nb), "--cell", "0", "--output", str(output), *flags, cwd=nb.parent)


def _selected(result) -> tuple[dict, bytes]:
    assert result.returncode == 0, result.stdout + result.stderr
    selected = result.json()["selected"]
    return selected, base64.b64decode(selected["data"])


@pytest.fixture(scope="module")
def big_png() -> bytes:
    """Noise, 3000 x 2000: over every host profile's edge, pixel count and bytes (18 MB), so each fit shrinks and re-encodes it."""
    return _png(3000, 2000)


@pytest.mark.slow
def test_a_3000x2000_noise_png_comes_back_within_each_host_profile(tmp_path, big_png):
    nb = _notebook(tmp_path / "big.ipynb", [{"image/png": _b64(big_png), "text/plain": "<Figure>"}])
    before = _sha(nb)
    assert all(3000 > p.max_edge and 3000 * 2000 > p.max_pixels and len(big_png) > p.max_bytes for p in HOST_PROFILES.values())
    for host, profile in HOST_PROFILES.items():
        selected, data = _selected(_read(nb, 0, "--host", host))
        shown = Image.open(io.BytesIO(data))
        assert (selected["width"], selected["height"]) == shown.size, host
        assert max(shown.size) <= profile.max_edge and shown.size[0] * shown.size[1] <= profile.max_pixels, host
        assert len(data) == selected["bytes"] <= profile.max_bytes, host
        assert selected["mime_type"] == "image/png" and shown.format == "PNG"
        assert selected["original"] == {"mime_type": "image/png", "bytes": len(big_png), "width": 3000, "height": 2000}
        assert abs(shown.size[0] / shown.size[1] - 1.5) < 0.01, "the aspect ratio is kept"
    assert _sha(nb) == before, "the notebook is never modified"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.ipynb"], "no intermediate file"


@pytest.mark.slow
def test_explicit_limits_override_the_profile_and_are_all_met(tmp_path, big_png):
    nb = _notebook(tmp_path / "big.ipynb", [{"image/png": _b64(big_png)}])
    selected, data = _selected(_read(nb, 0, "--host", "dsh", "--max-edge", "900", "--max-pixels", "300000", "--max-bytes", "400000"))
    width, height = Image.open(io.BytesIO(data)).size
    assert max(width, height) <= 900 and width * height <= 300_000 and len(data) <= 400_000
    assert selected["fitted_to"] == {"max_edge": 900, "max_pixels": 300_000, "max_bytes": 400_000}
    jpeg, data = _selected(_read(nb, 0, "--as", "image/jpeg", "--max-bytes", "150000"))
    assert jpeg["mime_type"] == "image/jpeg" and data[:3] == b"\xff\xd8\xff" and len(data) <= 150_000


def test_an_image_within_limits_is_returned_byte_identical(tmp_path):
    png = _png(300, 200)
    nb = _notebook(tmp_path / "small.ipynb", [{"image/png": _b64(png)}])
    for flags in (("--host", "claude"), ("--host", "dsh"), ("--max-edge", "300"), ("--as", "image/png")):
        selected, data = _selected(_read(nb, 0, *flags))
        assert data == png and "original" not in selected and (selected["width"], selected["height"]) == (300, 200)


def test_a_header_over_the_pixel_cap_is_refused_before_any_decoding(tmp_path):
    import struct
    import zlib

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    header = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 100_000, 100_000, 8, 2, 0, 0, 0))
    bomb = header + chunk(b"IDAT", zlib.compress(b"\x00" * 1000)) + chunk(b"IEND", b"")
    nb = _notebook(tmp_path / "bomb.ipynb", [{"image/png": _b64(bomb)}])
    result = _read(nb, 0, "--host", "dsh")
    assert result.returncode == 1 and result.error()["code"] == "IMAGE_TOO_LARGE"
    assert "100000x100000" in result.error()["message"]
    plain, data = _selected(_read(nb, 0))  # without a view the stored bytes come back as they are
    assert data == bomb and (plain["width"], plain["height"]) == (100_000, 100_000)


def test_webp_and_gif_are_read_checked_and_animation_is_reported(tmp_path):
    frames = [Image.new("RGB", (240, 160), (40 * i, 90, 200 - 40 * i)) for i in range(4)]
    gif, still_gif, webp = _encode(frames, "GIF"), _encode(frames[:1], "GIF"), _encode(frames[:1], "WEBP")
    awebp = _encode(frames, "WEBP")
    nb = _notebook(
        tmp_path / "formats.ipynb",
        [
            {"image/gif": _b64(gif)},
            {"image/gif": _b64(still_gif)},
            {"image/webp": _b64(webp)},
            {"image/webp": _b64(awebp)},
            {"image/webp": _b64(gif)},
            {"image/gif": _b64(webp)},
        ],
    )
    selected, data = _selected(_read(nb, 0))
    assert data == gif and selected["animated"] is True and (selected["width"], selected["height"]) == (240, 160)
    selected, _ = _selected(_read(nb, 1))
    assert "animated" not in selected
    selected, data = _selected(_read(nb, 2))
    assert selected["mime_type"] == "image/webp" and data == webp and (selected["width"], selected["height"]) == (240, 160)
    assert _selected(_read(nb, 3))[0]["animated"] is True
    for mislabelled in (4, 5):
        result = _read(nb, mislabelled)
        assert result.returncode == 1 and result.error()["code"] == "OUTPUT_DATA_INVALID"
    fitted, data = _selected(_read(nb, 0, "--max-edge", "120"))
    assert fitted["first_frame_only"] is True and fitted["animated"] is True and fitted["mime_type"] == "image/gif"
    assert Image.open(io.BytesIO(data)).size == (120, 80) and getattr(Image.open(io.BytesIO(data)), "n_frames", 1) == 1


def test_as_refuses_text_outputs_and_windows(tmp_path):
    nb = _notebook(tmp_path / "t.ipynb", [{"text/html": "<b>x</b>"}, {"image/png": _b64(_png(10, 10))}])
    result = _read(nb, 0, "--as", "image/png")
    assert result.returncode == 2 and result.error()["code"] == "USAGE_ERROR"
    for flags in (("--as", "image/gif"), ("--host", "nope"), ("--max-edge", "0"), ("--host", "codex", "--as", "image/gif")):
        result = _read(nb, 1, *flags)
        assert result.returncode == 2 and result.error()["code"] == "USAGE_ERROR", flags


# --- SVG -------------------------------------------------------------------

PLOT_SVG = """<?xml version="1.0" encoding="utf-8" standalone="no"?>
<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd">
<svg xmlns="http://www.w3.org/2000/svg" width="300pt" height="200pt" viewBox="0 0 300 200">
  <rect width="300" height="200" fill="#ffffff"/>
  <rect x="20" y="20" width="120" height="80" fill="#0000ff"/>
  <text x="20" y="150" font-size="30">label</text>
</svg>
"""


def _svg_notebook(tmp_path: Path, svgs: list[str]) -> Path:
    return _notebook(tmp_path / "svg.ipynb", [{"image/svg+xml": s, "text/plain": "<svg>"} for s in svgs])


@requires_svg_extra
def test_svg_renders_in_memory_for_codex_and_reports_the_conversion(tmp_path):
    nb = _svg_notebook(tmp_path, [PLOT_SVG])
    before = _sha(nb)
    source = _read(nb, 0, "--mime", "image/svg+xml", "--host", "codex").json()["selected"]
    assert source["data"] == PLOT_SVG, "without --as the XML is returned as text"
    selected, data = _selected(_read(nb, 0, "--mime", "image/svg+xml", "--as", "image/png", "--host", "codex"))
    assert selected["mime_type"] == "image/png" and selected["converted_from"] == "image/svg+xml"
    assert selected["original"]["mime_type"] == "image/svg+xml" and selected["original"]["bytes"] == len(PLOT_SVG.encode())
    shown = Image.open(io.BytesIO(data)).convert("RGB")
    assert shown.size == (selected["width"], selected["height"]) == (300, 200)
    assert shown.getpixel((80, 60)) == (0, 0, 255) and shown.getpixel((250, 30)) == (255, 255, 255)
    dark = sum(1 for x in range(20, 120) for y in range(120, 160) if sum(shown.getpixel((x, y))) < 200)
    assert dark > 50, "the text is drawn (fonts work)"
    auto, _ = _selected(_read(nb, 0, "--as", "image/jpeg"))
    assert auto["mime_type"] == "image/jpeg" and auto["converted_from"] == "image/svg+xml"
    assert _sha(nb) == before and sorted(p.name for p in tmp_path.iterdir()) == ["svg.ipynb"]


def test_without_the_svg_extra_the_xml_reads_and_rendering_is_renderer_unavailable(tmp_path):
    """A real install without pyvips: the package and its base dependencies only."""
    import click
    import msgpack

    import jcli
    import jcli_sidecar

    libs = tmp_path / "lib"
    for package in (jcli_sidecar, jcli, click, msgpack):
        src = Path(package.__file__).parent
        shutil.copytree(src, libs / src.name, ignore=shutil.ignore_patterns("__pycache__"))
    nb = _svg_notebook(tmp_path, [PLOT_SVG])
    env = {"PYTHONPATH": str(libs), "PATH": os.environ["PATH"], "XDG_RUNTIME_DIR": os.environ["XDG_RUNTIME_DIR"], "JCLI_SIDECAR": "off"}
    base = [
        sys.executable,
        "-S",
        "-m",
        "jcli",
        "-j",
        "notebook",
        "output",
        str(nb),
        "--cell",
        "0",
        "--output",
        "0",
        "--mime",
        "image/svg+xml",
    ]
    probe = subprocess.run([sys.executable, "-S", "-c", "import pyvips"], env=env, capture_output=True)
    assert probe.returncode != 0, "pyvips must be missing in this environment"
    text = subprocess.run(base, env=env, capture_output=True, timeout=60)
    assert text.returncode == 0, text.stderr
    assert json.loads(text.stdout)["selected"]["data"] == PLOT_SVG
    render = subprocess.run([*base, "--as", "image/png"], env=env, capture_output=True, timeout=60)
    error = json.loads(render.stderr)
    assert render.returncode == 1 and error["code"] == "RENDERER_UNAVAILABLE"
    assert "pip install 'j-cli[svg]'" in error["message"]


class _Recorder(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self):  # noqa: N802 (the stdlib's name)
        _Recorder.hits.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.end_headers()
        self.wfile.write(_png(8, 8))

    def log_message(self, *args):
        pass


@pytest.fixture
def loopback_server():
    _Recorder.hits = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join()


def _malicious(tmp_path: Path, url: str) -> dict[str, str]:
    red = tmp_path / "red.png"
    Image.new("RGB", (50, 50), (255, 0, 0)).save(red)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # opening it for reading would block until the deadline: any open shows as a failure
    other = tmp_path / "other.svg"
    other.write_text('<svg xmlns="http://www.w3.org/2000/svg"><rect id="a" width="50" height="50" fill="#ff0000"/></svg>')
    svg = '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="100" height="100">{}</svg>'
    laughs = "".join(f'<!ENTITY l{i} "' + f"&l{i - 1};" * 10 + '">' for i in range(1, 10))
    bomb = _png(20, 20)
    return {
        "http href": svg.format(
            f'<image href="{url}/x.png" width="100" height="100"/><image xlink:href="{url}/y.png" width="100" height="100"/>'
        ),
        "file href": svg.format(
            f'<image href="file:///etc/passwd" width="100" height="100"/><image href="file://{red}" width="100" height="100"/>'
            f'<image href="{red}" width="100" height="100"/><image href="file://{fifo}" width="10" height="10"/>'
            f'<image href="{fifo}" width="10" height="10"/><use href="{other}#a"/><use href="file://{other}#a"/>'
        ),
        "css import": svg.format(
            f'<style>@import url("{url}/evil.css"); @import url("file://{fifo}");</style><rect width="10" height="10"/>'
        ),
        "entity expansion": f'<?xml version="1.0"?><!DOCTYPE svg [<!ENTITY l0 "ha">{laughs}]><svg xmlns="http://www.w3.org/2000/svg"><text>&l9;</text></svg>',
        "external entity": '<?xml version="1.0"?><!DOCTYPE svg [<!ENTITY x SYSTEM "file:///etc/passwd">]><svg xmlns="http://www.w3.org/2000/svg"><text>&x;</text></svg>',
        "huge size": '<svg xmlns="http://www.w3.org/2000/svg" width="1e9" height="1e9"><rect width="1e9" height="1e9" fill="#00ff00"/></svg>',
        "deep nesting": '<svg xmlns="http://www.w3.org/2000/svg">' + "<g>" * 10_000 + "</g>" * 10_000 + "</svg>",
        "script": svg.format(
            f'<script>fetch("{url}/script")</script><rect width="100" height="100" fill="#00ff00" onload="fetch(\'{url}/onload\')"/>'
        ),
        "embedded bomb": svg.format(
            '<image width="10" height="10" href="data:image/png;base64,'
            + _b64(bomb[:16] + (20000).to_bytes(4, "big") + (20000).to_bytes(4, "big") + bomb[24:])
            + '"/>'
        ),
        "embedded svg": svg.format('<image width="10" height="10" href="data:image/svg+xml;base64,' + _b64(b"<svg/>") + '"/>'),
    }


@requires_svg_extra
@pytest.mark.slow
def test_malicious_svgs_are_refused_or_rendered_without_their_effect(tmp_path, loopback_server):
    cases = _malicious(tmp_path, loopback_server)
    nb = _svg_notebook(tmp_path, list(cases.values()))
    before = _sha(nb)
    listing = sorted(p.name for p in tmp_path.iterdir())
    outcomes = {}
    for i, name in enumerate(cases):
        result = _read(nb, i, "--mime", "image/svg+xml", "--as", "image/png")
        if result.returncode == 0:
            selected, data = _selected(result)
            shown = Image.open(io.BytesIO(data)).convert("RGB")
            assert max(shown.size) <= imageview.CAPS.svg_default_edge, name
            assert shown.getcolors(1 << 24) is None or (255, 0, 0) not in {c for _, c in shown.getcolors(1 << 24)}, (
                f"{name}: a local file's pixels were drawn"
            )
            outcomes[name] = "rendered"
        else:
            error = result.error()
            assert error["code"] in ("RENDER_FAILED", "IMAGE_TOO_LARGE"), (name, error)
            assert "took longer" not in error["message"], f"{name}: the renderer blocked (it opened the FIFO)"
            outcomes[name] = error["code"]
    assert _Recorder.hits == [], "nothing may reach the network"
    assert outcomes["entity expansion"] == outcomes["external entity"] == outcomes["deep nesting"] == "RENDER_FAILED"
    assert outcomes["embedded bomb"] == "IMAGE_TOO_LARGE" and outcomes["embedded svg"] == "RENDER_FAILED"
    assert outcomes["file href"] == outcomes["script"] == outcomes["http href"] == "rendered"
    assert _sha(nb) == before and sorted(p.name for p in tmp_path.iterdir()) == listing


@pytest.mark.slow
def test_the_memory_cap_and_the_deadline_are_real(monkeypatch):
    big = _png(7000, 7000, mode="L")
    spec = view_spec(max_edge=100)
    monkeypatch.setattr(imageview.CAPS, "child_memory_bytes", 150 * 1024 * 1024)
    with pytest.raises(RenderFailed):
        view_image("image/png", big, spec)
    monkeypatch.setattr(imageview.CAPS, "child_memory_bytes", 2048 * 1024 * 1024)
    monkeypatch.setattr(imageview.CAPS, "child_seconds", 0.2)
    with pytest.raises(RenderFailed, match="longer than 0.2 s"):
        view_image("image/png", big, spec)


@pytest.mark.slow
def test_a_fit_through_the_sidecar_matches_the_in_process_one(tmp_path, sidecar_on, big_png):
    nb = _notebook(tmp_path / "big.ipynb", [{"image/png": _b64(big_png)}])
    direct = _selected(
        run_cli(
            "-j",
            "notebook",
            "output",
            str(nb),
            "--cell",
            "0",
            "--output",
            "0",
            "--host",
            "dsh",
            cwd=tmp_path,
            env=dict(os.environ, JCLI_SIDECAR="off"),
        )
    )
    assert run_cli("sidecar", "start", cwd=tmp_path).returncode == 0
    served = run_cli("-j", "sidecar", "status", cwd=tmp_path).json()["requests_served"]
    through = _selected(_read(nb, 0, "--host", "dsh"))
    stats = run_cli("-j", "sidecar", "status", cwd=tmp_path).json()
    assert through == direct and direct[0]["width"] <= 2048
    assert stats["running"] is True and stats["requests_served"] >= served + 2, stats  # the read went through it


# --- fuzzing ---------------------------------------------------------------

_TAGS = st.sampled_from(["g", "rect", "circle", "text", "image", "use", "path", "svg", "defs", "style", "script", "foreignObject"])
_VALUES = st.one_of(
    st.sampled_from(
        [
            "0",
            "-1",
            "1e9",
            "1e-9",
            "NaN",
            "100%",
            "#a",
            "url(#x)",
            "file:///etc/passwd",
            "http://127.0.0.1:9/x",
            "data:image/png;base64,AAAA",
            "data:text/html,<b>",
            "M0 0 L10 10 Z",
            "",
        ]
    ),
    st.text(max_size=12),
)
_ATTRS = st.dictionaries(
    st.sampled_from(["width", "height", "x", "y", "r", "href", "d", "fill", "transform", "viewBox"]), _VALUES, max_size=4
)


@st.composite
def _svg_trees(draw, depth=0):
    tag = draw(_TAGS)
    attrs = "".join(f' {k}="{json.dumps(v)[1:-1]}"' for k, v in draw(_ATTRS).items())
    children = draw(st.lists(_svg_trees(depth + 1), max_size=3)) if depth < 4 else []
    text = draw(st.text(max_size=8)).replace("<", "").replace("&", "")
    return f"<{tag}{attrs}>{text}{''.join(children)}</{tag}>"


@requires_svg_extra
@pytest.mark.slow
@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=_svg_trees(), width=st.sampled_from(["100", "1e9", "0", "-5", "abc", "50pt"]))
def test_generated_svgs_never_produce_a_traceback(body, width):
    svg = f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="80">{body}</svg>'
    try:
        mime, data, _ = render_svg(svg, view_spec(as_mime_type="image/png"))
    except JcliError as err:
        assert err.code in ("RENDER_FAILED", "IMAGE_TOO_LARGE")
        assert "Traceback" not in err.message
        return
    assert mime == "image/png" and data.startswith(b"\x89PNG")


@st.composite
def _images(draw):
    fmt = draw(st.sampled_from(["PNG", "JPEG", "GIF", "WEBP"]))
    size = (draw(st.integers(1, 600)), draw(st.integers(1, 600)))
    mode = draw(st.sampled_from(["RGB", "L", "RGBA", "P"] if fmt != "JPEG" else ["RGB", "L"]))
    im = Image.new(mode, size, draw(st.integers(0, 255)) if mode in ("L", "P") else (1, 2, 3, 4)[: len(mode)])
    out = io.BytesIO()
    im.save(out, fmt)
    data = out.getvalue()
    damaged = draw(st.booleans())
    if damaged:  # damage it after the signature
        cut = draw(st.integers(12, max(12, len(data) - 1)))
        data = data[:cut] + draw(st.binary(max_size=64))
    return "image/" + fmt.lower(), data, damaged


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(image=_images(), edge=st.integers(1, 700), host=st.sampled_from([None, *HOST_PROFILES]))
def test_generated_and_damaged_images_never_produce_a_traceback(image, edge, host):
    mime, data, damaged = image
    try:
        shown, out, facts = view_image(mime, data, view_spec(host=host, max_edge=edge))
    except JcliError as err:
        # only these codes, and only for damaged input: a viewer that always failed cannot pass
        assert err.code in ("RENDER_FAILED", "IMAGE_TOO_LARGE"), f"{err.code}: {err.message}"
        assert "Traceback" not in err.message
        assert damaged, f"an intact {mime} failed: {err.code}: {err.message}"
        return
    if out == data:
        return  # within the limits: the stored bytes, untouched (even damaged ones)
    width, height = Image.open(io.BytesIO(out)).size
    assert max(width, height) <= edge and facts["original"]["mime_type"] == mime


def test_the_worker_cannot_write_any_file():
    """The worker, started as imageview starts it, runs with RLIMIT_FSIZE = 0 (and its memory and CPU caps).

    The limits are read from the live worker process by the kernel's own
    account (psutil reads /proc), while the worker waits for its request;
    then it gets one and answers as usual.
    """
    import msgpack
    import psutil

    from jcli_sidecar.read.imageview import CAPS, worker_command

    worker = subprocess.Popen(worker_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        proc = psutil.Process(worker.pid)
        deadline = time.monotonic() + 30
        while proc.rlimit(psutil.RLIMIT_FSIZE) != (0, 0):  # the caps come first, before the request is read
            assert worker.poll() is None and time.monotonic() < deadline, "the worker never capped its file writes"
        assert proc.rlimit(psutil.RLIMIT_AS) == (CAPS.child_memory_bytes, CAPS.child_memory_bytes)
        soft_cpu, hard_cpu = proc.rlimit(psutil.RLIMIT_CPU)
        assert soft_cpu == math.ceil(CAPS.child_seconds) and hard_cpu == soft_cpu + 1
        out, err = worker.communicate(
            msgpack.packb({"op": "fit", "mime": "image/png", "data": _png(4, 3), "target": "image/png", "decode_pixels": 100}), timeout=60
        )
    finally:
        worker.kill()
        worker.wait()
    answer = msgpack.unpackb(out, raw=False)
    assert answer["ok"] and (answer["width"], answer["height"]) == (4, 3), (answer, err)


def test_a_file_size_limit_of_zero_makes_every_write_fail(tmp_path):
    """What RLIMIT_FSIZE = 0 does: writing even one byte to a file fails (EFBIG; Python ignores SIGXFSZ)."""
    import errno

    target = tmp_path / "intermediate.png"
    code = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))\n"
        "try:\n"
        f"    with open({str(target)!r}, 'wb') as fh:\n"
        "        fh.write(b'x'); fh.flush()\n"
        "except OSError as exc:\n"
        "    sys.exit(exc.errno)\n"
    )
    proc = subprocess.run([sys.executable, "-B", "-c", code], capture_output=True, timeout=60)
    assert proc.returncode == errno.EFBIG, proc.stderr
    assert target.stat().st_size == 0
