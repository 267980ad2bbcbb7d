"""Hand-made WebSocket clients for abuse tests and the abuse benchmark: raw sockets bound to a chosen local
address (127.0.0.2, … stand for distinct client addresses on loopback) that can flood without reading,
stop half-way through a handshake, or send frames of any size."""

from __future__ import annotations

import base64
import os
import select
import socket
import struct
import time

from signaling.protocol import SUBPROTOCOL


def tcp(port: int, source: str = "127.0.0.1", host: str = "127.0.0.1") -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind((source, 0))
    sock.settimeout(10)
    sock.connect((host, port))
    return sock


def upgrade_request(port: int, extra_headers: str = "") -> bytes:
    key = base64.b64encode(os.urandom(16)).decode()
    return (f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: {SUBPROTOCOL}\r\n"
            f"{extra_headers}\r\n").encode()


def handshake(port: int, source: str = "127.0.0.1") -> socket.socket:
    """A WebSocket connection from ``source`` whose 101 response has been read (the welcome may follow)."""
    sock = tcp(port, source)
    sock.sendall(upgrade_request(port))
    response = b""
    while b"\r\n\r\n" not in response:
        chunk = sock.recv(4096)
        if not chunk:
            raise ConnectionError("closed during the handshake")
        response += chunk
    if not response.startswith(b"HTTP/1.1 101"):
        raise ConnectionError(response.split(b"\r\n", 1)[0].decode(errors="replace"))
    return sock


def frame(payload: str | bytes, opcode: int | None = None) -> bytes:
    """One masked client frame (text for str, binary for bytes unless ``opcode`` says otherwise)."""
    data = payload.encode() if isinstance(payload, str) else payload
    op = opcode if opcode is not None else (1 if isinstance(payload, str) else 2)
    size = len(data)
    if size < 126:
        header = struct.pack("!BB", 0x80 | op, 0x80 | size)
    elif size < 1 << 16:
        header = struct.pack("!BBH", 0x80 | op, 0x80 | 126, size)
    else:
        header = struct.pack("!BBQ", 0x80 | op, 0x80 | 127, size)
    mask = os.urandom(4)
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(data)) if size < 4096 else _mask(data, mask)
    return header + mask + masked


def _mask(data: bytes, mask: bytes) -> bytes:
    repeated = (mask * (len(data) // 4 + 1))[: len(data)]
    return (int.from_bytes(data, "big") ^ int.from_bytes(repeated, "big")).to_bytes(len(data), "big")


def flood(sock: socket.socket, one_frame: bytes, seconds: float) -> int:
    """Send ``one_frame`` over and over for ``seconds`` without ever reading; returns the frames fully sent.
    Stops early (quietly) when the server closes the connection."""
    batch = one_frame * max(1, 65536 // len(one_frame))
    sock.setblocking(False)
    deadline = time.monotonic() + seconds
    sent = 0
    view = memoryview(batch)
    offset = 0
    try:
        while (left := deadline - time.monotonic()) > 0:
            _, writable, _ = select.select([], [sock], [], min(left, 0.1))
            if not writable:
                continue
            offset += sock.send(view[offset:])
            if offset == len(batch):
                sent += len(batch)
                offset = 0
    except OSError:
        pass  # reset by the server
    return (sent + offset) // len(one_frame)


def close_code(sock: socket.socket, timeout: float = 3.0) -> int | None:
    """Read (unmasked) server frames until a close frame; its code, or None when none came in ``timeout``."""
    sock.setblocking(True)
    sock.settimeout(timeout)
    buffer = b""
    try:
        while True:
            while len(buffer) >= 2:
                opcode, size = buffer[0] & 0x0F, buffer[1] & 0x7F
                start = 2
                if size == 126:
                    if len(buffer) < 4:
                        break
                    size, start = struct.unpack("!H", buffer[2:4])[0], 4
                elif size == 127:
                    if len(buffer) < 10:
                        break
                    size, start = struct.unpack("!Q", buffer[2:10])[0], 10
                if len(buffer) < start + size:
                    break
                if opcode == 8:
                    return int(struct.unpack("!H", buffer[start:start + 2])[0]) if size >= 2 else 1005
                buffer = buffer[start + size:]
            chunk = sock.recv(65536)
            if not chunk:
                return None
            buffer += chunk
    except OSError:
        return None
