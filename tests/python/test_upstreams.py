"""Named upstreams (`proxy.upstreams`) through the official OpenAI SDK:
an Ollama-style server at its root, a vLLM-style server whose base URL
carries `/v1` and whose key Parallax adds from its own environment, and
Azure OpenAI's deployment route with the SDK's own `AzureOpenAI` client.
One fake upstream speaks all three shapes (fake_upstream.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from conftest import (
    CLIENT_TIMEOUT_S,
    FakeUpstream,
    Parallax,
    http_get,
    make_openai,
    start_parallax,
    stop,
)
from scenarios import (
    AWS_KEY,
    BASH_TOOL_CHAT,
    BENIGN,
    BLOCKED_PROMPT,
    BLOCKED_RULE,
    DANGEROUS_RULE,
    MIXED_STEP,
    PLAIN_REPLY,
    PLAIN_STEP,
    REDACTED,
    Json,
    assemble_chat,
    assert_names_rule,
    chat_message,
)

VLLM_KEY = "vllm-served-key-0123456789"
AZURE_DEPLOYMENT = "gpt-4o-prod"
AZURE_API_VERSION = "2024-10-21"
AZURE_PATH = f"/openai/deployments/{AZURE_DEPLOYMENT}/chat/completions"
MODES = ["create", "stream"]


@pytest.fixture(scope="module")
def gateway(
    tmp_path_factory: pytest.TempPathFactory, fake: FakeUpstream
) -> Iterator[Parallax]:
    """A Parallax whose proxy has three named upstreams, all the fake."""
    upstreams = {
        "ollama": {"base_url": fake.url, "api": "openai"},
        "vllm": {
            "base_url": f"{fake.url}/v1",
            "api": "openai",
            "auth": {"header": "authorization", "env": "TEST_VLLM_KEY", "scheme": "Bearer"},
        },
        "azure": {"base_url": fake.url, "api": "openai", "other_paths": "refuse"},
    }
    px = start_parallax(
        tmp_path_factory.mktemp("parallax-upstreams"),
        fake.url,
        proxy_extra={"upstreams": upstreams},
        env={"TEST_VLLM_KEY": VLLM_KEY},
    )
    yield px
    stop(px.proc)


def ollama(px: Parallax, session: str) -> openai.OpenAI:
    return make_openai(px.url, session, path="/ollama/v1", api_key="ollama")


def azure(px: Parallax, session: str) -> openai.AzureOpenAI:
    return openai.AzureOpenAI(
        api_key="azure-test-key",
        azure_endpoint=f"{px.url}/azure",
        api_version=AZURE_API_VERSION,
        max_retries=0,
        timeout=CLIENT_TIMEOUT_S,
        default_headers={"x-parallax-session": session},
    )


def ask(client: openai.OpenAI, model: str, mode: str, messages: list[Json]) -> Json:
    kwargs: Any = {"model": model, "messages": messages, "tools": [BASH_TOOL_CHAT]}
    if mode == "create":
        return chat_message(client.chat.completions.create(**kwargs))
    with client.chat.completions.create(stream=True, **kwargs) as chunks:
        return assemble_chat(chunks)


def user(text: str) -> list[Json]:
    return [{"role": "user", "content": text}]


@pytest.mark.parametrize("mode", MODES)
def test_ollama_dangerous_call_replaced_benign_kept(
    upstream: FakeUpstream, gateway: Parallax, session_id: str, mode: str
) -> None:
    upstream.script({"chat": [MIXED_STEP]})
    reply = ask(ollama(gateway, session_id), "llama3.1", mode, user("Clean up the disk."))
    assert_names_rule(reply["content"], DANGEROUS_RULE)
    args = [json.loads(c["function"]["arguments"]) for c in reply["tool_calls"]]
    assert args == [BENIGN], f"only the benign call may be left: {reply['tool_calls']}"
    sent = upstream.model_requests("/v1/chat/completions")
    assert len(sent) == 1, "the request goes to the server's own /v1/chat/completions"
    assert sent[0]["headers"]["authorization"] == "Bearer ollama", (
        "with no `auth`, the agent's own key is forwarded as it is"
    )


@pytest.mark.parametrize("mode", MODES)
def test_ollama_blocked_prompt_never_reaches_the_server(
    upstream: FakeUpstream, gateway: Parallax, session_id: str, mode: str
) -> None:
    upstream.script({"chat": [PLAIN_STEP]})
    reply = ask(ollama(gateway, session_id), "llama3.1", mode, user(BLOCKED_PROMPT))
    assert_names_rule(reply["content"], BLOCKED_RULE)
    assert upstream.model_requests("/v1/chat/completions") == []


def test_ollama_other_paths_are_forwarded(upstream: FakeUpstream, gateway: Parallax) -> None:
    status, body = http_get(f"{gateway.url}/ollama/v1/models")
    assert status == 200, body
    assert json.loads(body)["object"] == "list"


def test_vllm_base_with_v1_gets_parallaxs_key_and_a_redacted_secret(
    upstream: FakeUpstream, gateway: Parallax, session_id: str
) -> None:
    upstream.script({"chat": [PLAIN_STEP]})
    client = make_openai(gateway.url, session_id, path="/vllm", api_key="agent-has-no-real-key")
    reply = ask(client, "meta-llama/Llama-3.1-8B", "create", user(f"My key is {AWS_KEY}."))
    assert reply["content"] == PLAIN_REPLY
    sent = upstream.model_requests("/v1/chat/completions")
    assert len(sent) == 1, "/vllm/chat/completions is forwarded to <base>/v1/chat/completions"
    assert sent[0]["headers"]["authorization"] == f"Bearer {VLLM_KEY}", (
        "the configured credential replaces the agent's"
    )
    body = json.dumps(sent[0]["body"])
    assert AWS_KEY not in body and REDACTED in body, sent[0]["body"]
    assert VLLM_KEY not in gateway.stderr()


@pytest.mark.parametrize("mode", MODES)
def test_azure_deployment_route_is_inspected(
    upstream: FakeUpstream, gateway: Parallax, session_id: str, mode: str
) -> None:
    upstream.script({"chat": [MIXED_STEP]})
    reply = ask(azure(gateway, session_id), AZURE_DEPLOYMENT, mode, user("Tidy up."))
    assert_names_rule(reply["content"], DANGEROUS_RULE)
    args = [json.loads(c["function"]["arguments"]) for c in reply["tool_calls"]]
    assert args == [BENIGN], reply["tool_calls"]
    sent = upstream.model_requests(AZURE_PATH)
    assert len(sent) == 1, f"expected the deployment route, got {upstream.requests()}"
    assert f"api-version={AZURE_API_VERSION}" in sent[0]["query"], sent[0]["query"]
    assert sent[0]["headers"]["api-key"] == "azure-test-key"


@pytest.mark.parametrize("mode", MODES)
def test_azure_secret_redacted_and_blocked_prompt_answered(
    upstream: FakeUpstream, gateway: Parallax, session_id: str, mode: str
) -> None:
    upstream.script({"chat": [PLAIN_STEP]})
    client = azure(gateway, session_id)
    reply = ask(client, AZURE_DEPLOYMENT, mode, user(f"Deploy with {AWS_KEY} please."))
    assert reply["content"] == PLAIN_REPLY
    sent = upstream.model_requests(AZURE_PATH)
    assert len(sent) == 1 and AWS_KEY not in json.dumps(sent[0]["body"]), sent
    reply = ask(client, AZURE_DEPLOYMENT, mode, user(BLOCKED_PROMPT))
    assert_names_rule(reply["content"], BLOCKED_RULE)
    assert len(upstream.model_requests(AZURE_PATH)) == 1, "the blocked turn was forwarded"


def test_azure_refuses_paths_it_does_not_inspect(
    upstream: FakeUpstream, gateway: Parallax, session_id: str
) -> None:
    client = azure(gateway, session_id)
    with pytest.raises(openai.PermissionDeniedError) as caught:
        client.completions.create(model=AZURE_DEPLOYMENT, prompt="legacy completions")
    assert "other_paths" in str(caught.value), caught.value
    assert upstream.requests() == [], "a refused request reached the upstream"
