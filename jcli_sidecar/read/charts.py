"""Charts rendered as images: Vega and Vega-Lite (vl-convert), Plotly (kaleido with a system Chromium).

Only on an explicit ``--as`` (``as_mime_type``): without it a chart's spec is
returned verbatim. Before anything renders, the spec is checked here: it must
be a JSON object within :data:`CHART_BYTES` (which bounds the renderer's
memory: vl-convert's V8 cannot run under an address-space cap), ask for no
data or resource from outside itself (``REMOTE_DATA_REFUSED``), and find its
renderer installed (``RENDERER_UNAVAILABLE``, naming the ``[charts]`` extra)
and, for Plotly, a Chrome or Chromium on the system (``BROWSER_NOT_FOUND``:
none is ever downloaded). The render runs in a child process
(:mod:`jcli_sidecar.read.chartwork`) that is ended with everything it started
at the ``JCLI_CHART_SECONDS`` deadline (``RENDER_TIMEOUT``).

A rendered image is kept in a byte-bounded LRU keyed by the chart's content
and the view asked for, so a second read (in the sidecar, which outlives
reads) costs no render.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import threading
from collections import OrderedDict

from ..base import (
    BrowserNotFound,
    ImageTooLarge,
    RemoteDataRefused,
    RendererUnavailable,
    RenderFailed,
    RenderTimedOut,
    UsageError,
    dump_json,
    error_from_code,
    setting,
)
from .host_profiles import MiB
from .mime import chart_kind

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .imageview import ViewSpec

__all__ = [
    "BROWSERS",
    "CHARTS_INSTALL_HINT",
    "CHART_BYTES",
    "check_chart",
    "find_browser",
    "render_chart",
]

CHARTS_INSTALL_HINT = "install the charts extra: pip install 'j-cli[charts]'"
#: The largest chart spec rendered (its JSON): the bound on the renderer's memory.
CHART_BYTES = 16 * MiB
#: Bytes of rendered images kept for second reads.
CACHE_BYTES = 64 * MiB
#: The browsers a Plotly render looks for on PATH, in this order.
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
#: Plotly traces that draw on maps whose data or tiles plotly.js fetches from the network.
_MAP_TRACES = frozenset(
    {"scattergeo", "choropleth", "scattermapbox", "choroplethmapbox", "densitymapbox", "scattermap", "choroplethmap", "densitymap"}
)
#: Plotly keys whose string value names a resource to load; only inline ``data:`` URIs are drawn.
_PLOTLY_SOURCES = frozenset({"source", "url", "topojson", "topojsonURL"})
_RENDERERS = {"vegalite": ("vl_convert",), "vega": ("vl_convert",), "plotly": ("kaleido", "plotly")}

_cache: OrderedDict[str, tuple[str, bytes, dict[str, Any]]] = OrderedDict()
_cache_bytes = 0
_cache_lock = threading.Lock()


def render_chart(mime: str, value: Any, spec: ViewSpec) -> tuple[str, bytes, dict[str, Any]]:
    """Render the chart ``value`` (under ``mime``) as ``spec`` wants it: ``(mime, bytes, facts)``.

    Raises:
        RendererUnavailable, RemoteDataRefused, BrowserNotFound, RenderTimedOut,
        ImageTooLarge, RenderFailed, UsageError.
    """
    kind = chart_kind(mime)
    if kind is None:
        raise UsageError(f"{mime} is not a chart")
    renderer, major = kind
    source = check_chart(renderer, value)
    from .imageview import CAPS, _limits

    target = spec.as_mime_type or "image/png"
    limits = _limits(spec)
    limits.setdefault("max_edge", CAPS.svg_default_edge)
    key = hashlib.sha256(b"\0".join([mime.encode(), target.encode(), dump_json(limits), source])).hexdigest()
    with _cache_lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
            return hit[0], hit[1], dict(hit[2])
    request: dict[str, Any] = {"op": renderer, "spec": source, "target": target, **limits}
    if renderer == "vegalite":
        request["version"] = _vegalite_version(major)
    if renderer == "plotly":
        request["browser"] = find_browser()
        request["plotly_js"] = _plotly_js()
    done = _run_worker(request)
    facts = {
        "converted_from": mime,
        "original": {"mime_type": mime, "bytes": len(source), "width": done["original_width"], "height": done["original_height"]},
        "fitted_to": {k: v for k, v in limits.items() if k != "decode_pixels"},
    }
    _remember(key, (done["mime"], done["data"], facts))
    return done["mime"], done["data"], dict(facts)


def check_chart(renderer: str, value: Any) -> bytes:
    """The chart's JSON, once it is proven renderable here: an object, within the cap, all its data inline, its renderer installed.

    Raises:
        RenderFailed: not an object, or over :data:`CHART_BYTES`.
        RemoteDataRefused: it asks for data or a resource by URL.
        RendererUnavailable: the ``[charts]`` extra is not installed.
    """
    if not isinstance(value, dict):
        raise RenderFailed("the chart is not a JSON object")
    source = dump_json(value)
    if len(source) > CHART_BYTES:
        raise ImageTooLarge(f"the chart is {len(source)} bytes, over the {CHART_BYTES}-byte cap for rendering")
    if renderer == "plotly":
        _check_plotly(value)
    else:
        _check_vega(value)
    import importlib.util

    missing = [name for name in _RENDERERS[renderer] if importlib.util.find_spec(name) is None]
    if missing:
        raise RendererUnavailable(f"rendering this chart needs {', '.join(missing)}, which is not installed; {CHARTS_INSTALL_HINT}")
    return source


def _walk(value: Any, skip: frozenset[str] = frozenset()):
    """Every ``(key, value)`` of every object in ``value``, depth first, without recursion; keys in ``skip`` not entered."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, child in item.items():
                yield key, child
                if key not in skip and isinstance(child, (dict, list)):
                    stack.append(child)
        elif isinstance(item, list):
            stack.extend(child for child in item if isinstance(child, (dict, list)))


