"""Fake services on 127.0.0.1 for the adapters' tests: an HTTP recorder
(Slack's Web API, any JSON service) and a minimal SMTP server. Each records
what it received, so a test can assert what reached the service and what
never did."""

from __future__ import annotations

import json
import socketserver
import threading
import urllib.parse
from dataclasses import dataclass, field
from email import message_from_bytes, policy
from email.message import EmailMessage
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def params(self) -> dict[str, Any]:
        """The JSON or form body as a dict."""
        ctype = self.headers.get("content-type", "")
        if not self.body:
            return {}
        if "json" in ctype:
            return json.loads(self.body)
        return {k: v[0] for k, v in urllib.parse.parse_qs(self.body.decode()).items()}


class HttpRecorder:
    """Answers every request with ``{"ok": true, ...}`` and records it.
    ``slack=True`` answers as Slack's Web API does (``/api/<method>``)."""

    def __init__(self) -> None:
        self.requests: list[Request] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def _handle(self) -> None:
                n = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(n) if n else b""
                req = Request(
                    self.command,
                    self.path,
                    {k.lower(): v for k, v in self.headers.items()},
                    body,
                )
                recorder.requests.append(req)
                params = req.params() if self.command != "GET" else {}
                answer = {"ok": True, "channel": params.get("channel"), "ts": "1700000000.000100"}
                if "text" in params:
                    answer["message"] = {"text": params["text"]}
                data = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _handle

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def calls(self, path: str) -> list[Request]:
        return [r for r in self.requests if r.path.split("?")[0] == path]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@dataclass
class Mail:
    sender: str
    recipients: list[str]
    data: bytes

    def message(self) -> EmailMessage:
        return message_from_bytes(self.data, policy=policy.default)  # type: ignore[return-value]


@dataclass
class SmtpRecorder:
    """Enough SMTP for smtplib: EHLO/HELO, MAIL, RCPT, DATA, RSET, NOOP, QUIT."""

    mails: list[Mail] = field(default_factory=list)

    def __post_init__(self) -> None:
        recorder = self

        class Handler(socketserver.StreamRequestHandler):
            def reply(self, line: str) -> None:
                self.wfile.write((line + "\r\n").encode())

            def handle(self) -> None:
                self.reply("220 fake-smtp ready")
                sender, rcpts = "", []
                while True:
                    raw = self.rfile.readline()
                    if not raw:
                        return
                    line = raw.decode().rstrip("\r\n")
                    verb = line.split(" ", 1)[0].upper()
                    if verb == "EHLO":
                        self.wfile.write(b"250-fake-smtp\r\n250 8BITMIME\r\n")
                    elif verb == "HELO":
                        self.reply("250 fake-smtp")
                    elif verb == "MAIL":
                        sender = line.split(":", 1)[1].strip().split(" ")[0].strip("<>")
                        rcpts = []
                        self.reply("250 ok")
                    elif verb == "RCPT":
                        rcpts.append(line.split(":", 1)[1].strip().strip("<>"))
                        self.reply("250 ok")
                    elif verb == "DATA":
                        self.reply("354 end with .")
                        data = bytearray()
                        while (chunk := self.rfile.readline()) not in (b".\r\n", b""):
                            data += chunk[1:] if chunk.startswith(b"..") else chunk
                        recorder.mails.append(Mail(sender, rcpts, bytes(data)))
                        self.reply("250 queued")
                    elif verb in ("RSET", "NOOP"):
                        self.reply("250 ok")
                    elif verb == "QUIT":
                        self.reply("221 bye")
                        return
                    else:
                        self.reply("502 not implemented")

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
