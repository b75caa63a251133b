"""What every API shares: pass-through paths, upstream failures in the
API's own error shape, and the decisions showing in metrics and the audit
log as the proxy's."""

from __future__ import annotations

import re
import time

import anthropic
import openai
import pytest

from conftest import FakeUpstream, Parallax, http_get, make_anthropic, make_openai
from scenarios import BLOCKED_PROMPT, BLOCKED_RULE, DANGEROUS_RULE, MIXED_STEP, PLAIN_STEP


def test_anthropic_models_pass_through(
    upstream: FakeUpstream, anthropic_client: anthropic.Anthropic
) -> None:
    models = anthropic_client.models.list()
    assert [m.id for m in models.data] == ["claude-fake-1", "claude-fake-2"], models
    (req,) = upstream.requests()
    assert (req["method"], req["path"]) == ("GET", "/v1/models"), req


def test_openai_models_pass_through(upstream: FakeUpstream, openai_client: openai.OpenAI) -> None:
    models = openai_client.models.list()
    assert [m.id for m in models.data] == ["gpt-fake-1", "gpt-fake-2"], models
    (req,) = upstream.requests()
    assert (req["method"], req["path"]) == ("GET", "/v1/models"), req


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_upstream_down_is_a_502_in_the_api_shape(
    parallax_no_upstream: Parallax, session_id: str, stream: bool
) -> None:
    with make_anthropic(parallax_no_upstream.url, session_id) as client:
        with pytest.raises(anthropic.APIStatusError) as caught:
            r = client.messages.create(
                model="claude-test-1",
                max_tokens=10,
                messages=[{"role": "user", "content": "hi"}],
                stream=stream,
            )
            if stream:
                list(r)  # type: ignore[call-overload]
    e = caught.value
    assert e.status_code == 502, f"expected 502, got {e.status_code}: {e.body}"
    assert isinstance(e.body, dict) and e.body.get("type") == "error", f"not Anthropic's shape: {e.body}"
    assert e.body["error"]["type"] == "api_error", e.body
    assert "upstream" in e.body["error"]["message"], e.body


@pytest.mark.parametrize("stream", [False, True])
def test_openai_upstream_down_is_a_502_in_the_api_shape(
    parallax_no_upstream: Parallax, session_id: str, stream: bool
) -> None:
    with make_openai(parallax_no_upstream.url, session_id) as client:
        with pytest.raises(openai.APIStatusError) as caught:
            r = client.chat.completions.create(
                model="gpt-test-1", messages=[{"role": "user", "content": "hi"}], stream=stream
            )
            if stream:
                list(r)  # type: ignore[call-overload]
        assert caught.value.status_code == 502, caught.value
        with pytest.raises(openai.APIStatusError) as caught_responses:
            client.responses.create(model="gpt-test-1", input="hi", stream=stream)
    for e in (caught.value, caught_responses.value):
        assert e.status_code == 502, f"expected 502, got {e.status_code}: {e.body}"
        # The SDK hands over the `error` object of `{"error": {...}}`.
        assert isinstance(e.body, dict) and "message" in e.body, f"not OpenAI's shape: {e.body}"
        assert e.body.get("type") == "server_error", e.body


def test_upstream_down_models_pass_through_is_a_502(
    parallax_no_upstream: Parallax, session_id: str
) -> None:
    with make_openai(parallax_no_upstream.url, session_id) as client:
        with pytest.raises(openai.APIStatusError) as caught:
            client.models.list()
    assert caught.value.status_code == 502, caught.value


def decisions(parallax: Parallax) -> dict[tuple[str, str, str], float]:
    status, text = http_get(f"{parallax.url}/metrics")
    assert status == 200, f"/metrics answered {status}: {text[:200]}"
    out: dict[tuple[str, str, str], float] = {}
    pattern = re.compile(
        r'^parallax_decisions_total\{door="([^"]+)",stage="([^"]+)",action="([^"]+)"\} (\S+)$'
    )
    for line in text.splitlines():
        m = pattern.match(line)
        if m:
            out[(m[1], m[2], m[3])] = float(m[4])
    return out


def test_proxy_decisions_show_in_metrics_and_the_audit_log(
    upstream: FakeUpstream,
    parallax: Parallax,
    anthropic_client: anthropic.Anthropic,
    session_id: str,
) -> None:
    before = decisions(parallax)
    upstream.script({"messages": [MIXED_STEP, PLAIN_STEP]})
    anthropic_client.messages.create(
        model="claude-test-1", max_tokens=10, messages=[{"role": "user", "content": "go"}]
    )
    anthropic_client.messages.create(
        model="claude-test-1", max_tokens=10, messages=[{"role": "user", "content": BLOCKED_PROMPT}]
    )
    after = decisions(parallax)
    assert any(door == "proxy" for door, _, _ in after), f'no door="proxy" series: {after}'

    def delta(stage: str, action: str) -> float:
        key = ("proxy", stage, action)
        return after.get(key, 0.0) - before.get(key, 0.0)

    assert delta("tool.before", "block") == 1, f"the blocked call is not counted: {after}"
    assert delta("tool.before", "allow") == 1, f"the kept call is not counted: {after}"
    assert delta("message.before", "block") == 1, f"the blocked prompt is not counted: {after}"
    assert delta("params.before", "allow") >= 1, f"the parameters are not counted: {after}"

    # The audit writer is asynchronous: give it a moment.
    deadline = time.monotonic() + 5
    while True:
        mine = [a for a in parallax.audit() if a.get("session_id") == session_id]
        blocked = {m["rule_id"] for a in mine if a["action"] == "block" for m in a["matches"]}
        if {DANGEROUS_RULE, BLOCKED_RULE} <= blocked or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert mine, f"no audit line carries the session {session_id} from x-parallax-session"
    assert all(a["door"] == "proxy" for a in mine), [a["door"] for a in mine]
    assert {DANGEROUS_RULE, BLOCKED_RULE} <= blocked, f"audit blocks: {blocked}"
