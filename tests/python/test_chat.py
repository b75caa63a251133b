"""The OpenAI SDK through the proxy: Chat Completions, plain, `stream=True`
and the `.stream()` helper."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from conftest import FakeUpstream
from scenarios import (
    AWS_KEY,
    BASH_TOOL_CHAT,
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
    assemble_chat,
    assert_names_rule,
    chat_message,
)

MODEL = "gpt-test-1"
MODES = ["create", "stream", "helper"]
PATH = "/v1/chat/completions"


def ask(client: openai.OpenAI, mode: str, messages: list[Json], **extra: Any) -> Json:
    kwargs: Json = {"model": MODEL, "messages": messages, "tools": [BASH_TOOL_CHAT], **extra}
    if mode == "create":
        return chat_message(client.chat.completions.create(**kwargs))
    if mode == "stream":
        with client.chat.completions.create(stream=True, **kwargs) as chunks:
            return assemble_chat(chunks)
    with client.chat.completions.stream(**kwargs) as s:
        for _ in s:
            pass
        return chat_message(s.get_final_completion())


def user(text: str) -> list[Json]:
    return [{"role": "user", "content": text}]


@pytest.mark.parametrize("mode", MODES)
def test_dangerous_call_replaced_benign_call_kept(
    upstream: FakeUpstream, openai_client: openai.OpenAI, mode: str
) -> None:
    upstream.script({"chat": [MIXED_STEP]})
    reply = ask(openai_client, mode, user("Clean up the disk."))
    intro, sep, notice = reply["content"].partition("\n\n")
    assert (intro, sep) == (INTRO, "\n\n"), (
        f"the model's text, then the notice as a paragraph of its own: {reply['content']!r}"
    )
    assert_names_rule(notice, DANGEROUS_RULE)
    calls = reply["tool_calls"]
    assert len(calls) == 1, f"exactly the benign call must be left: {calls}"
    assert calls[0]["function"]["name"] == "Bash"
    assert json.loads(calls[0]["function"]["arguments"]) == BENIGN, calls[0]
    assert calls[0]["type"] == "function" and calls[0]["id"].startswith("call_"), calls[0]
    assert reply["finish_reason"] == "tool_calls", "a call is left: finish_reason stays tool_calls"


@pytest.mark.parametrize("mode", MODES)
def test_only_call_blocked_finishes_with_stop(
    upstream: FakeUpstream, openai_client: openai.OpenAI, mode: str
) -> None:
    upstream.script({"chat": [ONLY_DANGEROUS_STEP]})
    reply = ask(openai_client, mode, user("Wipe it."))
    assert reply["tool_calls"] == [], f"the blocked call is still there: {reply['tool_calls']}"
    assert_names_rule(reply["content"], DANGEROUS_RULE)
    assert reply["finish_reason"] == "stop", (
        f"no tool call is left: finish_reason must be stop, got {reply['finish_reason']}"
    )


@pytest.mark.parametrize("mode", MODES)
def test_blocked_prompt_is_answered_and_not_forwarded(
    upstream: FakeUpstream, openai_client: openai.OpenAI, mode: str
) -> None:
    upstream.script({"chat": [PLAIN_STEP]})
    reply = ask(openai_client, mode, user(BLOCKED_PROMPT))
    assert_names_rule(reply["content"], BLOCKED_RULE)
    assert reply["tool_calls"] == [] and reply["finish_reason"] == "stop", reply
    assert upstream.model_requests(PATH) == [], "a blocked prompt reached the upstream"


@pytest.mark.parametrize("mode", MODES)
def test_secret_is_redacted_before_it_reaches_the_model(
    upstream: FakeUpstream, openai_client: openai.OpenAI, mode: str
) -> None:
    upstream.script({"chat": [PLAIN_STEP]})
    messages: list[Json] = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": [{"type": "text", "text": f"My key is {AWS_KEY}."}]},
    ]
    reply = ask(openai_client, mode, messages)
    assert reply["content"] == PLAIN_REPLY
    sent = upstream.model_requests(PATH)
    assert len(sent) == 1, f"expected one forwarded request, got {len(sent)}"
    body = sent[0]["body"]
    assert AWS_KEY not in json.dumps(body), f"the key reached the upstream: {body['messages']}"
    assert body["messages"][1]["content"][0]["text"] == f"My key is {REDACTED}."
    assert body["messages"][0] == messages[0], "the system message must be forwarded unchanged"


def test_secret_in_a_tool_result_is_redacted(
    upstream: FakeUpstream, openai_client: openai.OpenAI
) -> None:
    upstream.script({"chat": [PLAIN_STEP]})
    messages: list[Json] = [
        {"role": "user", "content": "Show me the credentials file."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_01",
                    "type": "function",
                    "function": {"name": "Bash", "arguments": json.dumps({"command": "cat c"})},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_01", "content": f"key={AWS_KEY}"},
    ]
    ask(openai_client, "create", messages)
    body = upstream.model_requests(PATH)[0]["body"]
    assert AWS_KEY not in json.dumps(body), f"the key reached the upstream: {body['messages']}"
    assert body["messages"][2]["content"] == f"key={REDACTED}", body["messages"][2]


@pytest.mark.parametrize("mode", MODES)
def test_an_old_blocked_turn_does_not_block_a_new_one(
    upstream: FakeUpstream, openai_client: openai.OpenAI, mode: str
) -> None:
    upstream.script({"chat": [PLAIN_STEP]})
    messages: list[Json] = [
        {"role": "user", "content": BLOCKED_PROMPT},
        {"role": "assistant", "content": f"Parallax blocked this message: {BLOCKED_RULE}"},
        {"role": "user", "content": "Never mind. What is the weather?"},
    ]
    reply = ask(openai_client, mode, messages)
    assert reply["content"] == PLAIN_REPLY, reply
    sent = upstream.model_requests(PATH)
    assert len(sent) == 1, "the new benign turn must be forwarded"
    assert sent[0]["body"]["messages"] == messages, "the history must be forwarded unchanged"


def test_stream_with_usage_ends_with_done(
    upstream: FakeUpstream, openai_client: openai.OpenAI
) -> None:
    upstream.script({"chat": [MIXED_STEP]})
    with openai_client.chat.completions.with_streaming_response.create(
        model=MODEL,
        messages=user("go"),  # type: ignore[arg-type]
        tools=[BASH_TOOL_CHAT],  # type: ignore[list-item]
        stream=True,
        stream_options={"include_usage": True},
    ) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        data = [
            line[len("data:") :].strip() for line in response.iter_lines() if line.startswith("data:")
        ]
    assert data[-1] == "[DONE]", f"the stream must end with [DONE]: {data[-3:]}"
    chunks = [json.loads(d) for d in data[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks), chunks
    usage = [c for c in chunks if c.get("usage")]
    assert len(usage) == 1 and usage[0]["choices"] == [], f"the usage chunk is lost: {usage}"
    assert chunks[-1] is usage[0], "the usage chunk comes last, after the finish"


@pytest.mark.parametrize("mode", MODES)
def test_kept_calls_are_renumbered_around_blocked_ones(
    upstream: FakeUpstream, openai_client: openai.OpenAI, mode: str
) -> None:
    upstream.script({"chat": [INTERLEAVED_STEP]})
    reply = ask(openai_client, mode, user("Do the chores."))
    args = [json.loads(c["function"]["arguments"]) for c in reply["tool_calls"]]
    assert args == [BENIGN, OTHER_BENIGN], f"the kept calls, in order: {reply['tool_calls']}"
    assert reply["content"].count("Parallax blocked") == 2, reply["content"]
    assert reply["finish_reason"] == "tool_calls"
