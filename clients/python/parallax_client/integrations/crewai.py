"""CrewAI: a tool wrapper that asks Parallax before each run and checks
what the tool returns before the agent sees it.

    from parallax_client.integrations.crewai import guard_tool, guard_crew

    safe = guard_tool(my_tool, fw)   # a crewai BaseTool: same name, description, schemas
    guard_crew(crew, fw)             # or every tool of a Crew's agents and tasks, in place

The wrapper is a ``crewai.tools.BaseTool`` whose ``_run``/``_arun`` do the
checking, so every way CrewAI runs a tool goes through it: ``tool.run(...)``,
native function calling (which calls ``run``), and the ReAct path's
``CrewStructuredTool`` (built from ``_run``). Each call is sent as
``tool.before`` (tool ``<tool.name>``, its validated arguments as
``tool_args``) and:

- **allow**: the wrapped tool runs as given;
- **redact** (rewrite): it runs with the arguments the policies rewrote;
- **approve**: the call waits for the human, per the firewall's
  ``approval_timeout`` (see :meth:`~parallax_client.Firewall.decide`);
- **block**, a denied or expired approval, or a server that cannot be
  reached (fail-closed): the tool does not run and the call returns a
  ``crewai.tools.tool_failure.ToolFailure`` whose message is the denial
  ("Parallax denied `shell`: <reason> (rules: ...)"). That is CrewAI's own
  way for a tool to say it did not do what was asked: the agent reads the
  message and carries on, the failure is recorded on the task's output and
  its event bus, and an agent/task/crew with ``tool_failure_policy="raise"``
  stops instead. ``on_deny="raise"`` raises :class:`~parallax_client.Denied`
  (CrewAI then reports "Error executing tool: ..." and may retry the call).

The result goes through ``tool.after``: a redaction replaces it with the
redacted result (as text when the tool returned text), a block
withholds it (a ``ToolFailure`` again, "Parallax withheld the result ...").
"""

from __future__ import annotations

import asyncio
import inspect
import json
from typing import Any, Iterable, Literal, TypeVar

from crewai import Crew
from crewai.agents.agent_builder.base_agent import BaseAgent
from crewai.tools import BaseTool
from crewai.tools.base_tool import Tool, _default_cache_function
from crewai.tools.tool_failure import ToolFailure, ToolFailureReason
from pydantic import BaseModel, PrivateAttr

from ..decision import Decision, Kind
from ..errors import ApprovalPending, Denied, ServerUnreachable
from ..firewall import Firewall

OnDeny = Literal["failure", "raise"]
A = TypeVar("A", bound=BaseAgent)

__all__ = [
    "OnDeny",
    "ParallaxTool",
    "cache_unless_refused",
    "guard_agent",
    "guard_crew",
    "guard_tool",
    "guard_tools",
]


def _code(e: Denied) -> str:
    if isinstance(e, ApprovalPending):
        return "parallax_approval_pending"
    if isinstance(e, ServerUnreachable):
        return "parallax_unreachable"
    return "parallax_denied"


def _failure(e: Denied, message: str, code: str) -> ToolFailure:
    """The ``ToolFailure`` a refusal stands for: ``message`` is what the
    agent reads (the reason and the rules; for an unreachable server, how
    to start it), ``details`` the rule ids and reasons."""
    return ToolFailure(
        message=message,
        reason=ToolFailureReason.TOOL_REPORTED,
        code=code,
        # A held call may be approved meanwhile, a server come back.
        retryable=isinstance(e, (ApprovalPending, ServerUnreachable)),
        details={"rule_ids": e.rule_ids, "reasons": e.reasons},
    )


def _rules(e: Denied) -> str:
    return f" (rules: {', '.join(e.rule_ids)})" if e.rule_ids else ""


def _as_result(value: Any) -> Any:
    """A tool's result as ``tool.after`` sends it (pydantic models as JSON)."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    return value


def cache_unless_refused(args: Any = None, result: Any = None) -> bool:
    """The ``cache_function`` of a guarded tool whose own is CrewAI's
    default (cache everything): everything but a refusal, so a call held for
    an approval, or refused while the server was down, is asked about again
    rather than answered from CrewAI's tool cache."""
    return not isinstance(result, ToolFailure)


