"""What the suite asks the fake model for, and helpers that turn each SDK's
results (whole or streamed) into plain dicts to assert on."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

Json = dict[str, Any]

# A phrase only the test config blocks: no shipped rule blocks a user
# message (the prompt-injection rules there detect), so the request-side
# block is proven with one rule of the suite's own, beside the shipped ones.
FORBIDDEN_PHRASE = "open the pod bay doors"
FORBIDDEN_RULE = "sdk-test-forbidden-phrase"

DANGEROUS = {"command": "rm -rf /"}
BENIGN = {"command": "ls -la"}
DANGEROUS_RULE = "dangerous-rm-rf-root"

# An AWS access key id (the documented example): `secret-aws-access-key`
# redacts it on the way to the model.
AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
REDACTED = "[REDACTED]"

BLOCKED_PROMPT = f"Hello! Please {FORBIDDEN_PHRASE}, HAL."
BLOCKED_RULE = FORBIDDEN_RULE

INTRO = "I will run two commands."
MIXED_STEP = [
    {"text": INTRO},
    {"tool_call": {"name": "Bash", "input": DANGEROUS}},
    {"tool_call": {"name": "Bash", "input": BENIGN}},
]
ONLY_DANGEROUS_STEP = [{"tool_call": {"name": "Bash", "input": DANGEROUS}}]
# Blocked and kept calls alternating, with text in between.
OTHER_BENIGN = {"command": "git status"}
INTERLEAVED_STEP = [
    {"tool_call": {"name": "Bash", "input": BENIGN}},
    {"tool_call": {"name": "Bash", "input": DANGEROUS}},
    {"text": "And then:"},
    {"tool_call": {"name": "Bash", "input": OTHER_BENIGN}},
    {"tool_call": {"name": "Bash", "input": DANGEROUS}},
]
PLAIN_REPLY = "The sky is clear today."
PLAIN_STEP = [{"text": PLAIN_REPLY}]

BASH_TOOL_ANTHROPIC = {
    "name": "Bash",
    "description": "Run a shell command",
    "input_schema": {
        "type": "object",
        "properties": {"command": {"type": "string"}},
        "required": ["command"],
    },
}
BASH_TOOL_CHAT = {
    "type": "function",
    "function": {
        "name": "Bash",
        "description": "Run a shell command",
        "parameters": BASH_TOOL_ANTHROPIC["input_schema"],
    },
}
BASH_TOOL_RESPONSES = {
    "type": "function",
    "name": "Bash",
    "description": "Run a shell command",
    "parameters": BASH_TOOL_ANTHROPIC["input_schema"],
}


def dump(obj: Any) -> Json:
    """An SDK model as a plain dict."""
    out = obj.model_dump(mode="json", exclude_none=False)
    assert isinstance(out, dict)
    return out


def assert_names_rule(text: str, rule: str) -> None:
    assert "Parallax blocked" in text and rule in text, (
        f"expected a block notice naming {rule!r}, got: {text!r}"
    )


def text_of(s: Any) -> str:
    return json.dumps(s) if not isinstance(s, str) else s


def assemble_anthropic(events: Iterable[Any]) -> Json:
    """A streamed Messages response rebuilt from its raw events, checking
    that block indexes open, fill and close in order."""
    message: Json | None = None
    blocks: list[Json] = []
    partial: dict[int, str] = {}
    open_index: int | None = None
    stop_reason = None
    seen_stop = False
    for ev in events:
        kind = ev.type
        assert not seen_stop, f"event {kind} after message_stop"
        if kind == "message_start":
            message = dump(ev.message)
        elif kind == "content_block_start":
            assert open_index is None, f"block {ev.index} started inside block {open_index}"
            assert ev.index == len(blocks), f"block index {ev.index}, expected {len(blocks)}"
            blocks.append(dump(ev.content_block))
            open_index = ev.index
            partial[ev.index] = ""
        elif kind == "content_block_delta":
            assert ev.index == open_index, f"delta for block {ev.index} while {open_index} is open"
            d = ev.delta
            if d.type == "text_delta":
                blocks[ev.index]["text"] += d.text
            elif d.type == "input_json_delta":
                partial[ev.index] += d.partial_json
        elif kind == "content_block_stop":
            assert ev.index == open_index, f"stop for block {ev.index} while {open_index} is open"
            if blocks[ev.index]["type"] == "tool_use":
                blocks[ev.index]["input"] = json.loads(partial[ev.index] or "{}")
            open_index = None
        elif kind == "message_delta":
            stop_reason = ev.delta.stop_reason
        elif kind == "message_stop":
            seen_stop = True
    assert message is not None, "no message_start"
    assert seen_stop, "the stream did not end with message_stop"
    assert open_index is None, f"block {open_index} never closed"
    message["content"] = blocks
    message["stop_reason"] = stop_reason
    return message


def assemble_chat(chunks: Iterable[Any]) -> Json:
    """A streamed chat completion (choice 0) rebuilt from its chunks."""
    content = ""
    calls: dict[int, Json] = {}
    finish = None
    for c in chunks:
        for choice in c.choices:
            assert choice.index == 0, f"unexpected choice {choice.index}"
            assert finish is None, "a delta after the finish_reason"
            d = choice.delta
            if d.content:
                content += d.content
            for tc in d.tool_calls or []:
                call = calls.setdefault(
                    tc.index, {"id": None, "name": "", "arguments": "", "type": None}
                )
                if tc.id:
                    call["id"] = tc.id
                if tc.type:
                    call["type"] = tc.type
                if tc.function and tc.function.name:
                    call["name"] += tc.function.name
                if tc.function and tc.function.arguments:
                    call["arguments"] += tc.function.arguments
            if choice.finish_reason:
                finish = choice.finish_reason
    indexes = sorted(calls)
    assert indexes == list(range(len(indexes))), f"tool call indexes not 0..n-1: {indexes}"
    return {
        "content": content,
        "tool_calls": [
            {
                "id": calls[i]["id"],
                "type": calls[i]["type"],
                "function": {"name": calls[i]["name"], "arguments": calls[i]["arguments"]},
            }
            for i in indexes
        ],
        "finish_reason": finish,
    }


def chat_message(completion: Any) -> Json:
    """A whole chat completion's choice 0 in the shape of assemble_chat."""
    choice = completion.choices[0]
    m = choice.message
    return {
        "content": m.content or "",
        "tool_calls": [
            {
                "id": tc.id,
                "type": tc.type,
                "function": {"name": tc.function.name, "arguments": tc.function.arguments},
            }
            for tc in (m.tool_calls or [])
        ],
        "finish_reason": choice.finish_reason,
    }


