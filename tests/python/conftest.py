"""Fixtures for the SDK proxy suite: the scripted fake upstream
(fake_upstream.py), a Parallax binary serving the proxy in front of it with
the shipped rules, and the official SDK clients pointed at that proxy.

Everything listens on 127.0.0.1; every client gets an explicit base URL and a
dummy key, so nothing here can reach the internet.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from scenarios import FORBIDDEN_PHRASE, FORBIDDEN_RULE

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
FAKE = HERE / "fake_upstream.py"


STARTUP_TIMEOUT_S = 60.0
CLIENT_TIMEOUT_S = 30.0

Json = dict[str, Any]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def http_get(url: str, timeout: float = 5.0) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def http_post_json(url: str, body: Json, timeout: float = 5.0) -> tuple[int, str]:
    req = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def stop(proc: subprocess.Popen[Any]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@dataclass
class FakeUpstream:
    """The running fake model server and its request log."""

    proc: subprocess.Popen[str]
    port: int
    log: Path
    _mark: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def script(self, scenario: Json) -> None:
        """Replaces the scenario (every endpoint restarts at step one) and
        starts a new section of the log for [`requests`]."""
        status, text = http_post_json(f"{self.url}/_fake/scenario", scenario)
        assert status == 200, f"the fake upstream refused the scenario: {status} {text}"
        self._mark = self._lines()

    def _lines(self) -> int:
        if not self.log.exists():
            return 0
        with self.log.open(encoding="utf-8") as f:
            return sum(1 for _ in f)

    def requests(self) -> list[Json]:
        """Requests received since the last [`script`] call, oldest first."""
        if not self.log.exists():
            return []
        with self.log.open(encoding="utf-8") as f:
            lines = f.read().splitlines()
        return [json.loads(line) for line in lines[self._mark :]]

    def model_requests(self, path: str) -> list[Json]:
        return [r for r in self.requests() if r["method"] == "POST" and r["path"] == path]


def start_fake(tmp: Path) -> FakeUpstream:
    script = tmp / "scenario.json"
    script.write_text(json.dumps({"messages": [], "chat": [], "responses": []}))
    log = tmp / "requests.jsonl"
    proc = subprocess.Popen(
        [sys.executable, str(FAKE), "--port", "0", "--script", str(script), "--log", str(log)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("PORT "):
        stop(proc)
        err = proc.stderr.read() if proc.stderr else ""
        raise RuntimeError(f"fake_upstream.py did not print PORT first: {line!r}; stderr: {err}")
    return FakeUpstream(proc=proc, port=int(line.split()[1]), log=log)


@dataclass
class Parallax:
    """A running `parallax serve` with the proxy on."""

    proc: subprocess.Popen[bytes]
    port: int
    audit_log: Path
    stderr_path: Path
    extra: Json = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def audit(self) -> list[Json]:
        if not self.audit_log.exists():
            return []
        return [
            json.loads(line)
            for line in self.audit_log.read_text(encoding="utf-8").splitlines()
            if line.strip()
        ]

    def stderr(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")


def parallax_bin() -> Path:
    value = os.environ.get("PARALLAX_BIN")
    path = Path(value) if value else REPO / "target" / "debug" / "parallax"
    if not path.is_absolute():
        path = REPO / path
    if not path.exists():
        pytest.exit(
            f"no parallax binary at {path}: run `cargo build --bin parallax` or set PARALLAX_BIN",
            returncode=2,
        )
    return path


def start_parallax(
    tmp: Path,
    upstream: str,
    proxy_extra: Json | None = None,
    env: dict[str, str] | None = None,
) -> Parallax:
    """`parallax serve -c <tmp>/parallax.yaml`: the shipped rules, one
    test rule, the proxy in front of `upstream`, an audit log.
    `proxy_extra` adds keys to the `proxy:` section (named upstreams);
    `env` adds variables to the server's environment."""
    tmp.mkdir(parents=True, exist_ok=True)
    port = free_port()
    audit_log = tmp / "audit.jsonl"
    # JSON is YAML: no YAML library needed.
    config = {
        "server": {"host": "127.0.0.1", "port": port},
        "reporting": {"log_file": str(audit_log)},
        "proxy": {
            "enabled": True,
            "anthropic_upstream": upstream,
            "openai_upstream": upstream,
            "connect_timeout_ms": 2000,
            "response_timeout_ms": 20000,
            **(proxy_extra or {}),
        },
        "rules_dir": str(REPO / "rules"),
        "evaluators": [
            {
                "name": "sdk-test-guards",
                "type": "pattern",
                "stages": ["message.before"],
                "rules": [
                    {
                        "id": FORBIDDEN_RULE,
                        "action": "block",
                        "reason": "the SDK suite's forbidden phrase",
                        "keywords": [FORBIDDEN_PHRASE],
                        "fields": ["message_text"],
                    }
                ],
            }
        ],
    }
    cfg = tmp / "parallax.yaml"
    cfg.write_text(json.dumps(config, indent=2))
    stderr_path = tmp / "parallax.stderr"
    with stderr_path.open("wb") as err:
        proc = subprocess.Popen(
            [str(parallax_bin()), "serve", "-c", str(cfg), "--log-level", "warn"],
            stdout=subprocess.DEVNULL,
            stderr=err,
            cwd=tmp,
            env={**os.environ, **(env or {})},
        )
    return wait_healthy(
        Parallax(proc=proc, port=port, audit_log=audit_log, stderr_path=stderr_path)
    )