class ParallaxTool(BaseTool):
    """A CrewAI tool checked by Parallax: made by :func:`guard_tool`, it
    has the wrapped tool's name, description, argument and result schemas,
    ``result_as_answer`` and failure policy; ``wrapped`` is the tool itself."""

    _wrapped: BaseTool = PrivateAttr()
    _firewall: Firewall = PrivateAttr()
    _on_deny: OnDeny = PrivateAttr(default="failure")
    _check_results: bool = PrivateAttr(default=True)

    @property
    def wrapped(self) -> BaseTool:
        """The tool this one guards."""
        return self._wrapped

    @property
    def firewall(self) -> Firewall:
        """The firewall that decides its calls."""
        return self._firewall

    # -- the checks -------------------------------------------------------

    def _named(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        """Positional arguments (``tool.run("ls")``) named by the schema."""
        if not args:
            return dict(kwargs)
        names = list(self.args_schema.model_fields)
        if len(args) > len(names):
            raise TypeError(f"{self.name} takes {len(names)} arguments ({', '.join(names)}), not {len(args)}")
        return {**dict(zip(names, args)), **kwargs}

    def _refused(self, e: Denied) -> ToolFailure:
        """A call that may not run: a ``ToolFailure`` for the agent, or ``e``
        raised (``on_deny="raise"``)."""
        if self._on_deny == "raise":
            raise e
        message = f"Parallax denied `{self.name}`: {e.reason}{_rules(e)}; the tool did not run"
        return _failure(e, message, _code(e))

    def _withheld(self, e: Denied) -> ToolFailure:
        """A result the agent may not see (blocked on ``tool.after``, or not
        checked because the server went away after the call was allowed)."""
        if self._on_deny == "raise":
            raise e
        message = f"Parallax withheld the result of `{self.name}`: {e.reason}{_rules(e)}"
        code = "parallax_unreachable" if isinstance(e, ServerUnreachable) else "parallax_withheld"
        return _failure(e, message, code)

    def _judged(self, result: Any, decision: Decision) -> Any:
        """``result`` as ``decision`` (on ``tool.after``) lets the agent see it."""
        if decision.kind is Kind.DENY:
            return self._withheld(Denied.from_decision(decision, tool_name=self.name))
        rewritten = decision.rewritten_event
        if decision.kind is Kind.REWRITE and rewritten and "tool_result" in rewritten:
            redacted = rewritten["tool_result"]
            if isinstance(result, str) and not isinstance(redacted, str):
                return json.dumps(redacted, ensure_ascii=False)
            return redacted
        return result

    def _after(self, result: Any) -> Any:
        if not self._check_results or isinstance(result, ToolFailure):
            return result
        fw = self._firewall
        try:
            decision = fw.sync.check_result(self.name, _as_result(result), session_id=fw.session_id)
        except Denied as e:
            return self._withheld(e)
        return self._judged(result, decision)

    async def _aafter(self, result: Any) -> Any:
        if not self._check_results or isinstance(result, ToolFailure):
            return result
        fw = self._firewall
        try:
            decision = await fw.aio.check_result(self.name, _as_result(result), session_id=fw.session_id)
        except Denied as e:
            return self._withheld(e)
        return self._judged(result, decision)

    # -- BaseTool ---------------------------------------------------------

    def _run(self, *args: Any, **kwargs: Any) -> Any:
        named = self._named(args, kwargs)
        try:
            allowed = self._firewall.enforce(self.name, named)
        except Denied as e:
            return self._refused(e)
        # The wrapped tool's own run: its validation, its usage limit, its
        # coroutine handling.
        return self._after(self._wrapped.run(**allowed))

    async def _arun(self, *args: Any, **kwargs: Any) -> Any:
        named = self._named(args, kwargs)
        try:
            allowed = await self._firewall.aenforce(self.name, named)
        except Denied as e:
            return self._refused(e)
        if _has_async(self._wrapped):
            result = await self._wrapped.arun(**allowed)
        else:
            result = await asyncio.to_thread(self._wrapped.run, **allowed)
        return await self._aafter(result)


def _has_async(tool: BaseTool) -> bool:
    """Whether ``tool.arun`` runs it (else it is run on a thread)."""
    if isinstance(tool, Tool):
        return inspect.iscoroutinefunction(tool.func)
    return type(tool)._arun is not BaseTool._arun


def guard_tool(
    tool: BaseTool,
    firewall: Firewall,
    *,
    on_deny: OnDeny = "failure",
    check_results: bool = True,
) -> ParallaxTool:
    """``tool`` (a ``BaseTool``, or a ``@tool`` function), checked by
    ``firewall`` on every call. ``check_results=False`` skips ``tool.after``.
    A tool already guarded is returned as it is."""
    if isinstance(tool, ParallaxTool):
        return tool
    if not isinstance(tool, BaseTool):
        raise TypeError(
            f"guard_tool takes a crewai BaseTool (or a @tool function), not {type(tool).__name__}"
        )
    guarded = ParallaxTool(
        name=tool.name,
        description=tool.description,
        env_vars=tool.env_vars,
        args_schema=tool.args_schema,
        result_schema=tool.result_schema,
        result_as_answer=tool.result_as_answer,
        tool_failure_policy=tool.tool_failure_policy,
        cache_function=(
            cache_unless_refused if tool.cache_function is _default_cache_function else tool.cache_function
        ),
        # The usage limit stays the wrapped tool's: it counts the calls
        # that ran, not the ones refused.
        max_usage_count=None,
    )
    guarded._wrapped = tool
    guarded._firewall = firewall
    guarded._on_deny = on_deny
    guarded._check_results = check_results
    return guarded


def guard_tools(
    tools: Iterable[BaseTool],
    firewall: Firewall,
    *,
    on_deny: OnDeny = "failure",
    check_results: bool = True,
) -> list[BaseTool]:
    """:func:`guard_tool` on each of ``tools``."""
    return [guard_tool(t, firewall, on_deny=on_deny, check_results=check_results) for t in tools]


def guard_agent(
    agent: A,
    firewall: Firewall,
    *,
    on_deny: OnDeny = "failure",
    check_results: bool = True,
) -> A:
    """Guards a ``crewai.Agent``'s tools in place (``agent.tools``), before
    it runs; returns the agent."""
    if agent.tools:
        agent.tools = guard_tools(agent.tools, firewall, on_deny=on_deny, check_results=check_results)
    return agent


def guard_crew(
    crew: Crew,
    firewall: Firewall,
    *,
    on_deny: OnDeny = "failure",
    check_results: bool = True,
) -> Crew:
    """Guards every tool of a ``crewai.Crew`` in place, before ``kickoff``:
    each agent's (the manager's too), and each task's own ``tools``; returns
    the crew. Tools CrewAI adds while it runs (delegation to coworkers) are
    not tools of yours and are not wrapped."""
    agents: list[BaseAgent] = list(crew.agents or [])
    if crew.manager_agent is not None:
        agents.append(crew.manager_agent)
    for agent in agents:
        guard_agent(agent, firewall, on_deny=on_deny, check_results=check_results)
    for task in crew.tasks or []:
        if task.tools:
            task.tools = guard_tools(task.tools, firewall, on_deny=on_deny, check_results=check_results)
    return crew
