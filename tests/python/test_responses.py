"""The OpenAI SDK through the proxy: Responses, plain, `stream=True` and
the `.stream()` helper."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from conftest import FakeUpstream
from scenarios import (
    AWS_KEY,
    BASH_TOOL_RESPONSES,
    BENIGN,
    BLOCKED_PROMPT,
    BLOCKED_RULE,
    DANGEROUS,
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
    assemble_responses,
    assert_names_rule,
    dump,
)

MODEL = "gpt-test-1"
MODES = ["create", "stream", "helper"]
PATH = "/v1/responses"
PATCH = "*** Begin Patch\n*** Add File: notes.txt\n+hello\n*** End Patch\n"


def ask(client: openai.OpenAI, mode: str, input: Any, **extra: Any) -> tuple[list[Json], Json]:
    """One Responses call: (the output items, the whole response)."""
    kwargs: Json = {"model": MODEL, "input": input, "tools": [BASH_TOOL_RESPONSES], **extra}
    if mode == "create":
        r = client.responses.create(**kwargs)
        whole = dump(r)
        whole["output_text"] = r.output_text
        return whole["output"], whole
    if mode == "helper":
        with client.responses.stream(**kwargs) as s:
            for _ in s:
                pass
            r = s.get_final_response()
        return dump(r)["output"], dump(r)
    with client.responses.create(stream=True, **kwargs) as events:
        items, final = assemble_responses(events)
    assert final["output"] == items, (
        f"response.completed's output differs from the streamed items:\n{final['output']}\n{items}"
    )
    return items, final


def text(item: Json) -> str:
    assert item["type"] == "message", f"not a message item: {item}"
    return "".join(p["text"] for p in item["content"] if p["type"] == "output_text")


@pytest.mark.parametrize("mode", MODES)
def test_dangerous_call_replaced_benign_calls_kept(
    upstream: FakeUpstream, openai_client: openai.OpenAI, mode: str
) -> None:
    step = [*MIXED_STEP, {"custom_tool_call": {"name": "apply_patch", "input": PATCH}}]
    upstream.script({"responses": [step]})
    items, whole = ask(openai_client, mode, "Clean up the disk.")
    assert [i["type"] for i in items] == ["message", "message", "function_call", "custom_tool_call"], (
        f"expected intro, block notice, kept function call, kept custom call: {items}"
    )
    assert text(items[0]) == INTRO
    assert_names_rule(text(items[1]), DANGEROUS_RULE)
    assert items[2]["name"] == "Bash" and json.loads(items[2]["arguments"]) == BENIGN, items[2]
    assert items[2]["call_id"].startswith("call_"), items[2]
    assert items[3]["name"] == "apply_patch" and items[3]["input"] == PATCH, items[3]
    assert whole["status"] == "completed"
    assert json.dumps(DANGEROUS) not in json.dumps(whole), "the blocked call's arguments leaked"


@pytest.mark.parametrize("mode", MODES)
def test_only_call_blocked_leaves_a_message(
    upstream: FakeUpstream, openai_client: openai.OpenAI, mode: str
) -> None:
    upstream.script({"responses": [ONLY_DANGEROUS_STEP]})
    items, whole = ask(openai_client, mode, "Wipe it.")
    assert [i["type"] for i in items] == ["message"], items
    assert items[0]["role"] == "assistant"
    assert_names_rule(text(items[0]), DANGEROUS_RULE)
    assert whole["status"] == "completed"


@pytest.mark.parametrize("mode", MODES)
def test_blocked_prompt_is_answered_and_not_forwarded(
    upstream: FakeUpstream, openai_client: openai.OpenAI, mode: str
) -> None:
    upstream.script({"responses": [PLAIN_STEP]})
    items, whole = ask(
        openai_client, mode, [{"role": "user", "content": [{"type": "input_text", "text": BLOCKED_PROMPT}]}]
    )
    assert [i["type"] for i in items] == ["message"], items
    assert_names_rule(text(items[0]), BLOCKED_RULE)
    assert whole["status"] == "completed"
    assert upstream.model_requests(PATH) == [], "a blocked prompt reached the upstream"


@pytest.mark.parametrize("mode", MODES)
def test_secret_is_redacted_before_it_reaches_the_model(
    upstream: FakeUpstream, openai_client: openai.OpenAI, mode: str
) -> None:
    upstream.script({"responses": [PLAIN_STEP]})
    items, _ = ask(openai_client, mode, f"My key is {AWS_KEY}.", instructions="Be terse.")
    assert text(items[0]) == PLAIN_REPLY
    sent = upstream.model_requests(PATH)
    assert len(sent) == 1, f"expected one forwarded request, got {len(sent)}"
    body = sent[0]["body"]
    assert AWS_KEY not in json.dumps(body), f"the key reached the upstream: {body['input']}"
    assert body["input"] == f"My key is {REDACTED}.", body["input"]
    assert body["instructions"] == "Be terse."


def test_secret_in_a_function_call_output_is_redacted(
    upstream: FakeUpstream, openai_client: openai.OpenAI
) -> None:
    upstream.script({"responses": [PLAIN_STEP]})
    history: list[Json] = [
        {"role": "user", "content": "Show me the credentials file."},
        {
            "type": "function_call",
            "call_id": "call_01",
            "name": "Bash",
            "arguments": json.dumps({"command": "cat creds"}),
        },
        {"type": "function_call_output", "call_id": "call_01", "output": f"key={AWS_KEY}"},
    ]
    ask(openai_client, "create", history)
    body = upstream.model_requests(PATH)[0]["body"]
    assert AWS_KEY not in json.dumps(body), f"the key reached the upstream: {body['input']}"
    assert body["input"][2]["output"] == f"key={REDACTED}", body["input"][2]


@pytest.mark.parametrize("mode", MODES)
def test_an_old_blocked_turn_does_not_block_a_new_one(
    upstream: FakeUpstream, openai_client: openai.OpenAI, mode: str
) -> None:
    upstream.script({"responses": [PLAIN_STEP]})
    history: list[Json] = [
        {"role": "user", "content": BLOCKED_PROMPT},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": f"Parallax blocked: {BLOCKED_RULE}"}],
        },
        {"role": "user", "content": "Never mind. What is the weather?"},
    ]
    items, _ = ask(openai_client, mode, history)
    assert text(items[0]) == PLAIN_REPLY, items
    sent = upstream.model_requests(PATH)
    assert len(sent) == 1, "the new benign turn must be forwarded"
    assert sent[0]["body"]["input"] == history, "the history must be forwarded unchanged"


def test_stream_event_names_match_their_types(
    upstream: FakeUpstream, openai_client: openai.OpenAI
) -> None:
    upstream.script({"responses": [MIXED_STEP]})
    with openai_client.responses.with_streaming_response.create(
        model=MODEL, input="go", tools=[BASH_TOOL_RESPONSES], stream=True  # type: ignore[list-item]
    ) as response:
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
    assert names[0] == "response.created" and names[-1] == "response.completed", names
    assert "response.function_call_arguments.done" in names, names


@pytest.mark.parametrize("mode", MODES)
def test_blocked_calls_keep_their_positions_among_kept_ones(
    upstream: FakeUpstream, openai_client: openai.OpenAI, mode: str
) -> None:
    upstream.script({"responses": [INTERLEAVED_STEP]})
    items, _ = ask(openai_client, mode, "Do the chores.")
    kinds = [i["type"] for i in items]
    assert kinds == ["function_call", "message", "message", "function_call", "message"], items
    assert json.loads(items[0]["arguments"]) == BENIGN
    assert json.loads(items[3]["arguments"]) == OTHER_BENIGN
    assert text(items[2]) == "And then:"
    for i in (1, 4):
        assert_names_rule(text(items[i]), DANGEROUS_RULE)
