#!/usr/bin/env python3
"""A scripted fake model server: Anthropic Messages and OpenAI Chat
Completions / Responses, non-streamed and streamed, on 127.0.0.1.

Standard library only, so any test (the SDK suite, the real-agent tests) can
run it without a virtual environment:

    python3 fake_upstream.py --port 0 --script SCENARIO.json --log REQUESTS.jsonl

Once listening it prints ``PORT <n>`` as its first line of stdout.

Endpoints: ``POST /v1/messages``, ``POST /v1/chat/completions``,
``POST /v1/responses`` (model calls, scripted) and ``GET /v1/models`` (a
small fixed list, in Anthropic's shape when the request has an
``anthropic-version`` header, else OpenAI's).

Azure OpenAI's deployment route is spoken too: ``POST
/openai/deployments/{deployment}/chat/completions?api-version=...`` needs
the ``api-version`` query and an ``api-key`` header (else Azure's 400 or
401), and answers in Azure's shape: ``prompt_filter_results`` and each
choice's ``content_filter_results``; streamed, a first chunk with no choices
carries the prompt filter results, as Azure sends it.

The scenario is ``{"messages": [STEP...], "chat": [STEP...], "responses":
[STEP...]}``. Each model call consumes its endpoint's next step; once they
are used up the last step repeats. A STEP is a list of output parts:

    {"text": "..."}
    {"tool_call": {"name": "Bash", "input": {"command": "ls"}}}
    {"custom_tool_call": {"name": "apply_patch", "input": "free text"}}   (Responses)

A request with ``"stream": true`` gets the step as server-sent events in
that API's streaming format, otherwise as one JSON body.

Every request received is appended to the log as one JSON line:
``{"method", "path", "query", "headers", "body"}`` (``body`` is the parsed
JSON, or ``null`` with ``body_text`` when it is not JSON).

For tests that script many cases against one server, ``POST
/_fake/scenario`` with a scenario as its body replaces the scenario and
restarts every endpoint at its first step (such requests are not logged).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator
from urllib.parse import urlsplit

Json = dict[str, Any]
Part = dict[str, Any]
Step = list[Part]

# Scenario keys, by request path.
ENDPOINTS = {
    "/v1/messages": "messages",
    "/v1/chat/completions": "chat",
    "/v1/responses": "responses",
}

AZURE_DEPLOYMENT_PREFIX = "/openai/deployments/"
AZURE_FILTER = {
    category: {"filtered": False, "severity": "safe"}
    for category in ("hate", "self_harm", "sexual", "violence")
}

_ids = itertools.count(1)


def azure_deployment(path: str) -> str | None:
    """The deployment of an Azure chat completions path, if it is one."""
    if not path.startswith(AZURE_DEPLOYMENT_PREFIX) or not path.endswith("/chat/completions"):
        return None
    name = path[len(AZURE_DEPLOYMENT_PREFIX) : -len("/chat/completions")]
    return name if name and "/" not in name else None


def azure_completion(body: Json) -> Json:
    """A chat completion as Azure returns it."""
    body["prompt_filter_results"] = [{"prompt_index": 0, "content_filter_results": AZURE_FILTER}]
    for choice in body.get("choices", []):
        choice["content_filter_results"] = AZURE_FILTER
    return body


def azure_stream(events: Iterator[bytes]) -> Iterator[bytes]:
    """A chat stream as Azure sends it: the prompt filter results first, in
    a chunk with no choices."""
    yield sse(
        None,
        {
            "choices": [],
            "created": 0,
            "id": "",
            "model": "",
            "object": "",
            "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": AZURE_FILTER}],
        },
    )
    yield from events


def new_id(prefix: str) -> str:
    """A unique id in the style of the API (``msg_...``, ``call_...``)."""
    return f"{prefix}{int(time.time() * 1000):x}{next(_ids):06d}"


def pieces(s: str, n: int = 3) -> list[str]:
    """``s`` cut into up to ``n`` non-empty pieces (at least one)."""
    if len(s) < 2:
        return [s]
    size = max(1, -(-len(s) // n))
    return [s[i : i + size] for i in range(0, len(s), size)]


def word_count(value: Any) -> int:
    return max(1, len(json.dumps(value).split()))


class Scenario:
    """The steps per endpoint, and how many each endpoint has served."""

    def __init__(self, data: Json) -> None:
        self.lock = threading.Lock()
        self.load(data)

    def load(self, data: Json) -> None:
        if not isinstance(data, dict):
            raise ValueError("a scenario is a JSON object")
        steps: dict[str, list[Step]] = {}
        for key in ENDPOINTS.values():
            value = data.get(key, [])
            if not isinstance(value, list) or not all(isinstance(s, list) for s in value):
                raise ValueError(f"scenario.{key} must be a list of steps (lists of parts)")
            steps[key] = value
        unknown = set(data) - set(ENDPOINTS.values())
        if unknown:
            raise ValueError(f"unknown scenario keys: {sorted(unknown)}")
        with self.lock:
            self.steps = steps
            self.served = {key: 0 for key in steps}

    def next_step(self, key: str) -> Step:
        with self.lock:
            steps = self.steps[key]
            if not steps:
                return [{"text": f"(the fake upstream has no {key} step scripted)"}]
            n = self.served[key]
            self.served[key] = n + 1
            return steps[min(n, len(steps) - 1)]


def sse(event: str | None, data: Json | str) -> bytes:
    """One server-sent event; ``data`` is JSON-encoded unless a string."""
    text = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {text}\n\n".encode()


# --- Anthropic Messages -----------------------------------------------------


def anthropic_blocks(step: Step) -> list[Json]:
    blocks: list[Json] = []
    for part in step:
        if "text" in part:
            blocks.append({"type": "text", "text": part["text"]})
        elif "tool_call" in part:
            call = part["tool_call"]
            blocks.append(
                {
                    "type": "tool_use",
                    "id": new_id("toolu_"),
                    "name": call["name"],
                    "input": call.get("input", {}),
                }
            )
        else:
            raise ValueError(f"a Messages step cannot have the part {part}")
    return blocks


def anthropic_message(request: Json, step: Step) -> Json:
    content = anthropic_blocks(step)
    has_tool = any(b["type"] == "tool_use" for b in content)
    return {
        "id": new_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": request.get("model", "claude-fake"),
        "content": content,
        "stop_reason": "tool_use" if has_tool else "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": word_count(request.get("messages", [])),
            "output_tokens": word_count(content),
        },
    }


def anthropic_stream(request: Json, step: Step) -> Iterator[bytes]:
    message = anthropic_message(request, step)
    start = dict(message, content=[], stop_reason=None)
    start["usage"] = {"input_tokens": message["usage"]["input_tokens"], "output_tokens": 1}

    def ev(kind: str, body: Json) -> bytes:
        return sse(kind, {"type": kind, **body})

    yield ev("message_start", {"message": start})
    yield ev("ping", {})
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            yield ev(
                "content_block_start",
                {"index": index, "content_block": {"type": "text", "text": ""}},
            )
            for piece in pieces(block["text"]):
                yield ev(
                    "content_block_delta",
                    {"index": index, "delta": {"type": "text_delta", "text": piece}},
                )
        else:
            yield ev(
                "content_block_start",
                {"index": index, "content_block": dict(block, input={})},
            )
            # The API's first input delta is often empty; then the JSON in pieces.
            arguments = json.dumps(block["input"])
            for piece in ["", *pieces(arguments, 4)]:
                yield ev(
                    "content_block_delta",
                    {"index": index, "delta": {"type": "input_json_delta", "partial_json": piece}},
                )
        yield ev("content_block_stop", {"index": index})
    yield ev(
        "message_delta",
        {
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": message["usage"]["output_tokens"]},
        },
    )
    yield ev("message_stop", {})


# --- OpenAI Chat Completions ------------------------------------------------


def chat_parts(step: Step) -> tuple[str | None, list[Json]]:
    texts: list[str] = []
    calls: list[Json] = []
    for part in step:
        if "text" in part:
            texts.append(part["text"])
        elif "tool_call" in part:
            call = part["tool_call"]
            calls.append(
                {
                    "id": new_id("call_"),
                    "type": "function",
                    "function": {
                        "name": call["name"],
                        "arguments": json.dumps(call.get("input", {})),
                    },
                }
            )
        else:
            raise ValueError(f"a Chat Completions step cannot have the part {part}")
    return ("".join(texts) if texts else None), calls


def chat_usage(request: Json, step: Step) -> Json:
    prompt = word_count(request.get("messages", []))
    completion = word_count(step)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def chat_completion(request: Json, step: Step) -> Json:
    content, calls = chat_parts(step)
    message: Json = {"role": "assistant", "content": content, "refusal": None}
    if calls:
        message["tool_calls"] = calls
    return {
        "id": new_id("chatcmpl-"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model", "gpt-fake"),
        "system_fingerprint": None,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": "tool_calls" if calls else "stop",
            }
        ],
        "usage": chat_usage(request, step),
    }


def chat_stream(request: Json, step: Step) -> Iterator[bytes]:
    content, calls = chat_parts(step)
    cid = new_id("chatcmpl-")
    created = int(time.time())
    model = request.get("model", "gpt-fake")

    def chunk(delta: Json, finish: str | None = None) -> bytes:
        return sse(
            None,
            {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "system_fingerprint": None,
                "choices": [
                    {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
                ],
            },
        )

    yield chunk({"role": "assistant", "content": "", "refusal": None})
    for piece in pieces(content or ""):
        if piece:
            yield chunk({"content": piece})
    for k, call in enumerate(calls):
        fn = call["function"]
        yield chunk(
            {
                "tool_calls": [
                    {
                        "index": k,
                        "id": call["id"],
                        "type": "function",
                        "function": {"name": fn["name"], "arguments": ""},
                    }
                ]
            }
        )
        for piece in pieces(fn["arguments"], 4):
            yield chunk({"tool_calls": [{"index": k, "function": {"arguments": piece}}]})
    yield chunk({}, "tool_calls" if calls else "stop")
    if (request.get("stream_options") or {}).get("include_usage"):
        yield sse(
            None,
            {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "system_fingerprint": None,
                "choices": [],
                "usage": chat_usage(request, step),
            },
        )
    yield sse(None, "[DONE]")


# --- OpenAI Responses -------------------------------------------------------


def responses_items(step: Step) -> list[Json]:
    items: list[Json] = []
    for part in step:
        if "text" in part:
            items.append(
                {
                    "type": "message",
                    "id": new_id("msg_"),
                    "status": "completed",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": part["text"], "annotations": []}],
                }
            )
        elif "tool_call" in part:
            call = part["tool_call"]
            items.append(
                {
                    "type": "function_call",
                    "id": new_id("fc_"),
                    "call_id": new_id("call_"),
                    "name": call["name"],
                    "arguments": json.dumps(call.get("input", {})),
                    "status": "completed",
                }
            )
        elif "custom_tool_call" in part:
            call = part["custom_tool_call"]
            items.append(
                {
                    "type": "custom_tool_call",
                    "id": new_id("ctc_"),
                    "call_id": new_id("call_"),
                    "name": call["name"],
                    "input": call.get("input", ""),
                    "status": "completed",
                }
            )
        else:
            raise ValueError(f"a Responses step cannot have the part {part}")
    return items


def response_object(request: Json, output: list[Json], status: str) -> Json:
    completed = status == "completed"
    input_tokens = word_count(request.get("input", ""))
    output_tokens = word_count(output) if completed else 0
    return {
        "id": new_id("resp_"),
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "error": None,
        "incomplete_details": None,
        "instructions": request.get("instructions"),
        "max_output_tokens": request.get("max_output_tokens"),
        "model": request.get("model", "gpt-fake"),
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": request.get("previous_response_id"),
        "reasoning": {"effort": None, "summary": None},
        "store": True,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": request.get("tools", []),
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": (
            {
                "input_tokens": input_tokens,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": output_tokens,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": input_tokens + output_tokens,
            }
            if completed
            else None
        ),
        "user": None,
        "metadata": {},
    }


def responses_stream(request: Json, step: Step) -> Iterator[bytes]:
    items = responses_items(step)
    final = response_object(request, items, "completed")
    start = dict(final, status="in_progress", output=[], usage=None)
    seq = itertools.count()

    def ev(kind: str, body: Json) -> bytes:
        return sse(kind, {"type": kind, "sequence_number": next(seq), **body})

    yield ev("response.created", {"response": start})
    yield ev("response.in_progress", {"response": start})
    for index, item in enumerate(items):
        iid = item["id"]
        if item["type"] == "message":
            text = item["content"][0]["text"]
            added = dict(item, status="in_progress", content=[])
            yield ev("response.output_item.added", {"output_index": index, "item": added})
            where = {"item_id": iid, "output_index": index, "content_index": 0}
            empty_part = {"type": "output_text", "text": "", "annotations": []}
            yield ev("response.content_part.added", {**where, "part": empty_part})
            for piece in pieces(text):
                yield ev("response.output_text.delta", {**where, "delta": piece, "logprobs": []})
            yield ev("response.output_text.done", {**where, "text": text, "logprobs": []})
            yield ev("response.content_part.done", {**where, "part": item["content"][0]})
        elif item["type"] == "function_call":
            added = dict(item, arguments="", status="in_progress")
            yield ev("response.output_item.added", {"output_index": index, "item": added})
            where = {"item_id": iid, "output_index": index}
            for piece in pieces(item["arguments"], 4):
                yield ev("response.function_call_arguments.delta", {**where, "delta": piece})
            yield ev(
                "response.function_call_arguments.done",
                {**where, "name": item["name"], "arguments": item["arguments"]},
            )
        else:  # custom_tool_call
            added = dict(item, input="", status="in_progress")
            yield ev("response.output_item.added", {"output_index": index, "item": added})
            where = {"item_id": iid, "output_index": index}
            for piece in pieces(item["input"], 4):
                yield ev("response.custom_tool_call_input.delta", {**where, "delta": piece})
            yield ev("response.custom_tool_call_input.done", {**where, "input": item["input"]})
        yield ev("response.output_item.done", {"output_index": index, "item": item})
    yield ev("response.completed", {"response": final})


# --- models -----------------------------------------------------------------


def anthropic_models() -> Json:
    data = [
        {
            "type": "model",
            "id": "claude-fake-1",
            "display_name": "Claude Fake 1",
            "created_at": "2026-01-01T00:00:00Z",
        },
        {
            "type": "model",
            "id": "claude-fake-2",
            "display_name": "Claude Fake 2",
            "created_at": "2026-02-01T00:00:00Z",
        },
    ]
    return {"data": data, "has_more": False, "first_id": data[0]["id"], "last_id": data[-1]["id"]}


def openai_models() -> Json:
    return {
        "object": "list",
        "data": [
            {"id": "gpt-fake-1", "object": "model", "created": 1767225600, "owned_by": "fake"},
            {"id": "gpt-fake-2", "object": "model", "created": 1769904000, "owned_by": "fake"},
        ],
    }


# --- the server -------------------------------------------------------------


class FakeServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64

    def __init__(self, port: int, scenario: Scenario, log_path: str) -> None:
        super().__init__(("127.0.0.1", port), Handler)
        self.scenario = scenario
        self.log_path = log_path
        self.log_lock = threading.Lock()

    def log_request_line(self, record: Json) -> None:
        line = json.dumps(record, separators=(",", ":")) + "\n"
        with self.log_lock, open(self.log_path, "a", encoding="utf-8") as f:
            f.write(line)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: FakeServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass  # the request log is the record; keep stderr quiet

    def read_body(self) -> bytes:
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            out = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return out
                out += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length else b""

    def send_json(self, status: int, body: Json) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_stream(self, events: list[bytes]) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        # Rendered in full before the head goes out (a bad step is a 500,
        # not a broken stream); one chunk and one flush per event, so the
        # client sees them arrive separately, as from a real model.
        for event in events:
            self.wfile.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def error(self, status: int, message: str) -> None:
        if self.headers.get("anthropic-version"):
            body: Json = {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
        else:
            body = {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}}
        self.send_json(status, body)

    def record(self, raw: bytes) -> Json | None:
        url = urlsplit(self.path)
        body: Any = None
        record: Json = {
            "method": self.command,
            "path": url.path,
            "query": url.query,
            "headers": {k.lower(): v for k, v in self.headers.items()},
        }
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                record["body_text"] = raw.decode("utf-8", "replace")
        record["body"] = body
        self.server.log_request_line(record)
        return body if isinstance(body, dict) else None

    def do_GET(self) -> None:  # noqa: N802
        self.read_body()
        self.record(b"")
        path = urlsplit(self.path).path
        if path == "/v1/models":
            if self.headers.get("anthropic-version"):
                self.send_json(200, anthropic_models())
            else:
                self.send_json(200, openai_models())
        else:
            self.error(404, f"the fake upstream has no GET {path}")

    def do_POST(self) -> None:  # noqa: N802
        raw = self.read_body()
        path = urlsplit(self.path).path
        if path == "/_fake/scenario":
            try:
                self.server.scenario.load(json.loads(raw))
            except ValueError as e:
                self.error(400, f"bad scenario: {e}")
                return
            self.send_json(200, {"ok": True})
            return
        body = self.record(raw)
        key = ENDPOINTS.get(path)
        azure = azure_deployment(path)
        if azure is not None:
            query = urlsplit(self.path).query
            if "api-version=" not in query:
                self.error(400, "Missing required query parameter: api-version")
                return
            if not self.headers.get("api-key"):
                self.send_json(
                    401,
                    {"error": {"code": "401", "message": "Access denied due to invalid subscription key."}},
                )
                return
            key = "chat"
        if key is None:
            self.error(404, f"the fake upstream has no POST {path}")
            return
        if body is None:
            self.error(400, "the body must be a JSON object")
            return
        step = self.server.scenario.next_step(key)
        stream = body.get("stream") is True
        try:
            if key == "messages":
                if stream:
                    self.send_stream(list(anthropic_stream(body, step)))
                else:
                    self.send_json(200, anthropic_message(body, step))
            elif key == "chat" and azure is not None:
                body.setdefault("model", azure)
                if stream:
                    self.send_stream(list(azure_stream(chat_stream(body, step))))
                else:
                    self.send_json(200, azure_completion(chat_completion(body, step)))
            elif key == "chat":
                if stream:
                    self.send_stream(list(chat_stream(body, step)))
                else:
                    self.send_json(200, chat_completion(body, step))
            elif stream:
                self.send_stream(list(responses_stream(body, step)))
            else:
                self.send_json(200, response_object(body, responses_items(step), "completed"))
        except (KeyError, ValueError) as e:
            self.error(500, f"the scenario step cannot be rendered: {e!r}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--script", required=True, help="the scenario JSON file")
    parser.add_argument("--log", required=True, help="JSON-lines file of received requests")
    args = parser.parse_args(argv)
    with open(args.script, encoding="utf-8") as f:
        scenario = Scenario(json.load(f))
    server = FakeServer(args.port, scenario, args.log)
    print(f"PORT {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
