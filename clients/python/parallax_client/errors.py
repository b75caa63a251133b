"""The errors the client raises.

Everything derives from :class:`ParallaxError`. A call the firewall refused
raises :class:`Denied` (carrying the reason and the rule ids), and so does a
call that could not be checked because the server is unreachable
(:class:`ServerUnreachable`, when failing closed) or whose approval never
came (:class:`ApprovalPending`): in each case the call did not run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .decision import Approval, Decision
    from .toolcall import ToolCall


class ParallaxError(Exception):
    """Base class of every error of this package."""


class ApiError(ParallaxError):
    """The server answered with an error (a 4xx or 5xx and its JSON body).

    ``code`` is the server's error code (``invalid_event``, ``unauthorized``,
    ...), ``message`` its explanation.
    """

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"Parallax answered {status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message


class ProtocolError(ParallaxError):
    """The server's answer is not what a Parallax server sends."""


class Denied(ParallaxError):
    """The call was refused and did not run.

    ``reason`` says why (the first reason the server gave), ``reasons`` all of
    them, ``rule_ids`` the rules that decided, ``decision`` the full
    :class:`~parallax_client.Decision` (``None`` when there is none, for
    example when the server could not be reached) and ``call`` the refused
    call when it came through an adapter or a guard.
    """

    def __init__(
        self,
        reason: str,
        *,
        rule_ids: list[str] | None = None,
        reasons: list[str] | None = None,
        decision: Decision | None = None,
        call: ToolCall | None = None,
        tool_name: str | None = None,
    ) -> None:
        self.reason = reason
        self.rule_ids = list(rule_ids or [])
        self.reasons = list(reasons or [reason])
        self.decision = decision
        self.call = call
        self.tool_name = tool_name or (call.tool_name if call is not None else None)
        what = f" `{self.tool_name}`" if self.tool_name else ""
        rules = f" (rules: {', '.join(self.rule_ids)})" if self.rule_ids else ""
        super().__init__(f"Parallax denied{what}: {reason}{rules}")

    @classmethod
    def from_decision(
        cls, decision: Decision, *, call: ToolCall | None = None, tool_name: str | None = None
    ) -> Denied:
        """The denial a ``block`` decision stands for."""
        reason = decision.reason or f"the verdict was {decision.action}"
        return cls(
            reason,
            rule_ids=decision.rule_ids,
            reasons=decision.reasons,
            decision=decision,
            call=call,
            tool_name=tool_name,
        )


class ApprovalPending(Denied):
    """The call waits for a human approval that did not come in time.

    The approval may still be decided later; this call did not run. ``approval``
    is the pending :class:`~parallax_client.Approval`.
    """

    def __init__(self, approval: Approval, waited: float, **kw: Any) -> None:
        self.approval = approval
        self.waited = waited
        super().__init__(
            f"approval {approval.id} is still pending after {waited:.0f} s "
            f"({approval.reason or 'held for a human'}); ask an approver to decide it "
            f"(POST /approvals/{approval.id}/approve) and call again",
            **kw,
        )


class ServerUnreachable(Denied):
    """The server could not be asked, and the client fails closed.

    The message says how to start it. Pass ``fail_closed=False`` to the
    client to let calls through (with a warning) instead.
    """

    def __init__(self, url: str, cause: BaseException | str) -> None:
        self.url = url
        self.cause = cause
        super().__init__(
            f"Parallax is not reachable at {url} ({cause}); the call was refused "
            f"(fail-closed). Start the server with `parallax serve` (it listens on "
            f"127.0.0.1:9920 by default; `parallax serve -c parallax.yaml --port N` for "
            f"another config or port), or pass fail_closed=False to let calls through "
            f"while it is down"
        )
