"""A scripted model on loopback: what a real agent host talks to in a test turn.

A host (Claude Code, Codex, OpenCode, the DSH runtime) is pointed at this
server through its own base-URL or provider setting. The server speaks the
three wire dialects those hosts use, chosen by the request's path:

- ``.../messages``: Anthropic Messages (streaming SSE, or one JSON message);
- ``.../responses``: OpenAI Responses (streaming SSE);
- ``.../chat/completions``: OpenAI chat completions (streaming SSE), which
  OpenAI-compatible providers and DeepSeek speak.

It plays a *script*: a list of steps, each a :class:`ToolCall` or a
:class:`Say`. Which step answers a request is the number of tool results the
request's conversation already holds, so side requests a host sends on its
own (a title, a summary: requests that offer no tools) never move the
script; they are answered with :attr:`ScriptedModel.side_text`. A step may
also be a function of the parsed request (:class:`Seen`) returning a step,
for an argument the model only learns from an earlier tool result.

Every request is recorded as it came (:attr:`ScriptedModel.requests`) and
parsed into the content parts the model received (:class:`Seen`), so a test
asserts on exactly what the host sent: an image part's bytes, a tool
result's text, a user message the host added.

Only loopback is ever bound, and nothing here opens a connection.
"""

from __future__ import annotations

import base64
import http.server
import itertools
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["Part", "Say", "ScriptedModel", "Seen", "ToolCall", "base64_leaks"]


@dataclass
class ToolCall:
    """One step: the model calls tool ``name`` with ``arguments``.

    ``extra`` is merged into the dialect's call item as it is (for a field
    one host needs and the others do not, such as a Responses namespace).
    """

    name: str
    arguments: dict
    extra: dict = field(default_factory=dict)


@dataclass
class Say:
    """One step: the model answers with ``text`` and ends its turn."""

    text: str = "done"


@dataclass
class Part:
    """One content part the model received.

    ``role`` is ``tool`` for a part inside a tool result, else the message's
    role (``user``, ``assistant``, ``system``). ``kind`` is ``text`` or
    ``image``; an image's ``data`` is its decoded bytes and ``mime`` its type
    (None when a URL named no type). ``tool_call_id`` names the call a tool
    result answers.
    """

    role: str
    kind: str
    text: str = ""
    data: bytes = b""
    mime: str | None = None
    tool_call_id: str | None = None


@dataclass
class Seen:
    """One request as the model received it: its dialect, raw body, and parts in order."""

    dialect: str
    path: str
    body: dict
    parts: list[Part]
    offers_tools: bool

    @property
    def tool_results(self) -> list[list[Part]]:
        """The parts of each tool result, in order (one list per tool result)."""
        grouped: dict[str, list[Part]] = {}
        for part in self.parts:
            if part.role == "tool":
                grouped.setdefault(part.tool_call_id or "", []).append(part)
        return list(grouped.values())

    def images(self) -> list[Part]:
        return [p for p in self.parts if p.kind == "image"]

    def texts(self) -> list[Part]:
        return [p for p in self.parts if p.kind == "text"]


def base64_leaks(seen: Seen, data: bytes) -> list[str]:
    """The text parts that carry ``data`` as base64 (any 60-character run of it): none, in a good turn."""
    encoded = base64.b64encode(data).decode()
    probes = [encoded[i : i + 60] for i in range(0, max(len(encoded) - 60, 1), 997)]
    return [p.text[:200] for p in seen.texts() if any(probe in p.text for probe in probes)]


Step = ToolCall | Say | Callable[[Seen], "ToolCall | Say"]


# ---- Reading a request: each dialect's content parts ----------------------------------------


def _data_url(url: str) -> tuple[bytes, str | None]:
    """The bytes and type of a ``data:`` URL; a non-data URL gives no bytes."""
    if not url.startswith("data:"):
        return b"", None
    head, _, payload = url.partition(",")
    mime = head[5:].split(";")[0] or None
    return (base64.b64decode(payload) if head.endswith(";base64") else payload.encode()), mime


