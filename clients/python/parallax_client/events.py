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


def memory_event(
    text: str,
    *,
    key: str | None = None,
    session_id: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A ``memory.before`` event: ``text`` about to be written to the
    agent's memory (under ``key``, if it has one)."""
    event: dict[str, Any] = {"stage": "memory.before", "memory_text": text}
    if key is not None:
        event["memory_key"] = key
    return _with_common(event, session_id, metadata)


def document(doc: Any) -> dict[str, Any]:
    """One retrieved document as the event carries it: a string is its
    text; a mapping keeps ``text``, ``source``, ``score``, ``id`` and
    ``metadata``; an object with ``page_content`` (a LangChain
    ``Document``) gives its text and metadata (``source`` from it)."""
    if isinstance(doc, str):
        return {"text": doc}
    if isinstance(doc, Mapping):
        return {k: doc[k] for k in ("text", "source", "score", "id", "metadata") if k in doc}
    text = getattr(doc, "page_content", None)
    if not isinstance(text, str):
        raise TypeError(f"a document is a string, a mapping with 'text' or has page_content, not {type(doc).__name__}")
    out: dict[str, Any] = {"text": text}
    meta = getattr(doc, "metadata", None)
    if isinstance(meta, Mapping):
        if isinstance(meta.get("source"), str):
            out["source"] = meta["source"]
        out["metadata"] = dict(meta)
    doc_id = getattr(doc, "id", None)
    if isinstance(doc_id, (str, int)):
        out["id"] = doc_id
    return out


def retrieval_event(
    query: str | None,
    documents: Any = None,
    *,
    session_id: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """``retrieval.before`` (a query about to be sent) when ``documents``
    is ``None``, else ``retrieval.after`` (what the query brought back;
    each document as :func:`document` makes it)."""
    event: dict[str, Any] = {"stage": "retrieval.before" if documents is None else "retrieval.after"}
    if query is not None:
        event["query"] = query
    if documents is not None:
        event["documents"] = [document(d) for d in documents]
    return _with_common(event, session_id, metadata)
