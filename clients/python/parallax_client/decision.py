"""The server's answer to one event, typed.

``POST /evaluate`` answers with an ``action`` (``allow``, ``detect``,
``redact``, ``approve`` or ``block``), the reasons and the matched rules, the
rewritten event for a redaction, and the pending approval for ``approve``
(the JSON is described in the server's README and docs/APPROVALS.md). The
firewall thinks in parlok's four kinds instead; :attr:`Decision.kind` maps
one to the other.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence, TypeVar

from .errors import ProtocolError

T = TypeVar("T")

ACTIONS = ("allow", "detect", "redact", "approve", "block")


class Kind(str, enum.Enum):
    """parlok's decision kinds."""

    ALLOW = "allow"
    """Run the call as asked (Parallax ``allow`` or ``detect``)."""
    REWRITE = "rewrite"
    """Run the call with the rewritten arguments (Parallax ``redact``)."""
    APPROVE = "approve"
    """Hold the call until a human decides (Parallax ``approve``)."""
    DENY = "deny"
    """Refuse the call (Parallax ``block``)."""


@dataclass(frozen=True)
class RuleResult:
    """One rule that matched the event."""

    rule_id: str
    action: str
    reason: str
    evaluator: str = ""
    title: str = ""
    priority: str = ""
    match: str | None = None

    @classmethod
    def from_json(cls, v: Mapping[str, Any]) -> RuleResult:
        return cls(
            rule_id=str(v.get("rule_id", "")),
            action=str(v.get("action", "")),
            reason=str(v.get("reason", "")),
            evaluator=str(v.get("evaluator", "")),
            title=str(v.get("title", "")),
            priority=str(v.get("priority", "")),
            match=v.get("match") if isinstance(v.get("match"), str) else None,
        )


@dataclass(frozen=True)
class Approval:
    """A human approval, pending or decided (docs/APPROVALS.md)."""

    id: str
    status: str
    """``pending``, ``approved``, ``denied`` or ``expired``."""
    reason: str = ""
    rule_id: str | None = None
    rule_ids: list[str] = field(default_factory=list)
    approvers: list[str] = field(default_factory=list)
    expires_at: str | None = None
    on_timeout: str | None = None
    outcome: str | None = None
    """Once decided: ``allow`` or ``deny``."""
    decided_by: str | None = None
    comment: str | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def pending(self) -> bool:
        return self.status == "pending"

    @classmethod
    def from_json(cls, v: Any) -> Approval:
        if not isinstance(v, Mapping) or not isinstance(v.get("id"), str):
            raise ProtocolError(f"an approval must be an object with an `id`, not {v!r:.200}")
        return cls(
            id=v["id"],
            status=str(v.get("status", "")),
            reason=str(v.get("reason") or ""),
            rule_id=v.get("rule_id"),
            rule_ids=[str(r) for r in v.get("rule_ids") or []],
            approvers=[str(a) for a in v.get("approvers") or []],
            expires_at=v.get("expires_at"),
            on_timeout=v.get("on_timeout"),
            outcome=v.get("outcome"),
            decided_by=v.get("decided_by"),
            comment=v.get("comment"),
            raw=dict(v),
        )


@dataclass(frozen=True)
class Decision:
    """The verdict on one event."""

    action: str
    """Parallax's action: ``allow``, ``detect``, ``redact``, ``approve`` or ``block``."""
    reasons: list[str] = field(default_factory=list)
    """One ``"<rule_id>: <reason>"`` per matching rule (and the approval's outcome)."""
    results: list[RuleResult] = field(default_factory=list)
    rewritten_event: dict[str, Any] | None = None
    """For ``redact``: the event as it may go on (``rewritten_event``, else ``redacted_event``)."""
    approval: Approval | None = None
    elapsed_ms: float = 0.0
    drop_documents: list[int] = field(default_factory=list)
    """``retrieval.after``: the indices of the documents to leave out (the
    rest go on; :meth:`kept` applies it)."""
    failure: Mapping[str, Any] | None = None
    """Set when the server could not evaluate and its ``fail_mode`` decided
    (or, with ``fail_closed=False``, when the server was unreachable)."""
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def kind(self) -> Kind:
        """The parlok kind of this verdict."""
        if self.action == "block":
            return Kind.DENY
        if self.action == "approve":
            return Kind.APPROVE
        if self.action == "redact":
            return Kind.REWRITE
        return Kind.ALLOW

    @property
    def blocked(self) -> bool:
        return self.action == "block"

    @property
    def allowed(self) -> bool:
        """Whether the call may run as asked, unchanged and without waiting."""
        return self.kind is Kind.ALLOW

    @property
    def rule_ids(self) -> list[str]:
        """The ids of the rules that matched, in chain order."""
        ids = [r.rule_id for r in self.results]
        if self.approval is not None:
            ids += [r for r in self.approval.rule_ids if r not in ids]
        return ids

    @property
    def reason(self) -> str:
        """The reason to show: the first rule whose action is the verdict's
        (``"<rule_id>: <reason>"``). A block no rule gave (a denied or
        expired approval) shows the last reason, which names the approval,
        who decided and their comment."""
        for r in self.results:
            if r.action == self.action and r.reason:
                return f"{r.rule_id}: {r.reason}"
        if not self.reasons:
            return ""
        return self.reasons[-1] if self.action == "block" else self.reasons[0]

    def kept(self, documents: Sequence[T]) -> list[T]:
        """``documents`` (as sent for ``retrieval.after``) without the ones
        :attr:`drop_documents` names, in their order."""
        dropped = set(self.drop_documents)
        return [d for i, d in enumerate(documents) if i not in dropped]

    def kept_texts(self) -> list[str] | None:
        """The text of each kept document as it may go on (redacted where a
        rule rewrote it), in order; ``None`` when nothing was rewritten or
        dropped."""
        if self.rewritten_event is None:
            return None
        docs = self.rewritten_event.get("documents")
        if not isinstance(docs, list):
            return None
        return [str(d.get("text", "")) if isinstance(d, Mapping) else "" for d in docs]

    @classmethod
    def from_json(cls, v: Any) -> Decision:
        """Reads ``POST /evaluate``'s answer; :class:`ProtocolError` when it is not one."""
        if not isinstance(v, Mapping):
            raise ProtocolError(f"the verdict must be a JSON object, not {v!r:.200}")
        action = v.get("action")
        if action not in ACTIONS:
            raise ProtocolError(f"the verdict's `action` must be one of {ACTIONS}, not {action!r}")
        results = v.get("results") or []
        if not isinstance(results, list):
            raise ProtocolError("the verdict's `results` must be a list")
        rewritten = v.get("rewritten_event") or v.get("redacted_event")
        approval = v.get("approval")
        dropped = v.get("drop_documents") or []
        if not isinstance(dropped, list) or not all(isinstance(i, int) and i >= 0 for i in dropped):
            raise ProtocolError("the verdict's `drop_documents` must be a list of document indices")
        return cls(
            action=action,
            reasons=[str(r) for r in v.get("reasons") or []],
            results=[RuleResult.from_json(r) for r in results if isinstance(r, Mapping)],
            rewritten_event=dict(rewritten) if isinstance(rewritten, Mapping) else None,
            approval=Approval.from_json(approval) if approval is not None else None,
            elapsed_ms=float(v.get("elapsed_ms") or 0.0),
            drop_documents=list(dropped),
            failure=v.get("failure"),
            raw=dict(v),
        )