def _chat_parts(body: dict) -> list[Part]:
    parts: list[Part] = []
    for message in body.get("messages", []):
        role = message.get("role", "")
        call_id = message.get("tool_call_id")
        content = message.get("content")
        items = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        for item in items:
            if item.get("type") == "text":
                parts.append(Part(role, "text", text=item.get("text", ""), tool_call_id=call_id))
            elif item.get("type") == "image_url":
                url = item["image_url"]["url"] if isinstance(item.get("image_url"), dict) else item.get("image_url", "")
                data, mime = _data_url(url)
                parts.append(Part(role, "image", data=data, mime=mime, tool_call_id=call_id))
        for call in message.get("tool_calls") or []:
            parts.append(Part(role, "text", text=json.dumps(call.get("function", {})), tool_call_id=call.get("id")))
    return parts


def _responses_content(role: str, items, call_id: str | None) -> list[Part]:
    if isinstance(items, str):
        return [Part(role, "text", text=items, tool_call_id=call_id)]
    parts = []
    for item in items or []:
        kind = item.get("type", "")
        if kind in ("input_text", "output_text", "text"):
            parts.append(Part(role, "text", text=item.get("text", ""), tool_call_id=call_id))
        elif kind == "input_image":
            data, mime = _data_url(item.get("image_url", ""))
            parts.append(Part(role, "image", data=data, mime=mime, tool_call_id=call_id))
    return parts


def _responses_parts(body: dict) -> list[Part]:
    parts: list[Part] = []
    if isinstance(body.get("instructions"), str):
        parts.append(Part("system", "text", text=body["instructions"]))
    items = body.get("input", [])
    for item in [{"role": "user", "content": items}] if isinstance(items, str) else items:
        kind = item.get("type", "message")
        if kind == "message":
            parts.extend(_responses_content(item.get("role", ""), item.get("content"), None))
        elif kind.endswith("_call_output"):  # function_call_output, custom_tool_call_output
            parts.extend(_responses_content("tool", item.get("output"), item.get("call_id")))
        elif kind == "tool_search_output":  # the tools a tool_search call found: one text part, their JSON
            parts.append(Part("tool", "text", text=json.dumps(item.get("tools")), tool_call_id=item.get("call_id")))
        elif kind.endswith("_call"):
            parts.append(Part("assistant", "text", text=json.dumps(item), tool_call_id=item.get("call_id")))
    return parts


def _responses_offers_tools(body: dict) -> bool:
    """Tools in ``tools``, or (Codex's code mode) in an ``additional_tools`` input item."""
    items = body.get("input")
    return bool(body.get("tools")) or (isinstance(items, list) and any(i.get("type") == "additional_tools" for i in items))


def _anthropic_blocks(role: str, content, call_id: str | None) -> list[Part]:
    if isinstance(content, str):
        return [Part(role, "text", text=content, tool_call_id=call_id)]
    parts: list[Part] = []
    for block in content or []:
        kind = block.get("type")
        if kind == "text":
            parts.append(Part(role, "text", text=block.get("text", ""), tool_call_id=call_id))
        elif kind == "image":
            source = block.get("source", {})
            data = base64.b64decode(source["data"]) if source.get("type") == "base64" else b""
            parts.append(Part(role, "image", data=data, mime=source.get("media_type"), tool_call_id=call_id))
        elif kind == "tool_result":  # an empty result still counts as one (a text part with no text)
            inner = _anthropic_blocks("tool", block.get("content"), block.get("tool_use_id"))
            parts.extend(inner or [Part("tool", "text", tool_call_id=block.get("tool_use_id"))])
        elif kind == "tool_reference":  # what Claude Code's ToolSearch answers: the deferred tool it loaded
            parts.append(Part(role, "text", text=block.get("tool_name", ""), tool_call_id=call_id))
        elif kind == "tool_use":
            parts.append(Part(role, "text", text=json.dumps(block.get("input")), tool_call_id=block.get("id")))
    return parts


def _anthropic_parts(body: dict) -> list[Part]:
    system = body.get("system")
    parts = _anthropic_blocks("system", system, None) if system else []
    for message in body.get("messages", []):
        parts.extend(_anthropic_blocks(message.get("role", ""), message.get("content"), None))
    return parts


_READERS = {"chat": _chat_parts, "responses": _responses_parts, "anthropic": _anthropic_parts}


def _dialect(path: str) -> str | None:
    path = path.split("?", 1)[0].rstrip("/")
    if path.endswith("/chat/completions"):
        return "chat"
    if path.endswith("/responses"):
        return "responses"
    if path.endswith("/messages"):
        return "anthropic"
    return None


