"""The firewall: parlok's promise on top of Parallax. Wrap your tool SDK and
keep calling it as before; every governed call is asked about first.

- allowed calls go through unchanged;
- rewrites (``redact``) are applied to the real arguments before the call;
- approvals are waited for, up to ``approval_timeout`` seconds: first with
  ``POST /evaluate?wait=`` (whose answer, once approved, carries any
  rewrite), then, past the server's ``max_wait_seconds``, with
  ``GET /approvals/{id}?wait=``;
- denials raise :class:`~parallax_client.Denied` with the reason and rule ids,
  and the call never runs.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import time
from typing import Any, Callable, Mapping, TypeVar, Union, cast, overload

from ._calls import bind_arguments, invoke
from .adapter import Adapter
from .client import AsyncParallax, Parallax, twins
from .decision import Approval, Decision, Kind
from .embedded import AsyncEmbedded, Embedded
from .errors import ApprovalPending, Denied
from .toolcall import ToolCall

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

#: What a firewall asks: a server's client, or the engine in-process.
Client = Union[Parallax, AsyncParallax, Embedded, AsyncEmbedded]


def _as_sent(args: Mapping[str, Any]) -> dict[str, Any]:
    """``args`` as the server sees them (JSON; other values as ``repr``)."""
    sent: dict[str, Any] = json.loads(json.dumps(dict(args), default=repr))
    return sent


def _rewritten_args(args: dict[str, Any], decision: Decision) -> dict[str, Any]:
    """``args`` with the values a rewrite changed (only keys that exist)."""
    ev = decision.rewritten_event
    new = ev.get("tool_args") if ev else None
    if not isinstance(new, Mapping):
        return args
    sent = _as_sent(args)
    out = dict(args)
    for key, value in new.items():
        if key in out and value != sent.get(key):
            out[key] = value
    return out


def _approved(decision: Decision, approval: Approval) -> Decision:
    """The verdict once an approval polled with ``GET`` came back decided."""
    by = f" by {approval.decided_by}" if approval.decided_by else ""
    note = f"approval {approval.id}: {approval.status}{by}" + (
        f": {approval.comment}" if approval.comment else ""
    )
    if approval.outcome == "allow":
        return Decision(
            action="allow",
            reasons=[*decision.reasons, note],
            results=decision.results,
            approval=approval,
            raw=decision.raw,
        )
    return Decision(
        action="block",
        reasons=[*decision.reasons, note],
        results=decision.results,
        approval=approval,
        raw=decision.raw,
    )


class Firewall:
    """Policy enforcement for an agent's tools over a Parallax client.

    ``Firewall(Parallax(url))`` or ``Firewall(AsyncParallax(url))``: either
    serves both sync and async tools (a twin with the same settings is made
    for the other kind). ``approval_timeout`` is how long a held call waits
    for its human, in seconds (``0``: do not wait, raise
    :class:`~parallax_client.ApprovalPending` at once).
    """

    def __init__(
        self,
        client: Client,
        *,
        approval_timeout: float = 300.0,
        session_id: str | None = None,
    ) -> None:
        if approval_timeout < 0:
            raise ValueError(f"approval_timeout must be zero or more seconds, not {approval_timeout!r}")
        self.client = client
        self.sync, self.aio = twins(client)
        self.approval_timeout = float(approval_timeout)
        self.session_id = session_id if session_id is not None else client.session_id

    @classmethod
    def from_file(
        cls,
        path: str | os.PathLike[str],
        *,
        approval_timeout: float = 300.0,
        session_id: str | None = None,
    ) -> Firewall:
        """A firewall deciding in-process: ``path`` (a parlok policy file
        or a Parallax config) is compiled now by the embedded engine; no
        server is asked. A file that does not compile raises ``ValueError``."""
        return cls(Embedded(path, session_id=session_id), approval_timeout=approval_timeout)

    @property
    def embedded(self) -> bool:
        """Whether this firewall decides in-process (:meth:`from_file`)."""
        return isinstance(self.sync, Embedded)

    def _engine_client(self, verb: str) -> Embedded:
        if not isinstance(self.sync, Embedded):
            raise TypeError(
                f"{verb}: a firewall over a server decides approvals through the server "
                "(its approvals API, dashboard or Slack); this one is not embedded"
            )
        return self.sync

    def approve(self, approval_id: str, *, by: str = "python", comment: str | None = None) -> Approval:
        """Embedded mode: approves a held call (the waiting call goes ahead)."""
        return self._engine_client("approve").approve(approval_id, by=by, comment=comment)

    def deny(self, approval_id: str, *, by: str = "python", comment: str | None = None) -> Approval:
        """Embedded mode: denies a held call (the waiting call raises ``Denied``)."""
        return self._engine_client("deny").deny(approval_id, by=by, comment=comment)

    # -- deciding ---------------------------------------------------------

    def _final(self, decision: Decision, tool_name: str, call: ToolCall | None) -> Decision:
        if decision.kind is Kind.DENY:
            raise Denied.from_decision(decision, call=call, tool_name=tool_name)
        return decision

    def _pending(
        self, decision: Decision, approval: Approval, waited: float, tool_name: str, call: ToolCall | None
    ) -> ApprovalPending:
        return ApprovalPending(
            approval,
            waited,
            rule_ids=decision.rule_ids,
            decision=decision,
            call=call,
            tool_name=tool_name,
        )

    def _no_ticket(self, decision: Decision, tool_name: str, call: ToolCall | None) -> Denied:
        return Denied(
            "the verdict is approve but carries no approval to wait for "
            "(is `approvals:` configured on the server?)",
            rule_ids=decision.rule_ids,
            decision=decision,
            call=call,
            tool_name=tool_name,
        )

    def decide(self, event: Mapping[str, Any], *, call: ToolCall | None = None) -> Decision:
        """Asks about ``event`` and waits out an approval: returns an allow or
        rewrite verdict, or raises :class:`Denied` (or :class:`ApprovalPending`)."""
        tool_name = str(event.get("tool_name") or "")
        started = time.monotonic()
        decision = self.sync.evaluate(event, wait=self.approval_timeout or None)
        while decision.kind is Kind.APPROVE:
            if decision.approval is None:
                raise self._no_ticket(decision, tool_name, call)
            left = self.approval_timeout - (time.monotonic() - started)
            if left <= 0:
                raise self._pending(decision, decision.approval, time.monotonic() - started, tool_name, call)
            approval = self.sync.approval(decision.approval.id, wait=left)
            if not approval.pending:
                decision = _approved(decision, approval)
        return self._final(decision, tool_name, call)

    async def adecide(self, event: Mapping[str, Any], *, call: ToolCall | None = None) -> Decision:
        """:meth:`decide`, awaited."""
        tool_name = str(event.get("tool_name") or "")
        started = time.monotonic()
        decision = await self.aio.evaluate(event, wait=self.approval_timeout or None)
        while decision.kind is Kind.APPROVE:
            if decision.approval is None:
                raise self._no_ticket(decision, tool_name, call)
            left = self.approval_timeout - (time.monotonic() - started)
            if left <= 0:
                raise self._pending(decision, decision.approval, time.monotonic() - started, tool_name, call)
            approval = await self.aio.approval(decision.approval.id, wait=left)
            if not approval.pending:
                decision = _approved(decision, approval)
        return self._final(decision, tool_name, call)

    def enforce(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        """Checks tool ``name`` with ``args`` (waiting out an approval) and
        returns the arguments to run it with (rewritten where the verdict
        says); raises :class:`Denied` when it may not run."""
        return _rewritten_args(args, self.decide(self._tool_event(name, args)))

    async def aenforce(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        """:meth:`enforce`, awaited."""
        return _rewritten_args(args, await self.adecide(self._tool_event(name, args)))

    def _tool_event(self, name: str, args: Mapping[str, Any]) -> dict[str, Any]:
        event: dict[str, Any] = {"stage": "tool.before", "tool_name": name, "tool_args": _as_sent(args)}
        if self.session_id is not None:
            event["session_id"] = self.session_id
        return event

    def check(self, call: ToolCall) -> Decision:
        """The final verdict on an adapter's call (see :meth:`decide`)."""
        return self.decide(call.to_event(self.session_id), call=call)

    async def acheck(self, call: ToolCall) -> Decision:
        """:meth:`check`, awaited."""
        return await self.adecide(call.to_event(self.session_id), call=call)

    # -- wrapping SDKs ----------------------------------------------------

    def wrap(self, adapter: Adapter[T]) -> T:
        """The adapter's SDK object, guarded: same methods, same answers; the
        governed ones are checked first (typed as the SDK for your editor)."""
        return cast(T, Guarded(self, adapter))

    # -- plain tool functions ---------------------------------------------

    @overload
    def guard(self, func: F) -> F: ...

    @overload
    def guard(self, *, name: str | None = None) -> Callable[[F], F]: ...

    def guard(self, func: F | None = None, *, name: str | None = None) -> F | Callable[[F], F]:
        """Decorates a tool function (sync or async): each call is checked as
        tool ``name`` (default: the function's name) with its arguments by
        name as ``tool_args``; a rewrite replaces the arguments it changed."""

        def decorate(f: F) -> F:
            tool = name or f.__name__
            if inspect.iscoroutinefunction(f):

                @functools.wraps(f)
                async def guarded_async(*args: Any, **kwargs: Any) -> Any:
                    named = bind_arguments(f, args, kwargs)
                    return await invoke(f, await self.aenforce(tool, named))

                return cast(F, guarded_async)

            @functools.wraps(f)
            def guarded(*args: Any, **kwargs: Any) -> Any:
                named = bind_arguments(f, args, kwargs)
                return invoke(f, self.enforce(tool, named))

            return cast(F, guarded)

        return decorate(func) if func is not None else decorate


