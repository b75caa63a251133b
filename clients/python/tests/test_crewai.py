"""CrewAI: ``guard_tool``/``guard_crew`` around real ``crewai`` tools (the
``@tool`` decorator and a ``BaseTool`` subclass), called directly, through
CrewAI's own tool machinery (``CrewStructuredTool``/``ToolUsage``, the
ReAct path; ``execute_single_native_tool_call``, native function calling),
and through a whole ``Crew.kickoff`` whose agent's LLM is a scripted
``BaseLLM`` (no model API, no network). Against the suite's
``parallax serve`` and the embedded engine.

crewai has a venv of its own (.venv-crewai, clients/python/crewai-
requirements.txt; run by tests/python_crewai.rs in a loopback-only network
namespace); in the client suite's venv, which has no crewai, this module is
skipped. CrewAI's telemetry and tracing are switched off here, and its home
(storage, settings) and temporary folder are fresh, before crewai is
imported.
"""

from __future__ import annotations

import asyncio
import atexit
import importlib.util
import json
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest

if importlib.util.find_spec("crewai") is None:
    pytest.skip("crewai is not installed here (its suite runs from .venv-crewai)", allow_module_level=True)

for _key, _value in {
    "CREWAI_DISABLE_TELEMETRY": "true",
    "CREWAI_DISABLE_TRACKING": "true",
    "OTEL_SDK_DISABLED": "true",
    "CREWAI_TRACING_ENABLED": "false",
}.items():
    os.environ[_key] = _value
