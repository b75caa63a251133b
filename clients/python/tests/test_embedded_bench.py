"""What one decision costs from Python (pytest-benchmark; numbers are
printed, never asserted): a 1 KB parlok call decided by the embedded engine
against parlok's example file, beside the same call as a round trip to
``parallax serve``. ``pytest tests/test_embedded_bench.py`` prints the
table; docs/PERFORMANCE.md records a run."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest

from conftest import REPO, Server, serve_config, stop_server
from parallax_client import Embedded, Parallax

SEED = REPO / "tests" / "fixtures" / "parlok" / "firewall.yaml"

#: A 1 KB Slack message to an internal channel: the rewrite policy matches
#: and its detectors read every byte, finding nothing to redact.
BODY = (
    "Weekly update: the billing migration finished on Tuesday, the dashboards "
    "are green and the on-call rotation moves to the platform team next week. "
) * 8
BODY = BODY[:1024]


def call(body: str = BODY) -> dict[str, Any]:
    return {
        "stage": "tool.before",
        "tool_name": "slack.chat_postMessage",
        "tool_args": {"recipient": "#sales", "body": body, "subject": None, "metadata": {}},
    }


def test_embedded_decision_of_a_1kb_call(benchmark: Any, tmp_path: Path) -> None:
    assert len(BODY) == 1024
    engine = Embedded(SEED)
    d = benchmark(engine.evaluate, call())
    assert d.action == "allow"
    assert d.rule_ids == ["firewall.redact-pii"]


@pytest.mark.parametrize("kind", ["allow", "redact"])
def test_embedded_decision_kinds(benchmark: Any, kind: str) -> None:
    engine = Embedded(SEED)
    body = BODY if kind == "allow" else BODY[:1000] + " SSN 123-45-6789"
    d = benchmark(engine.evaluate, call(body))
    assert d.action == kind


@pytest.fixture(scope="module")
def seed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = serve_config(tmp_path_factory.mktemp("seed"), SEED)
    yield srv
    stop_server(srv)


def test_server_round_trip_of_the_same_call(benchmark: Any, seed_server: Server) -> None:
    px = Parallax(seed_server.url, timeout=10)
    d = benchmark(px.evaluate, call())
    assert d.action == "allow"
    assert d.rule_ids == ["firewall.redact-pii"]
