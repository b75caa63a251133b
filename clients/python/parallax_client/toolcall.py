"""parlok's tool call: what an adapter makes of one SDK call.

A :class:`ToolCall` is sent as an ordinary ``tool.before`` event, the shape
docs/FIELDS.md and docs/POLICIES.md describe: ``tool_name`` is
``<adapter>.<action>`` and ``tool_args`` holds ``recipient``, ``body``,
``subject`` and ``metadata``. The SDK call's own arguments stay in the
client (``method``, ``kwargs``) so the adapter can run it after the verdict.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Mapping

Recipient = str | list[str] | None


@dataclass(frozen=True)
class ToolCall:
    """One call of a policy-governed tool."""

    adapter: str
    """The adapter's name, the part of ``tool_name`` before the dot (``slack``)."""
    action: str
    """What the call does, after the dot (``chat_postMessage``, ``send``)."""
    recipient: Recipient = None
    """Who receives it: a channel, addresses (a list, or one string), a URL."""
    body: str | None = None
    subject: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    """Anything else a policy may read (``metadata.<key>``). Never secrets."""
    method: str | None = None
    """The SDK method the call runs (defaults to ``action``); not sent."""
    kwargs: dict[str, Any] = field(default_factory=dict, repr=False)
    """The SDK call's arguments by name, as the caller gave them; not sent."""

    @property
    def tool_name(self) -> str:
        return f"{self.adapter}.{self.action}"

    @property
    def sdk_method(self) -> str:
        return self.method or self.action

    def tool_args(self) -> dict[str, Any]:
        return {
            "recipient": self.recipient,
            "subject": self.subject,
            "body": self.body,
            "metadata": dict(self.metadata),
        }

    def to_event(self, session_id: str | None = None) -> dict[str, Any]:
        """The ``tool.before`` event for this call."""
        event: dict[str, Any] = {
            "stage": "tool.before",
            "tool_name": self.tool_name,
            "tool_args": self.tool_args(),
        }
        if session_id is not None:
            event["session_id"] = session_id
        return event

    def rewritten(self, event: Mapping[str, Any] | None) -> ToolCall:
        """This call with the fields a rewritten event changed (``recipient``,
        ``subject``, ``body``, ``metadata``); itself when there is nothing."""
        if not event:
            return self
        args = event.get("tool_args")
        if not isinstance(args, Mapping):
            return self
        changes: dict[str, Any] = {}
        for key in ("recipient", "subject", "body"):
            if key in args and args[key] != getattr(self, key):
                changes[key] = args[key]
        if isinstance(args.get("metadata"), Mapping) and dict(args["metadata"]) != self.metadata:
            changes["metadata"] = dict(args["metadata"])
        return dataclasses.replace(self, **changes) if changes else self