# ---- Writing an answer: each dialect's stream ----------------------------------------------


def _sse(event: str | None, doc: dict) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(doc)}\n\n".encode()


def _chat_answer(step: ToolCall | Say, n: int) -> list[bytes]:
    if isinstance(step, ToolCall):
        call = {"index": 0, "id": f"call_{n}", "type": "function", "function": {"name": step.name, "arguments": json.dumps(step.arguments)}}
        chunks = [
            {"delta": {"role": "assistant", "tool_calls": [{**call, **step.extra}]}, "finish_reason": None},
            {"delta": {}, "finish_reason": "tool_calls"},
        ]
    else:
        chunks = [{"delta": {"role": "assistant", "content": step.text}, "finish_reason": None}, {"delta": {}, "finish_reason": "stop"}]
    usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    docs = [
        {"id": f"chatcmpl-{n}", "object": "chat.completion.chunk", "created": 0, "model": "m", "choices": [{"index": 0, **c}]}
        for c in chunks
    ]
    docs[-1]["usage"] = usage
    return [*(_sse(None, d) for d in docs), b"data: [DONE]\n\n"]


_RESPONSES_USAGE = {
    "input_tokens": 1,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens": 1,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 2,
}


def _responses_call(step: ToolCall, n: int) -> dict:
    """The output item of a tool call; ``extra["type"]`` picks the kind of call.

    ``function_call`` (the default): ``name`` and JSON-string ``arguments``
    (a ``namespace`` in ``extra`` names a namespaced tool);
    ``tool_search_call``: the search's ``arguments`` as an object, run by the
    client; ``custom_tool_call`` (a freeform tool): ``arguments["input"]`` is
    the tool's raw text input.
    """
    kind = step.extra.get("type", "function_call")
    item: dict = {"type": kind, "id": f"fc_{n}", "call_id": f"call_{n}", "status": "completed"}
    if kind == "tool_search_call":
        item.update(execution="client", arguments=step.arguments)
    elif kind == "custom_tool_call":
        item.update(name=step.name, input=step.arguments["input"])
    else:
        item.update(name=step.name, arguments=json.dumps(step.arguments))
    item.update(step.extra)
    return item


def _responses_answer(step: ToolCall | Say, n: int) -> list[bytes]:
    if isinstance(step, ToolCall):
        item = _responses_call(step, n)
    else:
        text = {"type": "output_text", "text": step.text, "annotations": []}
        item = {"type": "message", "id": f"msg_{n}", "role": "assistant", "status": "completed", "content": [text]}
    response = {"id": f"resp_{n}", "object": "response", "created_at": 0, "model": "m", "status": "in_progress", "output": []}
    events = [
        _sse("response.created", {"type": "response.created", "sequence_number": 0, "response": response}),
        _sse(
            "response.output_item.added",
            {"type": "response.output_item.added", "sequence_number": 1, "output_index": 0, "item": {**item, "status": "in_progress"}},
        ),
    ]
    if isinstance(step, Say):
        delta = {
            "type": "response.output_text.delta",
            "sequence_number": 2,
            "item_id": item["id"],
            "output_index": 0,
            "content_index": 0,
            "delta": step.text,
        }
        events.append(_sse(delta["type"], delta))
    events.append(
        _sse("response.output_item.done", {"type": "response.output_item.done", "sequence_number": 3, "output_index": 0, "item": item})
    )
    done = {**response, "status": "completed", "output": [item], "usage": _RESPONSES_USAGE}
    events.append(_sse("response.completed", {"type": "response.completed", "sequence_number": 4, "response": done}))
    return events


def _anthropic_message(step: ToolCall | Say, n: int) -> dict:
    if isinstance(step, ToolCall):
        block = {"type": "tool_use", "id": f"toolu_{n}", "name": step.name, "input": step.arguments, **step.extra}
        stop = "tool_use"
    else:
        block, stop = {"type": "text", "text": step.text}, "end_turn"
    usage = {"input_tokens": 1, "output_tokens": 1}
    return {
        "id": f"msg_{n}",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [block],
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": usage,
    }


