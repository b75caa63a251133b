"""HTTP for the clients, standard library only: urllib for the sync client,
an asyncio stream for the async one (one request per connection, HTTP/1.1,
``Connection: close``), and one reading of the answer for both."""

from __future__ import annotations

import asyncio
import http.client
import json
import socket
import ssl
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, Mapping

from .errors import ApiError, ProtocolError, ServerUnreachable

VERSION = "0.1.0"
USER_AGENT = f"parallax-client-python/{VERSION}"
#: An answer larger than this is refused rather than read into memory.
MAX_BODY_BYTES = 16 * 1024 * 1024
LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}


@dataclass(frozen=True)
class Config:
    """How to reach one server; shared by a sync client and its async twin."""

    url: str
    token: str | None
    timeout: float
    fail_closed: bool

    def target(self, path: str, query: Mapping[str, Any] | None) -> str:
        url = self.url.rstrip("/") + path
        if query:
            url += "?" + urllib.parse.urlencode({k: v for k, v in query.items() if v is not None})
        return url

    def headers(self, with_body: bool) -> dict[str, str]:
        h = {"Accept": "application/json", "User-Agent": USER_AGENT}
        if with_body:
            h["Content-Type"] = "application/json"
        if self.token:
            h["Authorization"] = f"Bearer {self.token}"
        return h


def encode(body: Any) -> bytes:
    """JSON for the wire; values JSON cannot carry are sent as their ``repr``."""
    return json.dumps(body, default=repr, ensure_ascii=False).encode("utf-8")


def read_answer(status: int, raw: bytes, url: str) -> Any:
    """The JSON of an answer, or the error it carries."""
    try:
        value = json.loads(raw.decode("utf-8")) if raw else None
    except (UnicodeDecodeError, json.JSONDecodeError):
        value = None
        if status < 400:
            raise ProtocolError(
                f"{url} answered {status} with a body that is not JSON: {raw[:200]!r}"
            ) from None
    if status >= 400:
        err = value.get("error") if isinstance(value, dict) else None
        if isinstance(err, dict):
            raise ApiError(status, str(err.get("code", "error")), str(err.get("message", "")))
        text = raw[:200].decode("utf-8", "replace")
        raise ApiError(status, "http_error", f"{url}: {text}")
    return value


def _opener(url: str) -> urllib.request.OpenerDirector:
    # A proxy from the environment must not sit between an agent and its
    # local policy server.
    host = urllib.parse.urlsplit(url).hostname or ""
    if host in LOOPBACK:
        return urllib.request.build_opener(urllib.request.ProxyHandler({}))
    return urllib.request.build_opener()


def request_sync(
    cfg: Config,
    method: str,
    path: str,
    body: Any = None,
    query: Mapping[str, Any] | None = None,
    wait: float = 0.0,
) -> Any:
    """One request; ``wait`` extends the timeout by the time the server may hold it."""
    url = cfg.target(path, query)
    data = encode(body) if body is not None else None
    req = urllib.request.Request(url, data=data, headers=cfg.headers(data is not None), method=method)
    try:
        with _opener(url).open(req, timeout=cfg.timeout + wait) as r:
            status, raw = r.status, r.read(MAX_BODY_BYTES + 1)
    except urllib.error.HTTPError as e:
        status, raw = e.code, e.read(MAX_BODY_BYTES + 1)
    except urllib.error.URLError as e:
        raise ServerUnreachable(cfg.url, e.reason) from e
    except (TimeoutError, socket.timeout) as e:
        raise ServerUnreachable(cfg.url, f"no answer within {cfg.timeout + wait:g} s") from e
    except (OSError, http.client.HTTPException) as e:
        raise ServerUnreachable(cfg.url, e) from e
    if len(raw) > MAX_BODY_BYTES:
        raise ProtocolError(f"{url} answered with more than {MAX_BODY_BYTES} bytes")
    return read_answer(status, raw, url)


async def request_async(
    cfg: Config,
    method: str,
    path: str,
    body: Any = None,
    query: Mapping[str, Any] | None = None,
    wait: float = 0.0,
) -> Any:
    """:func:`request_sync` over an asyncio connection."""
    url = cfg.target(path, query)
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ServerUnreachable(cfg.url, f"`{cfg.url}` is not an http:// or https:// URL")
    tls = ssl.create_default_context() if parts.scheme == "https" else None
    port = parts.port or (443 if tls else 80)
    data = encode(body) if body is not None else b""
    target = parts.path or "/"
    if parts.query:
        target += "?" + parts.query
    host_header = parts.netloc.rsplit("@", 1)[-1]
    lines = [f"{method} {target} HTTP/1.1", f"Host: {host_header}", "Connection: close"]
    lines += [f"{k}: {v}" for k, v in cfg.headers(body is not None).items()]
    if body is not None:
        lines.append(f"Content-Length: {len(data)}")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    writer = None
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(parts.hostname, port, ssl=tls), cfg.timeout
        )
        writer.write(head + data)
        await writer.drain()
        status, raw = await asyncio.wait_for(_read_response(reader), cfg.timeout + wait)
    except asyncio.TimeoutError as e:
        raise ServerUnreachable(cfg.url, f"no answer within {cfg.timeout + wait:g} s") from e
    except (OSError, asyncio.IncompleteReadError, ValueError) as e:
        raise ServerUnreachable(cfg.url, e) from e
    finally:
        if writer is not None:
            writer.close()
    return read_answer(status, raw, url)


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    status_line = (await reader.readline()).decode("latin-1").strip()
    parts = status_line.split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        raise ProtocolError(f"not an HTTP answer: {status_line[:100]!r}")
    status = int(parts[1])
    headers: dict[str, str] = {}
    while True:
        line = (await reader.readline()).decode("latin-1")
        if line in ("\r\n", "\n", ""):
            break
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if status in (100, 101):
        raise ProtocolError(f"unexpected interim answer {status}")
    if "chunked" in headers.get("transfer-encoding", "").lower():
        body = bytearray()
        while True:
            size = int((await reader.readline()).split(b";")[0].strip() or b"0", 16)
            if size == 0:
                break
            if len(body) + size > MAX_BODY_BYTES:
                raise ProtocolError(f"the answer is larger than {MAX_BODY_BYTES} bytes")
            body += await reader.readexactly(size)
            await reader.readline()
        return status, bytes(body)
    if "content-length" in headers:
        n = int(headers["content-length"])
        if n > MAX_BODY_BYTES:
            raise ProtocolError(f"the answer is larger than {MAX_BODY_BYTES} bytes")
        return status, await reader.readexactly(n)
    # Neither length nor chunks: the body runs to the end of the connection.
    body = bytearray()
    while chunk := await reader.read(65536):
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            raise ProtocolError(f"the answer is larger than {MAX_BODY_BYTES} bytes")
    return status, bytes(body)
