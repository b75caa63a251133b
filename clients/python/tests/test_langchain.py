"""LangChain: ``guard_tool`` around a real langchain-core tool, invoked as an
agent invokes it (``invoke``/``ainvoke`` with the tool-call arguments)."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.tools import tool

from conftest import AGENT_TOKEN, Server
from parallax_client import Denied, Firewall, Parallax
from parallax_client.integrations.langchain import guard_tool

ran: list[str] = []


@tool
def shell(command: str) -> str:
    """Runs a shell command."""
    ran.append(command)
    return f"ran {command}"


@pytest.fixture
def fw(server: Server) -> Firewall:
    ran.clear()
    return Firewall(Parallax(server.url, token=AGENT_TOKEN, timeout=10), approval_timeout=20)


def test_keeps_the_tool_s_interface(fw: Firewall) -> None:
    safe = guard_tool(shell, fw)
    assert (safe.name, safe.description) == (shell.name, shell.description)
    assert safe.args == shell.args


def test_allowed_denied_and_rewritten(fw: Firewall) -> None:
    safe = guard_tool(shell, fw)
    assert safe.invoke({"command": "ls"}) == "ran ls"
    with pytest.raises(Denied) as e:
        safe.invoke({"command": "rm -rf /"})
    assert e.value.rule_ids == ["dangerous-rm-rf"]
    assert safe.invoke({"command": "echo sk-test-abcdefghijklmnopqrst"}) == "ran echo [REDACTED]"
    assert ran == ["ls", "echo [REDACTED]"]


def test_tool_call_shape_and_message_mode(fw: Firewall) -> None:
    safe = guard_tool(shell, fw, on_deny="message")
    msg = safe.invoke({"type": "tool_call", "id": "t1", "name": "shell", "args": {"command": "rm -rf ~"}})
    assert msg.tool_call_id == "t1"
    assert msg.content.startswith("Parallax denied shell: dangerous-rm-rf")
    assert ran == []


def test_async_and_approval(fw: Firewall, approver) -> None:
    safe = guard_tool(shell, fw)

    async def main() -> None:
        assert await safe.ainvoke({"command": "pwd"}) == "ran pwd"
        person = approver("deploy prod lc-1", "approve")
        assert await safe.ainvoke({"command": "deploy prod lc-1"}) == "ran deploy prod lc-1"
        assert person.done()[0] == 200

    asyncio.run(main())