def wait_healthy(px: Parallax) -> Parallax:
    """`px` once its `/health` answers; stopped, with its stderr in the
    error, if it exits or does not answer in time."""
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if px.proc.poll() is not None:
            raise RuntimeError(f"parallax exited with {px.proc.returncode}: {px.stderr()}")
        try:
            status, _ = http_get(f"{px.url}/health", timeout=1.0)
            if status == 200:
                return px
        except OSError:
            pass
        time.sleep(0.1)
    stop(px.proc)
    raise RuntimeError(f"parallax did not answer /health within {STARTUP_TIMEOUT_S} s: {px.stderr()}")


@pytest.fixture(scope="session")
def fake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeUpstream]:
    f = start_fake(tmp_path_factory.mktemp("fake"))
    yield f
    stop(f.proc)


@pytest.fixture(scope="session")
def parallax(tmp_path_factory: pytest.TempPathFactory, fake: FakeUpstream) -> Iterator[Parallax]:
    px = start_parallax(tmp_path_factory.mktemp("parallax"), fake.url)
    yield px
    stop(px.proc)


@pytest.fixture(scope="session")
def parallax_no_upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Parallax]:
    """A proxy whose upstream is a port nothing listens on."""
    dead = free_port()
    px = start_parallax(tmp_path_factory.mktemp("parallax-dead"), f"http://127.0.0.1:{dead}")
    yield px
    stop(px.proc)


@pytest.fixture
def upstream(fake: FakeUpstream) -> FakeUpstream:
    """The fake upstream with an empty scenario and a fresh log section;
    each test scripts its own steps."""
    fake.script({"messages": [], "chat": [], "responses": []})
    return fake


@pytest.fixture
def session_id() -> str:
    """A session of the test's own (sent as `x-parallax-session`), so the
    SQL rules' windows (rate limits, the blocked-retry lockout) of one test
    never reach another."""
    return f"sdk-test-{uuid.uuid4().hex[:12]}"


def make_anthropic(base: str, session_id: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        api_key="sk-ant-test-dummy",
        base_url=f"{base}/anthropic",
        max_retries=0,
        timeout=CLIENT_TIMEOUT_S,
        default_headers={"x-parallax-session": session_id},
    )


def make_openai(
    base: str, session_id: str, path: str = "/openai/v1", api_key: str = "sk-test-dummy"
) -> openai.OpenAI:
    """The OpenAI SDK at `base` + `path` (a named upstream's prefix too)."""
    return openai.OpenAI(
        api_key=api_key,
        base_url=f"{base}{path}",
        max_retries=0,
        timeout=CLIENT_TIMEOUT_S,
        default_headers={"x-parallax-session": session_id},
    )


@pytest.fixture
def anthropic_client(parallax: Parallax, session_id: str) -> Iterator[anthropic.Anthropic]:
    client = make_anthropic(parallax.url, session_id)
    yield client
    client.close()


@pytest.fixture
def openai_client(parallax: Parallax, session_id: str) -> Iterator[openai.OpenAI]:
    client = make_openai(parallax.url, session_id)
    yield client
    client.close()
