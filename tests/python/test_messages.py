"""The Anthropic SDK through the proxy: Messages create, `stream=True` and
the `.stream()` helper."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import pytest

from conftest import FakeUpstream, Parallax
from scenarios import (
    AWS_KEY,
    BASH_TOOL_ANTHROPIC,
    BENIGN,
    BLOCKED_PROMPT,
    BLOCKED_RULE,
    DANGEROUS_RULE,
    INTRO,
    INTERLEAVED_STEP,
    MIXED_STEP,
    OTHER_BENIGN,
    ONLY_DANGEROUS_STEP,
    PLAIN_REPLY,
    PLAIN_STEP,
    REDACTED,
    Json,
    assemble_anthropic,
    assert_names_rule,
    dump,
)

MODEL = "claude-test-1"
MODES = ["create", "stream", "helper"]


def ask(client: anthropic.Anthropic, mode: str, messages: list[Json], **extra: Any) -> Json:
    """One Messages call in `mode`; the reply as a plain dict."""
    kwargs: Json = {
        "model": MODEL,
        "max_tokens": 256,
        "messages": messages,
        "tools": [BASH_TOOL_ANTHROPIC],
        **extra,
    }
    if mode == "create":
        return dump(client.messages.create(**kwargs))
    if mode == "stream":
        with client.messages.create(stream=True, **kwargs) as events:
            return assemble_anthropic(events)
    with client.messages.stream(**kwargs) as s:
        streamed = "".join(s.text_stream)
        final = dump(s.get_final_message())
    texts = "".join(b["text"] for b in final["content"] if b["type"] == "text")
    assert streamed == texts, f"text_stream {streamed!r} != final text {texts!r}"
    return final


def user(text: str) -> list[Json]:
    return [{"role": "user", "content": text}]


@pytest.mark.parametrize("mode", MODES)
def test_dangerous_call_replaced_benign_call_kept(
    upstream: FakeUpstream, anthropic_client: anthropic.Anthropic, mode: str
) -> None:
    upstream.script({"messages": [MIXED_STEP]})
    reply = ask(anthropic_client, mode, user("Clean up the disk."))
    content = reply["content"]
    assert [b["type"] for b in content] == ["text", "text", "tool_use"], (
        f"expected intro text, block notice, kept call: {content}"
    )
    assert content[0]["text"] == INTRO
    assert_names_rule(content[1]["text"], DANGEROUS_RULE)
    assert content[2]["name"] == "Bash" and content[2]["input"] == BENIGN, content[2]
    assert content[2]["id"].startswith("toolu_"), content[2]
    assert reply["stop_reason"] == "tool_use", "a call is left, so the turn still ends in tool_use"
    assert len(upstream.model_requests("/v1/messages")) == 1


@pytest.mark.parametrize("mode", MODES)
def test_only_call_blocked_ends_the_turn(
    upstream: FakeUpstream, anthropic_client: anthropic.Anthropic, mode: str
) -> None:
    upstream.script({"messages": [ONLY_DANGEROUS_STEP]})
    reply = ask(anthropic_client, mode, user("Wipe it."))
    assert [b["type"] for b in reply["content"]] == ["text"], reply["content"]
    assert_names_rule(reply["content"][0]["text"], DANGEROUS_RULE)
    assert reply["stop_reason"] == "end_turn", (
        f"no tool call is left: stop_reason must be end_turn, got {reply['stop_reason']}"
    )


@pytest.mark.parametrize("mode", MODES)
def test_blocked_prompt_is_answered_and_not_forwarded(
    upstream: FakeUpstream, anthropic_client: anthropic.Anthropic, mode: str
) -> None:
    upstream.script({"messages": [PLAIN_STEP]})
    reply = ask(anthropic_client, mode, user(BLOCKED_PROMPT))
    assert reply["role"] == "assistant" and reply["type"] == "message", reply
    assert [b["type"] for b in reply["content"]] == ["text"], reply["content"]
    assert_names_rule(reply["content"][0]["text"], BLOCKED_RULE)
    assert reply["stop_reason"] == "end_turn"
    assert upstream.model_requests("/v1/messages") == [], "a blocked prompt reached the upstream"


@pytest.mark.parametrize("mode", ["create", "stream"])
def test_secret_is_redacted_before_it_reaches_the_model(
    upstream: FakeUpstream, anthropic_client: anthropic.Anthropic, mode: str
) -> None:
    upstream.script({"messages": [PLAIN_STEP]})
    messages: list[Json] = [
        {
            "role": "user",
            "content": [{"type": "text", "text": f"My key is {AWS_KEY}, store it."}],
        }
    ]
    reply = ask(anthropic_client, mode, messages)
    assert reply["content"][0]["text"] == PLAIN_REPLY
    sent = upstream.model_requests("/v1/messages")
    assert len(sent) == 1, f"expected one forwarded request, got {len(sent)}"
    body = sent[0]["body"]
    assert AWS_KEY not in json.dumps(body), f"the key reached the upstream: {body['messages']}"
    assert body["messages"][0]["content"][0]["text"] == f"My key is {REDACTED}, store it."


def test_secret_in_a_tool_result_is_redacted(
    upstream: FakeUpstream, anthropic_client: anthropic.Anthropic
) -> None:
    upstream.script({"messages": [PLAIN_STEP]})
    messages: list[Json] = [
        {"role": "user", "content": "Show me the credentials file."},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "toolu_01",
                    "name": "Bash",
                    "input": {"command": "cat creds"},
                }
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_01",
                    "content": f"aws_access_key_id = {AWS_KEY}",
                }
            ],
        },
    ]
    ask(anthropic_client, "create", messages)
    body = upstream.model_requests("/v1/messages")[0]["body"]
    assert AWS_KEY not in json.dumps(body), f"the key reached the upstream: {body['messages']}"
    assert REDACTED in json.dumps(body["messages"][2]), body["messages"][2]


@pytest.mark.parametrize("mode", ["create", "stream"])
def test_an_old_blocked_turn_does_not_block_a_new_one(
    upstream: FakeUpstream, anthropic_client: anthropic.Anthropic, mode: str
) -> None:
    upstream.script({"messages": [PLAIN_STEP]})
    messages: list[Json] = [
        {"role": "user", "content": BLOCKED_PROMPT},
        {"role": "assistant", "content": f"Parallax blocked this message: {BLOCKED_RULE}"},
        {"role": "user", "content": "Never mind. What is the weather?"},
    ]
    reply = ask(anthropic_client, mode, messages)
    assert reply["content"][0]["text"] == PLAIN_REPLY, reply
    sent = upstream.model_requests("/v1/messages")
    assert len(sent) == 1, "the new benign turn must be forwarded"
    assert sent[0]["body"]["messages"] == messages, "the history must be forwarded unchanged"


def test_request_headers_and_query_reach_the_upstream(
    upstream: FakeUpstream, parallax: Parallax, session_id: str
) -> None:
    upstream.script({"messages": [PLAIN_STEP]})
    client = anthropic.Anthropic(
        api_key="sk-ant-test-headers",
        base_url=f"{parallax.url}/anthropic",
        max_retries=0,
        default_headers={"x-parallax-session": session_id, "anthropic-beta": "test-beta-1"},
        default_query={"beta": "true"},
    )
    with client:
        client.messages.create(model=MODEL, max_tokens=10, messages=user("hi"))
    (req,) = upstream.model_requests("/v1/messages")
    h = req["headers"]
    # This SDK version sends the key as a bearer token; older ones used x-api-key.
    assert h.get("x-api-key") == "sk-ant-test-headers" or (
        h.get("authorization") == "Bearer sk-ant-test-headers"
    ), f"the API key was not forwarded: {h}"
    assert h.get("anthropic-version"), f"anthropic-version not forwarded: {h}"
    assert h.get("anthropic-beta") == "test-beta-1", h
    assert req["query"] == "beta=true", f"query string not forwarded: {req['query']!r}"


def test_stream_event_names_match_their_types(
    upstream: FakeUpstream, anthropic_client: anthropic.Anthropic
) -> None:
    upstream.script({"messages": [MIXED_STEP]})
    with anthropic_client.messages.with_streaming_response.create(
        model=MODEL,
        max_tokens=256,
        messages=user("go"),
        tools=[BASH_TOOL_ANTHROPIC],  # type: ignore[list-item]
        stream=True,
    ) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        lines = list(response.iter_lines())
    names: list[str] = []
    name = None
    for line in lines:
        if line.startswith("event:"):
            name = line[len("event:") :].strip()
        elif line.startswith("data:"):
            data = json.loads(line[len("data:") :])
            assert name == data["type"], f"event: {name} carries type {data['type']}"
            names.append(name)
            name = None
    assert names[0] == "message_start" and names[-1] == "message_stop", names
    assert "content_block_start" in names and "message_delta" in names, names


@pytest.mark.parametrize("mode", MODES)
def test_blocked_calls_keep_their_positions_among_kept_ones(
    upstream: FakeUpstream, anthropic_client: anthropic.Anthropic, mode: str
) -> None:
    upstream.script({"messages": [INTERLEAVED_STEP]})
    reply = ask(anthropic_client, mode, user("Do the chores."))
    shape = [(b["type"], b.get("input")) for b in reply["content"]]
    assert [t for t, _ in shape] == ["tool_use", "text", "text", "tool_use", "text"], shape
    assert shape[0][1] == BENIGN and shape[3][1] == OTHER_BENIGN, shape
    assert reply["content"][2]["text"] == "And then:"
    for i in (1, 4):
        assert_names_rule(reply["content"][i]["text"], DANGEROUS_RULE)
    assert reply["stop_reason"] == "tool_use"