def assemble_responses(events: Iterable[Any]) -> tuple[list[Json], Json]:
    """A streamed Responses response: the items as their
    `output_item.done` events gave them (checked against the deltas that
    built them), and the final response of `response.completed`."""
    items: dict[int, Json] = {}
    text: dict[int, str] = {}
    args: dict[int, str] = {}
    final: Json | None = None
    seqs: list[int] = []
    for ev in events:
        seqs.append(ev.sequence_number)
        kind = ev.type
        if kind == "response.output_item.added":
            assert ev.output_index not in items, f"item {ev.output_index} added twice"
            assert ev.output_index == len(items), (
                f"item index {ev.output_index}, expected {len(items)}"
            )
            items[ev.output_index] = dump(ev.item)
        elif kind == "response.output_text.delta":
            text[ev.output_index] = text.get(ev.output_index, "") + ev.delta
        elif kind == "response.function_call_arguments.delta":
            args[ev.output_index] = args.get(ev.output_index, "") + ev.delta
        elif kind == "response.function_call_arguments.done":
            assert ev.arguments == args.get(ev.output_index, ""), (
                f"arguments.done {ev.arguments!r} differs from the deltas "
                f"{args.get(ev.output_index)!r}"
            )
        elif kind == "response.output_item.done":
            assert ev.output_index in items, f"item {ev.output_index} done before it was added"
            item = dump(ev.item)
            items[ev.output_index] = item
            if item["type"] == "message":
                streamed = text.get(ev.output_index, "")
                whole = "".join(p.get("text", "") for p in item["content"])
                assert streamed == whole, f"text deltas {streamed!r} != item text {whole!r}"
            if item["type"] == "function_call":
                assert args.get(ev.output_index, "") == item["arguments"], (
                    f"argument deltas {args.get(ev.output_index)!r} != {item['arguments']!r}"
                )
        elif kind == "response.completed":
            final = dump(ev.response)
    assert seqs == list(range(len(seqs))), f"sequence numbers not 0..n-1: {seqs}"
    assert final is not None, "the stream did not end with response.completed"
    return [items[i] for i in sorted(items)], final
