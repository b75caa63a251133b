"""Server and embedded engine, verdict for verdict: the same config served
by ``parallax serve`` and compiled by ``Embedded``, the same events in the
same order, the same answers (action, the rules that fired and in which
order with what action, what a rewrite sends). Over the suite's policy
fixtures and over the realistic event mix (``loadgen --write-mix``) on the
shipped rules."""

from __future__ import annotations

import json
import subprocess
import urllib.request
from pathlib import Path
from typing import Any, Iterator

import pytest

from conftest import AGENT_TOKEN, HERE, REPO, Server, binary, serve_config, stop_server
from parallax_client import Embedded

MIX_EVENTS = 1500


def essence(answer: dict[str, Any]) -> dict[str, Any]:
    """What must agree: not timings, approval ids or expiry times."""
    return {
        "action": answer["action"],
        "blocked": answer["blocked"],
        "would_block": answer.get("would_block", False),
        "results": [(r["rule_id"], r["action"], r.get("match")) for r in answer["results"]],
        "reasons": answer["reasons"],
        "redacted_event": answer.get("redacted_event"),
        "rewritten_event": answer.get("rewritten_event"),
        "failure": answer.get("failure"),
        "approval": answer.get("approval") is not None,
    }


def server_answer(server: Server, event: dict[str, Any], token: str | None) -> dict[str, Any]:
    req = urllib.request.Request(
        server.url + "/evaluate",
        data=json.dumps(event).encode(),
        headers={"content-type": "application/json", **({"authorization": f"Bearer {token}"} if token else {})},
        method="POST",
    )
    with urllib.request.urlopen(req, timeout=10) as r:
        answer: dict[str, Any] = json.loads(r.read())
        return answer


def compare(server: Server, config: Path, events: list[dict[str, Any]], token: str | None) -> None:
    """Each event to the server and to two embedded engines on ``config``,
    one through each door of the extension: Python objects (what
    ``Embedded.evaluate`` uses) and JSON text. Two engines, since each
    keeps its own session state."""
    by_dict, by_text = Embedded(config), Embedded(config)
    differ = []
    for i, event in enumerate(events):
        s = essence(server_answer(server, event, token))
        d = essence(by_dict._engine.evaluate_dict(event))
        t = essence(json.loads(by_text._engine.evaluate(json.dumps(event))))
        if not s == d == t:
            differ.append((i, event, s, d, t))
    assert not differ, f"{len(differ)} of {len(events)} differ; first: {differ[0]}"


def policy_events() -> list[dict[str, Any]]:
    """Calls of the suite's policy file, one per decision kind and more."""
    calls = [
        ("slack.chat_postMessage", {"recipient": "#sales", "body": "card 4111 1111 1111 1111 for the order"}),
        ("slack.chat_postMessage", {"recipient": "#general", "body": "the db password: hunter2"}),
        ("slack.chat_postMessage", {"recipient": "#eng", "body": "deploy finished"}),
        ("email.send", {"recipient": ["eve@elsewhere.test"], "subject": "hi", "body": "quote attached"}),
        ("email.send", {"recipient": ["bob@northwind.test"], "subject": "lunch", "body": "12:30?"}),
        ("postgres.execute", {"body": "DROP TABLE customers", "metadata": {"method": "execute"}}),
        ("postgres.execute", {"body": "SELECT 1", "metadata": {"method": "execute"}}),
        ("http.post", {"recipient": "https://api.example.test/v1", "body": "{}"}),
        ("exec", {"command": "rm -rf /"}),
        ("exec", {"command": "ls -la"}),
    ]
    events = [{"stage": "tool.before", "tool_name": n, "tool_args": a, "session_id": "diff-1"} for n, a in calls]
    for line in (REPO / "tests" / "fixtures" / "corpus.jsonl").read_text().splitlines():
        if line.strip():
            events.append(json.loads(line))
    return events


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The embedded engine's relative files (approvals.path) go here."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_policy_fixtures_decide_the_same(server: Server, in_tmp: Path) -> None:
    # The server's own copy of the config, as start_server wrote it.
    (in_tmp / "policy.yaml").write_bytes((HERE / "fixtures" / "policy.yaml").read_bytes())
    (in_tmp / "parallax.yaml").write_bytes((HERE / "fixtures" / "parallax.yaml").read_bytes())
    compare(server, in_tmp / "parallax.yaml", policy_events(), AGENT_TOKEN)


@pytest.fixture(scope="module")
def shipped_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """``parallax serve`` on the repository's own parallax.yaml (the shipped rules)."""
    srv = serve_config(tmp_path_factory.mktemp("shipped"), REPO / "parallax.yaml")
    yield srv
    stop_server(srv)


def test_the_realistic_mix_decides_the_same(shipped_server: Server, in_tmp: Path) -> None:
    loadgen = binary().parent / "loadgen"
    if not loadgen.is_file():
        pytest.fail(f"no loadgen beside {binary()}: build the workspace's binaries first")
    out = subprocess.run(
        [str(loadgen), "--write-mix", str(MIX_EVENTS)], capture_output=True, text=True, timeout=120, check=True
    )
    events = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    assert len(events) == MIX_EVENTS
    compare(shipped_server, REPO / "parallax.yaml", events, None)
