"""Fixtures for the client suite: this build's ``parallax`` binary serving
tests/fixtures/parallax.yaml (policies, an approve rule, approver tokens) on
a free port of 127.0.0.1, an approver acting over HTTP while a call waits,
and the fake services of fakes.py. Nothing here leaves the machine.

The binary is ``$PARALLAX_BIN`` (tests/python_client.rs sets it), else
target/debug/parallax of the repository.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pytest

from fakes import HttpRecorder, SmtpRecorder

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
AGENT_TOKEN = "agent-test-token"
APPROVERS = {"alice": "alice-approver-token", "bob": "bob-approver-token"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def binary() -> Path:
    path = Path(os.environ.get("PARALLAX_BIN") or REPO / "target/debug/parallax").resolve()
    if not path.is_file():
        pytest.fail(f"no parallax binary at {path}: run `cargo build` or set PARALLAX_BIN")
    return path


@dataclass
class Server:
    url: str
    proc: subprocess.Popen[bytes]
    log: Path

    def http(self, method: str, path: str, token: str | None, body: Any = None) -> tuple[int, Any]:
        req = urllib.request.Request(
            self.url + path,
            data=json.dumps(body).encode() if body is not None else None,
            headers={"content-type": "application/json", **({"authorization": f"Bearer {token}"} if token else {})},
            method=method,
        )
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    def pending(self) -> list[dict[str, Any]]:
        status, answer = self.http("GET", "/approvals?status=pending", AGENT_TOKEN)
        assert status == 200, answer
        return list(answer["approvals"])


def start_server(tmp: Path, edits: dict[str, str] | None = None) -> Server:
    """``parallax serve`` on a free port with the suite's config (each key
    of ``edits`` replaced by its value), once it answers ``/health``."""
    shutil.copy(HERE / "fixtures" / "policy.yaml", tmp / "policy.yaml")
    config = (HERE / "fixtures" / "parallax.yaml").read_text()
    for old, new in (edits or {}).items():
        assert old in config, f"{old!r} is not in the test config"
        config = config.replace(old, new)
    (tmp / "parallax.yaml").write_text(config)
    return serve_config(tmp, Path("parallax.yaml"))


def serve_config(tmp: Path, config: Path) -> Server:
    """``parallax serve -c config`` (relative paths from ``tmp``, its
    working directory) on a free port, once it answers ``/health``."""
    port = free_port()
    log = tmp / "serve.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(binary()), "serve", "-c", str(config), "--port", str(port), "--log-level", "warn"],
            cwd=tmp,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    srv = Server(f"http://127.0.0.1:{port}", proc, log)
    deadline = time.monotonic() + 60
    while True:
        if proc.poll() is not None:
            pytest.fail(f"parallax serve exited with {proc.returncode}:\n{log.read_text()}")
        try:
            with urllib.request.urlopen(srv.url + "/health", timeout=2) as r:
                if r.status == 200:
                    return srv
        except (urllib.error.URLError, OSError):
            pass
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"parallax serve did not answer /health within 60 s:\n{log.read_text()}")
        time.sleep(0.05)


def stop_server(srv: Server) -> None:
    srv.proc.terminate()
    try:
        srv.proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        srv.proc.kill()
        srv.proc.wait(timeout=10)


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = start_server(tmp_path_factory.mktemp("parallax"))
    yield srv
    stop_server(srv)


class Approver:
    """A person deciding over HTTP, on a thread, while the call waits: it
    finds the pending approval whose event contains ``marker`` and decides."""

    def __init__(
        self, server: Server, marker: str, decision: str, name: str, comment: str, delay: float
    ) -> None:
        self.server, self.marker, self.decision, self.delay = server, marker, decision, delay
        self.token = APPROVERS[name]
        self.comment = comment
        self.answer: tuple[int, Any] | None = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                for a in self.server.pending():
                    if self.marker in json.dumps(a.get("event")):
                        # Give the caller time to be waiting on it.
                        time.sleep(self.delay)
                        self.answer = self.server.http(
                            "POST",
                            f"/approvals/{a['id']}/{self.decision}",
                            self.token,
                            {"comment": self.comment},
                        )
                        return
                time.sleep(0.05)
            raise AssertionError(f"no pending approval with {self.marker!r} appeared within 30 s")
        except BaseException as e:  # reported by done()
            self.error = e

    def done(self) -> tuple[int, Any]:
        self.thread.join(timeout=35)
        if self.error is not None:
            raise self.error
        assert self.answer is not None, "the approver never decided"
        return self.answer


@pytest.fixture
def approver(server: Server) -> Callable[..., Approver]:
    def start(
        marker: str,
        decision: str = "approve",
        name: str = "alice",
        comment: str = "ok",
        delay: float = 0.3,
        on: Server | None = None,
    ) -> Approver:
        return Approver(on or server, marker, decision, name, comment, delay)

    return start


@pytest.fixture
def recorder() -> Iterator[HttpRecorder]:
    r = HttpRecorder()
    yield r
    r.close()


@pytest.fixture
def smtp() -> Iterator[SmtpRecorder]:
    s = SmtpRecorder()
    yield s
    s.close()


@pytest.fixture
def unused_url() -> str:
    """A loopback URL nothing listens on."""
    return f"http://127.0.0.1:{free_port()}"