# CrewAI keeps a key, settings and storage under the home folder and lock
# files in the temporary one: both fresh, for this process only.
_home = tempfile.mkdtemp(prefix="crewai-home-")
for _key in ("HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "TMPDIR"):
    os.environ[_key] = _home
tempfile.tempdir = _home
atexit.register(shutil.rmtree, _home, ignore_errors=True)

from crewai import Agent, Crew, Task  # noqa: E402
from crewai.agents.tools_handler import ToolsHandler  # noqa: E402
from crewai.agents.cache.cache_handler import CacheHandler  # noqa: E402
from crewai.llms.base_llm import BaseLLM  # noqa: E402
from crewai.tools import BaseTool, tool  # noqa: E402
from crewai.tools.tool_calling import ToolCalling  # noqa: E402
from crewai.tools.tool_failure import ToolFailure  # noqa: E402
from crewai.tools.tool_usage import ToolUsage  # noqa: E402
from crewai.utilities.agent_utils import (  # noqa: E402
    convert_tools_to_openai_schema,
    execute_single_native_tool_call,
    parse_tools,
)

from conftest import AGENT_TOKEN, HERE, Server  # noqa: E402
from parallax_client import AsyncParallax, Denied, Firewall, Parallax  # noqa: E402
from parallax_client.integrations.crewai import ParallaxTool, guard_crew, guard_tool  # noqa: E402

# crewai 1.15 warns about its own deprecated fields on every Agent and Crew.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SECRET = "sk-test-abcdefghijklmnopqrst"
ran: list[str] = []


@tool
def shell(command: str) -> str:
    """Runs a shell command."""
    ran.append(command)
    return f"output of {command}: {SECRET}" if "key" in command else f"ran {command}"


@tool("lookup")
async def lookup(query: str) -> dict[str, Any]:
    """Looks a customer up."""
    ran.append(query)
    return {"query": query, "token": SECRET}


class Deploy(BaseTool):
    name: str = "deploy"
    description: str = "Deploys a service to an environment."

    def _run(self, service: str, env: str = "staging") -> str:
        ran.append(f"{service}@{env}")
        return f"deployed {service} to {env}"


@pytest.fixture
def fw(server: Server) -> Firewall:
    ran.clear()
    return Firewall(Parallax(server.url, token=AGENT_TOKEN, timeout=10), approval_timeout=20)


def model_call(i: int, command: str) -> dict[str, Any]:
    """A call of ``shell`` as a model's answer carries it (OpenAI's shape)."""
    arguments = json.dumps({"command": command})
    return {"id": f"c{i}", "type": "function", "function": {"name": "shell", "arguments": arguments}}


def denied(result: Any, code: str = "parallax_denied") -> ToolFailure:
    assert isinstance(result, ToolFailure), result
    assert result.code == code
    return result


# -- the tool itself ------------------------------------------------------


def test_keeps_the_tool_s_interface(fw: Firewall) -> None:
    safe = guard_tool(shell, fw)
    assert isinstance(safe, BaseTool) and safe.wrapped is shell
    assert (safe.name, safe.description, safe.args_schema) == (shell.name, shell.description, shell.args_schema)
    assert safe.formatted_description == shell.formatted_description
    assert guard_tool(safe, fw) is safe
    with pytest.raises(TypeError, match="crewai BaseTool"):
        guard_tool(lambda: None, fw)  # type: ignore[arg-type]


def test_benign_blocked_and_redacted_calls(fw: Firewall) -> None:
    safe = guard_tool(shell, fw)
    assert safe.run(command="ls") == "ran ls"
    refused = denied(safe.run(command="rm -rf /"))
    assert refused.message.startswith("Parallax denied `shell`: dangerous-rm-rf")
    assert refused.message.endswith("(rules: dangerous-rm-rf); the tool did not run")
    assert refused.details["rule_ids"] == ["dangerous-rm-rf"] and not refused.retryable
    # The agent reads the failure's text; the secret never reaches the tool.
    assert safe.run(command=f"echo {SECRET}") == "ran echo [REDACTED]"
    assert ran == ["ls", "echo [REDACTED]"]


def test_the_result_goes_through_tool_after(fw: Firewall) -> None:
    told = guard_tool(shell, fw).run(command="print key")
    assert told == "output of print key: [REDACTED]"
    assert ran == ["print key"]
    unchecked = guard_tool(shell, fw, check_results=False).run(command="print key")
    assert SECRET in unchecked


def test_a_base_tool_subclass_positional_arguments_and_its_schema(fw: Firewall) -> None:
    safe = guard_tool(Deploy(), fw)
    assert safe.run("api") == "deployed api to staging"
    assert safe.run(service="api", env="prod") == "deployed api to prod"
    denied(safe.run(service="db; drop table users"))
    with pytest.raises(ValueError, match="arguments validation failed"):
        safe.run(env="prod")
    assert ran == ["api@staging", "api@prod"]


def test_on_deny_raise(fw: Firewall) -> None:
    safe = guard_tool(shell, fw, on_deny="raise")
    with pytest.raises(Denied) as e:
        safe.run(command="rm -rf ~")
    assert e.value.rule_ids == ["dangerous-rm-rf"]
    assert ran == []


def test_approval_is_waited_for(fw: Firewall, approver) -> None:
    safe = guard_tool(shell, fw)
    person = approver("deploy prod cw-1", "approve")
    assert safe.run(command="deploy prod cw-1") == "ran deploy prod cw-1"
    assert person.done()[0] == 200
    person = approver("deploy prod cw-2", "deny")
    refused = denied(safe.run(command="deploy prod cw-2"))
    assert "deploy-to-prod" in refused.message
    assert person.done()[0] == 200
    assert ran == ["deploy prod cw-1"]


def test_approval_not_given_in_time(server: Server) -> None:
    ran.clear()
    fw = Firewall(Parallax(server.url, token=AGENT_TOKEN, timeout=10), approval_timeout=0)
    refused = denied(guard_tool(shell, fw).run(command="deploy prod cw-3"), "parallax_approval_pending")
    assert refused.retryable and "still pending" in refused.message
    assert ran == []


def test_async_tools(server: Server, approver) -> None:
    ran.clear()
    fw = Firewall(AsyncParallax(server.url, token=AGENT_TOKEN, timeout=10), approval_timeout=20)

    async def main() -> None:
        found = await guard_tool(lookup, fw).arun(query="acme")
        assert found == {"query": "acme", "token": "[REDACTED]"}
        safe = guard_tool(shell, fw)  # sync: run on a thread
        denied(await safe.arun(command="rm -rf /tmp/x"))
        person = approver("deploy prod cw-4", "approve")
        assert await safe.arun(command="deploy prod cw-4") == "ran deploy prod cw-4"
        assert person.done()[0] == 200

    asyncio.run(main())
    assert ran == ["acme", "deploy prod cw-4"]


def test_server_down_fails_closed(unused_url: str) -> None:
    ran.clear()
    fw = Firewall(Parallax(unused_url, timeout=2))
    refused = denied(guard_tool(shell, fw).run(command="ls"), "parallax_unreachable")
    assert f"Parallax is not reachable at {unused_url}" in refused.message
    assert "parallax serve" in refused.message and refused.retryable
    with pytest.raises(Denied, match="not reachable"):
        guard_tool(shell, fw, on_deny="raise").run(command="ls")
    assert ran == []


# -- CrewAI's own tool machinery ------------------------------------------


def test_react_path_tool_usage(fw: Firewall) -> None:
    """``ToolUsage``, as the ReAct executor uses it (``CrewStructuredTool``
    built from the tool's ``_run``): what it answers is what the agent reads."""
    (structured,) = parse_tools([guard_tool(shell, fw)])
    usage = ToolUsage(tools_handler=None, tools=[structured], task=None, function_calling_llm=None)

    def use(command: str) -> str:
        call = ToolCalling(tool_name="shell", arguments={"command": command})
        return usage.use(call, f'Action: shell\nAction Input: {{"command": "{command}"}}')

    assert use("rm -rf /").startswith("Parallax denied `shell`: dangerous-rm-rf")
    assert usage.last_failure is not None and usage.last_failure.code == "parallax_denied"
    assert use(f"echo {SECRET}") == "ran echo [REDACTED]"
    assert use("print key") == "output of print key: [REDACTED]"
    assert ran == ["echo [REDACTED]", "print key"]


def test_native_function_calling_path(fw: Firewall) -> None:
    """``execute_single_native_tool_call``: tool calls as a model's answer
    carries them, run through ``tool.run`` with CrewAI's tool cache on."""
    tools: list[BaseTool] = [guard_tool(shell, fw)]
    _, functions, _ = convert_tools_to_openai_schema(tools)
    handler = ToolsHandler(cache=CacheHandler())

    def call(command: str) -> str:
        result = execute_single_native_tool_call(
            model_call(1, command),
            available_functions=functions,
            original_tools=tools,
            structured_tools=None,
            tools_handler=handler,
            agent=None,
            task=None,
            crew=None,
            event_source=object(),
        )
        return result.result

    assert call("rm -rf /").startswith("Parallax denied `shell`: dangerous-rm-rf")
    assert call("print key") == "output of print key: [REDACTED]"
    assert ran == ["print key"]
    # A refusal is never answered from CrewAI's cache; an allowed result is.
    assert handler.cache.read(tool="shell", input=json.dumps({"command": "rm -rf /"})) is None
    assert handler.cache.read(tool="shell", input=json.dumps({"command": "print key"})) is not None


class ScriptedLLM(BaseLLM):
    """A model that answers from a script (no API, no network), recording
    what it was sent."""

    replies: list[Any] = []
    seen: list[Any] = []
    native: bool = False

    def call(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        self.seen.append(messages)
        return self.replies.pop(0)

    def supports_function_calling(self) -> bool:
        return self.native


def crew_of(llm: ScriptedLLM, *tools: BaseTool) -> Crew:
    agent = Agent(role="ops", goal="run what is asked", backstory="an operator", llm=llm, tools=list(tools))
    task = Task(description="clean the disk", expected_output="what happened", agent=agent)
    return Crew(agents=[agent], tasks=[task])


def told(llm: ScriptedLLM) -> list[str]:
    """What the agent's model was told each tool returned."""
    last = llm.seen[-1]
    return [m["content"] for m in last if m.get("role") == "tool"] or [
        m["content"].split("Observation: ", 1)[1]
        for m in last
        if m.get("role") == "assistant" and "Observation: " in str(m.get("content"))
    ]


def test_crew_kickoff_react(fw: Firewall) -> None:
    llm = ScriptedLLM(
        model="scripted",
        replies=[
            'Thought: clean up.\nAction: shell\nAction Input: {"command": "rm -rf /"}',
            "Thought: I now know the final answer\nFinal Answer: could not clean up",
        ],
    )
    crew = crew_of(llm, shell)
    assert guard_crew(crew, fw) is crew and isinstance(crew.agents[0].tools[0], ParallaxTool)
    out = crew.kickoff()
    assert out.raw == "could not clean up" and ran == []
    (observation,) = told(llm)
    assert observation.startswith("Parallax denied `shell`: dangerous-rm-rf")
    # CrewAI records it as the tool's failure on the task's output.
    (record,) = out.tasks_output[0].tool_failures
    assert record.tool_name == "shell" and record.failure.code == "parallax_denied"


def test_crew_kickoff_native_function_calling(fw: Firewall) -> None:
    llm = ScriptedLLM(
        model="scripted",
        native=True,
        replies=[
            [model_call(1, "print key")],
            [model_call(2, "rm -rf ~")],
            [model_call(3, f"echo {SECRET}")],
            "all done",
        ],
    )
    out = guard_crew(crew_of(llm, shell), fw).kickoff()
    assert out.raw == "all done"
    first, second, third = told(llm)
    assert first == "output of print key: [REDACTED]"
    assert second.startswith("Parallax denied `shell`: dangerous-rm-rf")
    assert third == "ran echo [REDACTED]"
    assert ran == ["print key", "echo [REDACTED]"]
    # What the tool returned reached the model redacted (the secret in the
    # model's own third call is its own text; the tool got it redacted).
    assert all(SECRET not in m["content"] for m in llm.seen[-1] if m.get("role") == "tool")


def test_guard_crew_covers_agents_tasks_and_is_idempotent(fw: Firewall) -> None:
    agent = Agent(role="ops", goal="g", backstory="b", llm=ScriptedLLM(model="scripted"), tools=[shell, Deploy()])
    task = Task(description="d", expected_output="e", agent=agent, tools=[lookup])
    crew = Crew(agents=[agent], tasks=[task])
    guard_crew(crew, fw)
    once = [*agent.tools, *(task.tools or [])]
    assert [t.name for t in once] == ["shell", "deploy", "lookup"]
    assert all(isinstance(t, ParallaxTool) for t in once)
    guard_crew(crew, fw)
    assert [*agent.tools, *(task.tools or [])] == once


# -- the embedded engine --------------------------------------------------


@pytest.fixture
def embedded_fw(tmp_path: Path) -> Firewall:
    try:
        from parallax_client import _engine  # noqa: F401
    except ImportError:
        if os.environ.get("CI") == "true":
            raise
        pytest.skip("parallax_client._engine is not built here (.ci/steps/48-crewai.sh copies it in)")
    shutil.copy(HERE / "fixtures" / "policy.yaml", tmp_path / "policy.yaml")
    config = (HERE / "fixtures" / "parallax.yaml").read_text()
    config = config.replace("path: approvals.db", f"path: {tmp_path / 'approvals.db'}")
    (tmp_path / "parallax.yaml").write_text(config)
    ran.clear()
    return Firewall.from_file(tmp_path / "parallax.yaml", approval_timeout=20)


def test_embedded_engine(embedded_fw: Firewall) -> None:
    fw = embedded_fw
    assert fw.embedded
    safe = guard_tool(shell, fw)
    assert safe.run(command="ls") == "ran ls"
    assert denied(safe.run(command="rm -rf /")).details["rule_ids"] == ["dangerous-rm-rf"]
    assert safe.run(command=f"echo {SECRET}") == "ran echo [REDACTED]"
    assert safe.run(command="print key") == "output of print key: [REDACTED]"

    def approve_when_held() -> None:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            for a in fw.sync.pending():
                fw.approve(a.id, by="alice")
                return
            time.sleep(0.02)

    t = threading.Thread(target=approve_when_held)
    t.start()
    assert safe.run(command="deploy prod cw-5") == "ran deploy prod cw-5"
    t.join()
    assert ran == ["ls", "echo [REDACTED]", "print key", "deploy prod cw-5"]


def test_mypy_strict() -> None:
    """The module is typed against the installed crewai (mypy --strict)."""
    import subprocess
    import sys

    module = HERE.parent / "parallax_client" / "integrations" / "crewai.py"
    run = subprocess.run(
        [
            sys.executable, "-m", "mypy", "--strict", "--python-version", "3.10",
            "--cache-dir", "/dev/null", str(module),
        ],
        cwd=HERE.parent,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert run.returncode == 0, run.stdout + run.stderr
