"""A local stand-in for the model APIs the agent programs call: it records every request and streams a fixed reply.

Anthropic Messages (``POST /v1/messages``, what Claude Code calls) and OpenAI Responses (``POST /v1/responses``,
what Codex calls) are answered as server-sent events; a request without ``"stream": true`` gets the plain JSON
message. Everything else (Codex's websocket attempt, telemetry, token counting) is a 404, which the programs
take as "not offered" and go on.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import struct
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

REPLY = "pong from the stand-in"
_WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


@dataclass
class Recorded:
    """One request the stand-in received."""

    method: str
    path: str
    body: Any  # the parsed JSON body, or None


@dataclass
class StandIn:
    """A running stand-in: its base URL and what it has received so far."""

    port: int
    requests: list[Recorded] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def record(self, rec: Recorded) -> None:
        with self.lock:
            self.requests.append(rec)

    def model_requests(self, path: str) -> list[Any]:
        """The JSON bodies of the model calls posted to ``path`` (``/v1/messages`` or ``/v1/responses``)."""
        with self.lock:
            return [r.body for r in self.requests
                    if r.method in ("POST", "WS") and r.path.split("?")[0] == path and isinstance(r.body, dict)]


def _sse(events: list[tuple[str, dict[str, Any]]]) -> bytes:
    return b"".join(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events)


def _anthropic(model: str) -> tuple[list[tuple[str, dict[str, Any]]], dict[str, Any]]:
    usage = {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    message = {"id": "msg_standin", "type": "message", "role": "assistant", "model": model, "content": [],
               "stop_reason": None, "stop_sequence": None, "usage": usage}
    events = [
        ("message_start", {"type": "message_start", "message": message}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": REPLY}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                           "usage": {"output_tokens": 5}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    whole = {**message, "content": [{"type": "text", "text": REPLY}], "stop_reason": "end_turn"}
    return events, whole


def _openai(model: str) -> tuple[list[tuple[str, dict[str, Any]]], dict[str, Any]]:
    item = {"type": "message", "id": "msg_standin", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": REPLY, "annotations": []}]}
    usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
             "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15}
    response = {"id": "resp_standin", "object": "response", "status": "completed", "model": model,
                "output": [item], "usage": usage}
    events = [
        ("response.created", {"type": "response.created", "response": {**response, "status": "in_progress",
                                                                         "output": []}}),
        ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
        ("response.completed", {"type": "response.completed", "response": response}),
    ]
    return events, response


def _decode(raw: bytes, encoding: str) -> Any:
    if encoding == "gzip":
        raw = gzip.decompress(raw)
    elif encoding == "deflate":
        raw = zlib.decompress(raw)
    try:
        return json.loads(raw)
    except ValueError:
        return None


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        return _decode(raw, (self.headers.get("Content-Encoding") or "").lower()) if raw else None

    def _send(self, status: int, ctype: str, payload: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _not_found(self) -> None:
        self._send(404, "application/json", b'{"error": {"type": "not_found_error", "message": "not offered"}}')

    def do_GET(self) -> None:
        if self.path.split("?")[0] == "/v1/responses" and self.headers.get("Upgrade", "").lower() == "websocket":
            self._websocket()
            return
        self.server.standin.record(Recorded("GET", self.path, None))
        self._not_found()

    # Codex opens the Responses API as a websocket first (and retries for ~7 s before falling back to HTTP),
    # so the stand-in speaks it: each text message is {"type": "response.create", ...request}, each reply event
    # one text message.
    def _websocket(self) -> None:
        key = self.headers.get("Sec-WebSocket-Key", "")
        accept = base64.b64encode(hashlib.sha1((key + _WS_GUID).encode()).digest()).decode()
        self.send_response(101)
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept)
        self.end_headers()
        self.wfile.flush()
        self.close_connection = True
        message = b""
        while (frame := self._ws_read()) is not None:
            opcode, fin, payload = frame
            if opcode == 8:
                self._ws_write(8, payload[:2])
                return
            if opcode == 9:
                self._ws_write(10, payload)
                continue
            if opcode not in (0, 1, 2):
                continue
            message += payload
            if not fin:
                continue
            body, message = _decode(message, ""), b""
            self.server.standin.record(Recorded("WS", self.path, body))
            if isinstance(body, dict) and body.get("type") == "response.create":
                events, _ = _openai(str(body.get("model", "stand-in")))
                for _name, data in events:
                    self._ws_write(1, json.dumps(data).encode())

    def _ws_read(self) -> tuple[int, bool, bytes] | None:
        head = self.rfile.read(2)
        if len(head) < 2:
            return None
        fin, opcode, masked, length = bool(head[0] & 0x80), head[0] & 0x0F, bool(head[1] & 0x80), head[1] & 0x7F
        if length == 126:
            length = struct.unpack("!H", self.rfile.read(2))[0]
        elif length == 127:
            length = struct.unpack("!Q", self.rfile.read(8))[0]
        mask = self.rfile.read(4) if masked else b""
        data = self.rfile.read(length)
        if len(data) < length:
            return None
        if masked:
            data = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
        return opcode, fin, data

    def _ws_write(self, opcode: int, payload: bytes) -> None:
        n = len(payload)
        size = (bytes([n]) if n < 126
                else b"\x7e" + struct.pack("!H", n) if n < 65536 else b"\x7f" + struct.pack("!Q", n))
        head = bytes([0x80 | opcode]) + size
        try:
            self.wfile.write(head + payload)
            self.wfile.flush()
        except OSError:
            pass

    def do_HEAD(self) -> None:
        self.server.standin.record(Recorded("HEAD", self.path, None))
        self._not_found()

    def do_POST(self) -> None:
        body = self._body()
        self.server.standin.record(Recorded("POST", self.path, body))
        route = self.path.split("?")[0]
        model = body.get("model", "stand-in") if isinstance(body, dict) else "stand-in"
        if route == "/v1/messages":
            events, whole = _anthropic(str(model))
        elif route == "/v1/responses":
            events, whole = _openai(str(model))
        else:
            self._not_found()
            return
        if isinstance(body, dict) and body.get("stream"):
            self._send(200, "text/event-stream", _sse(events))
        else:
            self._send(200, "application/json", json.dumps(whole).encode())


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a program closing its connection mid-read is not the stand-in's concern

    def __init__(self, standin_ref: list[StandIn]) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.standin = StandIn(self.server_address[1])
        standin_ref.append(self.standin)


@contextmanager
def running() -> Iterator[StandIn]:
    """A stand-in on 127.0.0.1 at an ephemeral port, for the duration of the block."""
    ref: list[StandIn] = []
    server = _Server(ref)
    thread = threading.Thread(target=server.serve_forever, name="model-standin", daemon=True)
    thread.start()
    try:
        yield ref[0]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
