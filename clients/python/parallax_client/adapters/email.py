"""E-mail: an ``smtplib.SMTP`` (or ``SMTP_SSL``/``LMTP``) connection.

Governed: ``send_message(msg, from_addr=None, to_addrs=None)`` and
``sendmail(from_addr, to_addrs, msg)``, both as ``email.send``:
``recipient`` the envelope recipients (else the message's To, Cc and Bcc),
``subject`` the Subject, ``body`` the first ``text/plain`` part and
``metadata.from`` the sender. Every other method (``login``, ``quit``...)
passes through. A rewrite changes the subject and that text part; the
envelope recipients are never widened.
"""

from __future__ import annotations

import email
import email.policy
from email.message import EmailMessage, Message
from email.utils import getaddresses
from typing import Any

from ..adapter import Adapter, T
from ..toolcall import ToolCall


def _as_message(msg: Any) -> EmailMessage:
    if isinstance(msg, EmailMessage):
        return msg
    if isinstance(msg, Message):
        return email.message_from_bytes(msg.as_bytes(), policy=email.policy.default)
    raw = msg.encode("utf-8") if isinstance(msg, str) else bytes(msg)
    return email.message_from_bytes(raw, policy=email.policy.default)


def _text_part(msg: EmailMessage) -> EmailMessage | None:
    for part in msg.walk():
        if part.get_content_type() == "text/plain" and not part.is_multipart():
            return part
    return None


def _recipients(msg: EmailMessage, to_addrs: Any) -> list[str]:
    if isinstance(to_addrs, str):
        return [to_addrs]
    if to_addrs:
        return [str(a) for a in to_addrs]
    fields = [str(v) for k in ("To", "Cc", "Bcc") for v in msg.get_all(k, [])]
    return [addr for _, addr in getaddresses(fields) if addr]


class EmailAdapter(Adapter[T]):
    """``fw.wrap(EmailAdapter(smtplib.SMTP(host, port)))``."""

    name = "email"
    methods = frozenset({"send_message", "sendmail"})

    def normalise(self, method: str, kwargs: dict[str, Any]) -> ToolCall:
        msg = _as_message(kwargs.get("msg"))
        part = _text_part(msg)
        body = part.get_content() if part is not None else None
        sender = kwargs.get("from_addr") or msg.get("From")
        return ToolCall(
            adapter=self.name,
            action="send",
            recipient=_recipients(msg, kwargs.get("to_addrs")),
            subject=str(msg["Subject"]) if msg["Subject"] is not None else None,
            body=body.rstrip("\n") if isinstance(body, str) else None,
            metadata={"from": str(sender)} if sender else {},
            method=method,
            kwargs=kwargs,
        )

    def apply(self, call: ToolCall) -> dict[str, Any]:
        kwargs = dict(call.kwargs)
        original = self.normalise(call.sdk_method, kwargs)
        if (call.subject, call.body) == (original.subject, original.body):
            return kwargs
        msg = _as_message(kwargs.get("msg"))
        msg = email.message_from_bytes(msg.as_bytes(), policy=email.policy.default)  # a copy
        if call.subject != original.subject:
            del msg["Subject"]
            if call.subject is not None:
                msg["Subject"] = call.subject
        if call.body != original.body:
            part = _text_part(msg)
            if part is not None:
                part.set_content(call.body or "")
        if call.sdk_method == "sendmail":
            kwargs["msg"] = msg.as_bytes()
        else:
            kwargs["msg"] = msg
        return kwargs