def _check_vega(spec: dict[str, Any]) -> None:
    """Vega and Vega-Lite: a ``url`` anywhere outside the data rows (data, image marks, the url channel) is remote."""
    for key, _ in _walk(spec, skip=frozenset({"values", "datasets"})):
        if key == "url":
            raise RemoteDataRefused("the chart loads data or images by URL; only inline data is rendered (nothing is fetched)")


def _check_plotly(figure: dict[str, Any]) -> None:
    """Plotly: no map traces (their map data and tiles come from the network), every image or layer source inline."""
    traces = figure.get("data")
    for trace in traces if isinstance(traces, list) else ():
        if isinstance(trace, dict) and trace.get("type") in _MAP_TRACES:
            raise RemoteDataRefused(f"the figure has a {trace['type']} trace, whose map is fetched from the network; it is not rendered")
    for key, child in _walk(figure, skip=frozenset({"x", "y", "z", "text", "customdata", "hovertext"})):
        if key in _PLOTLY_SOURCES and isinstance(child, str) and child.strip() and not child.lstrip().lower().startswith("data:"):
            raise RemoteDataRefused(f"the figure loads a resource by URL ({key}); only inline data: images are rendered")


def find_browser() -> str:
    """The Chrome or Chromium on PATH that draws Plotly figures.

    Raises:
        BrowserNotFound: none of :data:`BROWSERS` is on PATH.
    """
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    raise BrowserNotFound(
        f"rendering a Plotly figure needs Chrome or Chromium on PATH ({', '.join(BROWSERS)}); "
        "install one (Debian: apt-get install chromium); none is downloaded"
    )


def _plotly_js() -> str:
    import importlib.util

    found = importlib.util.find_spec("plotly")
    path = os.path.join(os.path.dirname(found.origin or ""), "package_data", "plotly.min.js") if found else ""
    if not os.path.isfile(path):
        raise RendererUnavailable(f"plotly.js is not in the installed plotly package; {CHARTS_INSTALL_HINT}")
    return path


def _vegalite_version(major: int) -> str:
    import vl_convert

    versions = [v for v in vl_convert.get_vegalite_versions() if v.split(".")[0] == str(major)]
    if not versions:
        raise RenderFailed(
            f"Vega-Lite v{major} is not one the installed vl-convert renders ({', '.join(vl_convert.get_vegalite_versions())})"
        )
    return max(versions, key=lambda v: tuple(int(p) for p in v.split(".")))


def _remember(key: str, entry: tuple[str, bytes, dict[str, Any]]) -> None:
    global _cache_bytes
    size = len(entry[1])
    if size > CACHE_BYTES:
        return
    with _cache_lock:
        if key in _cache:
            return
        _cache[key] = entry
        _cache_bytes += size
        while _cache_bytes > CACHE_BYTES:
            _, dropped = _cache.popitem(last=False)
            _cache_bytes -= len(dropped[1])


def worker_command(seconds: float) -> list[str]:
    """The chart worker's command line: this interpreter, the worker module, its CPU cap (past the wall-clock deadline: renderers run threads)."""
    import math

    return [sys.executable, "-B", "-m", "jcli_sidecar.read.chartwork", str(math.ceil(2 * seconds) + 1)]


def _end_all(proc: subprocess.Popen) -> None:
    """End the worker and every process it started (Chromium runs in sessions of its own)."""
    import psutil

    try:
        family = psutil.Process(proc.pid).children(recursive=True)
    except psutil.Error:
        family = []
    for member in [*family, proc]:
        try:
            member.kill()
        except (psutil.Error, ProcessLookupError):
            pass


def _run_worker(request: dict[str, Any]) -> dict[str, Any]:
    import msgpack

    seconds = setting("JCLI_CHART_SECONDS")
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.Popen(
        worker_command(seconds), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, start_new_session=True
    )
    try:
        out, _ = proc.communicate(msgpack.packb(request, use_bin_type=True), timeout=seconds)
    except subprocess.TimeoutExpired:
        _end_all(proc)
        proc.communicate()
        raise RenderTimedOut(f"the chart did not render within {seconds:g} s (JCLI_CHART_SECONDS) and was ended") from None
    except BaseException:
        _end_all(proc)
        proc.communicate()
        raise
    _end_all(proc)  # a browser left behind by a finished render goes too
    try:
        answer = msgpack.unpackb(out, raw=False)
    except (ValueError, msgpack.ExtraData, msgpack.FormatError, msgpack.StackError):
        answer = None
    if not isinstance(answer, dict) or "ok" not in answer:
        import signal

        if proc.returncode == -signal.SIGXCPU:
            raise RenderTimedOut(f"the chart render used up its CPU time ({seconds:g} s, JCLI_CHART_SECONDS) and was ended")
        how = f"was killed by signal {-proc.returncode}" if proc.returncode < 0 else f"exited with {proc.returncode}"
        raise RenderFailed(f"the chart worker {how} before answering")
    if not answer["ok"]:
        raise error_from_code(answer.get("code", RenderFailed.code), answer.get("message", ""))
    return answer
