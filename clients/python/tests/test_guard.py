"""``@fw.guard`` on plain tool functions, sync and async: the tool name is
the function's name, the arguments its arguments by name."""

from __future__ import annotations

import asyncio

import pytest

from conftest import AGENT_TOKEN, Server
from parallax_client import AsyncParallax, Denied, Firewall, Parallax


@pytest.fixture
def fw(server: Server) -> Firewall:
    return Firewall(Parallax(server.url, token=AGENT_TOKEN, timeout=10), approval_timeout=20)


def test_sync_guard(fw: Firewall) -> None:
    ran: list[str] = []

    @fw.guard
    def shell(command: str, cwd: str = "/") -> str:
        ran.append(command)
        return f"ran {command}"

    assert shell("ls -l") == "ran ls -l"
    with pytest.raises(Denied) as e:
        shell(command="rm -rf /srv", cwd="/")
    assert e.value.rule_ids == ["dangerous-rm-rf"]
    assert e.value.tool_name == "shell"
    assert ran == ["ls -l"]
    assert shell.__name__ == "shell"


def test_guard_applies_a_rewrite(fw: Firewall) -> None:
    @fw.guard(name="post_note")
    def note(text: str, count: int = 1) -> str:
        return text

    assert note("key sk-test-abcdefghijklmnopqrst here", count=2) == "key [REDACTED] here"


def test_guard_waits_for_an_approval(fw: Firewall, approver) -> None:
    @fw.guard
    def release(command: str) -> str:
        return "released"

    person = approver("deploy prod guard-7", "approve")
    assert release("deploy prod guard-7") == "released"
    assert person.done()[0] == 200


def test_async_guard(server: Server, approver) -> None:
    fw = Firewall(AsyncParallax(server.url, token=AGENT_TOKEN, timeout=10), approval_timeout=20)

    @fw.guard
    async def shell(command: str) -> str:
        await asyncio.sleep(0)
        return f"ran {command}"

    async def main() -> None:
        assert await shell("echo hi") == "ran echo hi"
        with pytest.raises(Denied):
            await shell("rm -rf ~/")
        person = approver("deploy prod guard-async", "deny", comment="freeze")
        with pytest.raises(Denied) as e:
            await shell("deploy prod guard-async")
        assert person.done()[0] == 200
        assert "freeze" in e.value.reason

    asyncio.run(main())


def test_sync_guard_with_an_async_client(server: Server) -> None:
    # One Firewall serves both kinds of tool whichever client it was given.
    fw = Firewall(AsyncParallax(server.url, token=AGENT_TOKEN, timeout=10))

    @fw.guard
    def shell(command: str) -> str:
        return "ok"

    assert shell("pwd") == "ok"
    with pytest.raises(Denied):
        shell("rm -r /tmp/a ")