class Guarded:
    """What :meth:`Firewall.wrap` returns: attribute access goes to the SDK
    object; governed methods come back checked."""

    def __init__(self, firewall: Firewall, adapter: Adapter[Any]) -> None:
        object.__setattr__(self, "_firewall", firewall)
        object.__setattr__(self, "_adapter", adapter)

    def __getattr__(self, name: str) -> Any:
        adapter: Adapter[Any] = object.__getattribute__(self, "_adapter")
        attr = getattr(adapter.target, name)
        if not callable(attr) or not adapter.guards(name):
            return attr
        fw: Firewall = object.__getattribute__(self, "_firewall")
        if inspect.iscoroutinefunction(attr):

            @functools.wraps(attr)
            async def checked_async(*args: Any, **kwargs: Any) -> Any:
                call = adapter.normalise(name, bind_arguments(attr, args, kwargs))
                decision = await fw.acheck(call)
                result = adapter.execute(call, decision)
                return await result if inspect.isawaitable(result) else result

            return checked_async

        @functools.wraps(attr)
        def checked(*args: Any, **kwargs: Any) -> Any:
            call = adapter.normalise(name, bind_arguments(attr, args, kwargs))
            return adapter.execute(call, fw.check(call))

        return checked

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(object.__getattribute__(self, "_adapter").target, name, value)

    def __dir__(self) -> list[str]:
        return dir(object.__getattribute__(self, "_adapter").target)

    def __repr__(self) -> str:
        adapter = object.__getattribute__(self, "_adapter")
        return f"<guarded {adapter.target!r} via {type(adapter).__name__}>"