def _anthropic_answer(step: ToolCall | Say, n: int) -> list[bytes]:
    message = _anthropic_message(step, n)
    block = message["content"][0]
    if block["type"] == "tool_use":
        start = {**block, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
    else:
        start, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": block["text"]}
    head = {**message, "content": [], "stop_reason": None}
    return [
        _sse("message_start", {"type": "message_start", "message": head}),
        _sse("content_block_start", {"type": "content_block_start", "index": 0, "content_block": start}),
        _sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
        _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": 1},
            },
        ),
        _sse("message_stop", {"type": "message_stop"}),
    ]


_WRITERS = {"chat": _chat_answer, "responses": _responses_answer, "anthropic": _anthropic_answer}


class ScriptedModel:
    """A loopback model server playing ``script``; use as a context manager.

    Example:
        with ScriptedModel([ToolCall("bash", {"command": "ls"}), Say("done")]) as model:
            ...  # point the host at model.url ("http://127.0.0.1:PORT")
        model.turn  # the requests that offered tools, parsed (Seen), in order
    """

    def __init__(self, script: list[Step], side_text: str = "title", *, listen: bool = True):
        self.script = list(script)
        self.side_text = side_text
        #: Every request received, parsed, in arrival order.
        self.requests: list[Seen] = []
        self._lock = threading.Lock()
        self._ids = itertools.count()
        self._mounts: dict[str, ScriptedModel] = {}
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler()) if listen else None
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True) if self._server else None
        self._url = f"http://127.0.0.1:{self._server.server_port}" if self._server else ""

    @property
    def url(self) -> str:
        return self._url

    def mount(self, name: str, script: list[Step], side_text: str = "title") -> ScriptedModel:
        """A model of its own at ``{url}/{name}``, served by this one's server, replacing one mounted there before.

        For a host that keeps its base URL from turn to turn: each turn plays
        a new script, and the mounted model alone records (and answers) the
        requests under its prefix, so a late side request of an earlier turn
        under another prefix never lands in this one.
        """
        model = ScriptedModel(script, side_text, listen=False)
        model._url = f"{self.url}/{name}"
        with self._lock:
            self._mounts[name] = model
        return model

    def _route(self, path: str) -> ScriptedModel:
        """The mounted model whose prefix ``path`` starts with, else this one."""
        with self._lock:
            return self._mounts.get(path.lstrip("/").split("/", 1)[0], self)

    @property
    def turn(self) -> list[Seen]:
        """The requests that offered tools: the agent's turn, without the host's side requests."""
        return [seen for seen in self.requests if seen.offers_tools]

    def __enter__(self) -> ScriptedModel:
        if self._thread is not None:
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._server is not None and self._thread is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join()

    def _step(self, seen: Seen) -> ToolCall | Say:
        index = len(seen.tool_results)
        if not seen.offers_tools:
            return Say(self.side_text)
        if index >= len(self.script):
            return Say()
        step = self.script[index]
        return step if isinstance(step, (ToolCall, Say)) else step(seen)

    def answer(self, dialect: str, path: str, body: dict) -> tuple[ToolCall | Say, int, Seen]:
        """Record one request and choose its step (the handler's logic, without HTTP)."""
        offers = _responses_offers_tools(body) if dialect == "responses" else bool(body.get("tools"))
        seen = Seen(dialect, path, body, _READERS[dialect](body), offers)
        with self._lock:
            self.requests.append(seen)
            n = next(self._ids)
        return self._step(seen), n, seen

    def _handler(self):
        model = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _send(self, status: int, kind: str, chunks: list[bytes]) -> None:
                payload = b"".join(chunks)
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self):  # a model list, a health probe: nothing to offer
                self._send(200, "application/json", [json.dumps({"object": "list", "data": []}).encode()])

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                path = self.path.split("?", 1)[0]
                if path.endswith("/count_tokens"):
                    return self._send(200, "application/json", [b'{"input_tokens": 1}'])
                dialect = _dialect(path)
                if dialect is None:
                    return self._send(404, "application/json", [b'{"error": {"message": "no such route"}}'])
                step, n, _ = model._route(path).answer(dialect, path, body)
                if dialect == "anthropic" and not body.get("stream"):
                    return self._send(200, "application/json", [json.dumps(_anthropic_message(step, n)).encode()])
                self._send(200, "text/event-stream", _WRITERS[dialect](step, n))

        return Handler
