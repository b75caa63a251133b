"""Slack: a ``slack_sdk`` ``WebClient`` (or ``AsyncWebClient``).

Governed: the methods that post or change a message
(``chat_postMessage``, ``chat_postEphemeral``, ``chat_scheduleMessage``,
``chat_update``, ``chat_meMessage``) and ``files_upload_v2`` (its
``initial_comment`` and text ``content``); every other method passes
through. A call is ``slack.<method>`` with ``recipient`` the channel,
``body`` the text (with the text of ``blocks`` when there are any) and
``metadata`` the thread, user and schedule.

A rewrite replaces ``text``. A message built from ``blocks`` whose text was
rewritten is sent as the rewritten plain text without its blocks, so what
a policy took out cannot stay in a block.
"""

from __future__ import annotations

from typing import Any, cast

from ..adapter import Adapter, T
from ..toolcall import ToolCall

MESSAGE_METHODS = frozenset(
    {"chat_postMessage", "chat_postEphemeral", "chat_scheduleMessage", "chat_update", "chat_meMessage"}
)


def _block_texts(value: Any) -> list[str]:
    """Every ``text`` string inside Block Kit JSON (or its model objects)."""
    if hasattr(value, "to_dict"):
        value = value.to_dict()
    found: list[str] = []
    if isinstance(value, dict):
        for key, v in value.items():
            if key == "text" and isinstance(v, str):
                found.append(v)
            else:
                found += _block_texts(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            found += _block_texts(v)
    return found


class SlackAdapter(Adapter[T]):
    """``fw.wrap(SlackAdapter(WebClient(token=...)))``, or, as parlok
    writes it, ``SlackAdapter(token=...)``: an ``AsyncWebClient`` with that
    token (``base_url`` for another Slack API address) is made for you."""

    name = "slack"
    methods = MESSAGE_METHODS | {"files_upload_v2"}

    def __init__(self, target: T | None = None, *, token: str | None = None, base_url: str | None = None) -> None:
        if target is None:
            if token is None:
                raise TypeError("SlackAdapter needs a slack_sdk client or token=...")
            from slack_sdk.web.async_client import AsyncWebClient

            kw: dict[str, Any] = {"token": token}
            if base_url is not None:
                kw["base_url"] = base_url
            target = cast(T, AsyncWebClient(**kw))
        elif token is not None or base_url is not None:
            raise TypeError("give SlackAdapter a client or token=..., not both")
        super().__init__(target)

    def normalise(self, method: str, kwargs: dict[str, Any]) -> ToolCall:
        if method == "files_upload_v2":
            content = kwargs.get("content")
            parts = [kwargs.get("initial_comment"), content if isinstance(content, str) else None]
            body = "\n".join(p for p in parts if p)
            meta = {k: kwargs[k] for k in ("filename", "title", "thread_ts") if kwargs.get(k)}
        else:
            texts = [kwargs["text"]] if isinstance(kwargs.get("text"), str) else []
            blocks = kwargs.get("blocks")
            if isinstance(blocks, str):
                texts.append(blocks)
            elif blocks:
                texts += _block_texts(blocks)
            texts += _block_texts(kwargs.get("attachments") or [])
            body = "\n".join(texts)
            meta = {
                k: kwargs[k] for k in ("thread_ts", "user", "post_at", "ts") if kwargs.get(k) is not None
            }
            if blocks:
                meta["blocks"] = True
        return ToolCall(
            adapter=self.name,
            action=method,
            recipient=kwargs.get("channel") or kwargs.get("channel_id") or kwargs.get("channels"),
            body=body or None,
            metadata=meta,
            kwargs=kwargs,
        )

    def apply(self, call: ToolCall) -> dict[str, Any]:
        kwargs = dict(call.kwargs)
        original = self.normalise(call.sdk_method, kwargs)
        if call.body == original.body:
            return kwargs
        if call.sdk_method == "files_upload_v2":
            # The comment and the content were sent as one body: the rewrite
            # goes into the comment and a text content is dropped.
            kwargs["initial_comment"] = call.body
            if isinstance(kwargs.get("content"), str):
                kwargs["content"] = call.body
                kwargs.pop("initial_comment", None)
            return kwargs
        kwargs["text"] = call.body
        kwargs.pop("blocks", None)
        kwargs.pop("attachments", None)
        return kwargs
