"""Answers no Parallax server gives, and servers that never answer: both
clients raise a clear error (never hang, never allow)."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from parallax_client import AsyncParallax, Firewall, Parallax, ProtocolError, ServerUnreachable


class Scripted:
    """A TCP server on 127.0.0.1 that answers each connection with fixed
    bytes (after reading the request head), or never answers."""

    def __init__(self, answer: bytes | None) -> None:
        self.answer = answer
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.open: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.open.append(conn)
            _read_request(conn)
            if self.answer is not None:
                conn.sendall(self.answer)
                conn.close()

    def close(self) -> None:
        self.sock.close()
        for c in self.open:
            c.close()


def _read_request(conn: socket.socket) -> None:
    """Reads the whole request (headers, then Content-Length bytes of body):
    closing a socket with unread data resets the connection, and the client
    would see that instead of the scripted answer."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip() or b"0")
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            return
        body += chunk


def http(status: str, body: bytes, extra: str = "") -> bytes:
    return (
        f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n{extra}\r\n"
    ).encode() + body


@pytest.fixture
def scripted() -> Iterator[Callable[[bytes | None], Scripted]]:
    made: list[Scripted] = []

    def make(answer: bytes | None) -> Scripted:
        s = Scripted(answer)
        made.append(s)
        return s

    yield make
    for s in made:
        s.close()


@pytest.mark.parametrize(
    "answer, fragment",
    [
        (http("200 OK", b"<html>proxy login</html>"), "not JSON"),
        (http("200 OK", b'{"verdict": "fine"}'), "`action` must be one of"),
        (http("200 OK", b'{"action": "maybe"}'), "`action` must be one of"),
        (http("200 OK", b"[1, 2]"), "must be a JSON object"),
    ],
)
def test_not_a_verdict(scripted, answer: bytes, fragment: str) -> None:
    srv = scripted(answer)
    with pytest.raises(ProtocolError, match=fragment):
        Parallax(srv.url, timeout=5).check_tool("exec", {"command": "ls"})
    with pytest.raises(ProtocolError, match=fragment):
        asyncio.run(AsyncParallax(srv.url, timeout=5).check_tool("exec", {"command": "ls"}))
    # The firewall does not run a call it could not get a verdict on.
    fw = Firewall(Parallax(srv.url, timeout=5))
    with pytest.raises(ProtocolError):
        fw.enforce("exec", {"command": "ls"})


def test_chunked_and_close_delimited_answers_are_read(scripted) -> None:
    body = b'{"action":"allow","blocked":false,"reasons":[],"results":[],"elapsed_ms":0.1}'
    chunked = (
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"
        + f"{len(body[:10]):x}\r\n".encode() + body[:10] + b"\r\n"
        + f"{len(body[10:]):x}\r\n".encode() + body[10:] + b"\r\n0\r\n\r\n"
    )
    close_delimited = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n" + body
    for answer in (chunked, close_delimited):
        srv = scripted(answer)
        assert asyncio.run(AsyncParallax(srv.url, timeout=5).check_message("hi")).action == "allow"
        assert Parallax(srv.url, timeout=5).check_message("hi").action == "allow"


def test_a_server_that_never_answers_times_out(scripted) -> None:
    srv = scripted(None)
    started = time.monotonic()
    with pytest.raises(ServerUnreachable, match="no answer within 0.5 s"):
        Parallax(srv.url, timeout=0.5).check_tool("exec", {"command": "ls"})
    with pytest.raises(ServerUnreachable, match="no answer within 0.5 s"):
        asyncio.run(AsyncParallax(srv.url, timeout=0.5).check_tool("exec", {"command": "ls"}))
    assert time.monotonic() - started < 5


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="timeout"):
        Parallax("http://127.0.0.1:9", timeout=0)
    with pytest.raises(ValueError, match="wait"):
        Parallax("http://127.0.0.1:9").evaluate({"stage": "tool.before"}, wait=-1)
    with pytest.raises(ValueError, match="approval_timeout"):
        Firewall(Parallax("http://127.0.0.1:9"), approval_timeout=-1)
    with pytest.raises(ServerUnreachable, match="not an http"):
        asyncio.run(AsyncParallax("ftp://127.0.0.1:9").check_message("hi"))
