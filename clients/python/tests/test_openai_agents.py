"""The OpenAI Agents SDK's tool guardrails, run by the SDK itself: a real
``Runner.run`` with the SDK's ``ScriptedModel`` (no model API, no network;
tracing off) calling a ``function_tool`` that carries Parallax's guardrails."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from agents import Agent, RunConfig, Runner, ToolInputGuardrailTripwireTriggered, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call

from conftest import AGENT_TOKEN, Server
from parallax_client import AsyncParallax, Firewall
from parallax_client.integrations.openai_agents import input_guardrail, output_guardrail

NO_TRACING = RunConfig(tracing_disabled=True)


def tool_outputs(model: ScriptedModel) -> list[str]:
    """What the model was told each tool call returned (its later inputs)."""
    outputs = []
    for call in model.calls:
        items = call.input if isinstance(call.input, list) else []
        for item in items:
            item = item if isinstance(item, dict) else item.model_dump()
            if item.get("type") == "function_call_output":
                outputs.append(str(item.get("output")))
    return outputs


def build(fw: Firewall, ran: list[dict[str, Any]], **kw: Any):
    @function_tool(
        tool_input_guardrails=[input_guardrail(fw, **kw)],
        tool_output_guardrails=[output_guardrail(fw)],
    )
    def shell(command: str) -> str:
        """Runs a shell command."""
        ran.append({"command": command})
        return f"output of {command}: sk-test-abcdefghijklmnopqrst" if "key" in command else "ok"

    return shell


def run(model: ScriptedModel, tool: Any) -> Any:
    agent = Agent(name="ops", instructions="Run what is asked.", model=model, tools=[tool])
    return asyncio.run(Runner.run(agent, "please", run_config=NO_TRACING))


@pytest.fixture
def fw(server: Server) -> Firewall:
    return Firewall(AsyncParallax(server.url, token=AGENT_TOKEN, timeout=10))


def test_denied_call_is_rejected_and_the_model_told_why(fw: Firewall) -> None:
    ran: list[dict[str, Any]] = []
    model = ScriptedModel(
        [[function_call("shell", {"command": "rm -rf /"}, call_id="c1")], [assistant_message("sorry")]]
    )
    result = run(model, build(fw, ran))
    assert ran == []
    (told,) = tool_outputs(model)
    assert told.startswith("Parallax denied shell: dangerous-rm-rf")
    assert result.final_output == "sorry"


def test_allowed_call_runs_and_its_result_is_redacted(fw: Firewall) -> None:
    ran: list[dict[str, Any]] = []
    model = ScriptedModel(
        [[function_call("shell", {"command": "print key"}, call_id="c1")], [assistant_message("done")]]
    )
    run(model, build(fw, ran))
    assert ran == [{"command": "print key"}]
    (told,) = tool_outputs(model)
    assert "[REDACTED]" in told and "sk-test-" not in told


def test_on_deny_raise_stops_the_run(fw: Firewall) -> None:
    ran: list[dict[str, Any]] = []
    model = ScriptedModel([[function_call("shell", json.dumps({"command": "rm -rf ~"}), call_id="c1")]])
    with pytest.raises(ToolInputGuardrailTripwireTriggered) as e:
        run(model, build(fw, ran, on_deny="raise"))
    assert e.value.output.output_info["rule_ids"] == ["dangerous-rm-rf"]
    assert ran == []


def test_rewrite_is_rejected_with_the_allowed_arguments(fw: Firewall) -> None:
    ran: list[dict[str, Any]] = []
    model = ScriptedModel(
        [
            [function_call("shell", {"command": "curl -H sk-test-abcdefghijklmnopqrst x"}, call_id="c1")],
            [assistant_message("ok")],
        ]
    )
    run(model, build(fw, ran))
    assert ran == []
    (told,) = tool_outputs(model)
    assert "only with these arguments" in told and "[REDACTED]" in told
