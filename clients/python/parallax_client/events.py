"""The events the client's ``check_*`` shortcuts send (docs/FIELDS.md)."""

from __future__ import annotations

from typing import Any, Mapping


def _with_common(
    event: dict[str, Any], session_id: str | None, metadata: Mapping[str, Any] | None
) -> dict[str, Any]:
    if session_id is not None:
        event["session_id"] = session_id
    if metadata is not None:
        event["metadata"] = dict(metadata)
    return event


def tool_event(
    name: str,
    args: Any,
    *,
    session_id: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A ``tool.before`` event: ``name`` about to run with ``args``."""
    return _with_common(
        {"stage": "tool.before", "tool_name": name, "tool_args": args}, session_id, metadata
    )


def message_event(
    text: str,
    *,
    session_id: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A ``message.before`` event: a user message before the model sees it."""
    return _with_common({"stage": "message.before", "message_text": text}, session_id, metadata)


def result_event(
    name: str,
    result: Any,
    *,
    args: Any = None,
    session_id: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A ``tool.after`` event: what ``name`` returned, before the model sees it."""
    event: dict[str, Any] = {"stage": "tool.after", "tool_name": name, "tool_result": result}
    if args is not None:
        event["tool_args"] = args
    return _with_common(event, session_id, metadata)
