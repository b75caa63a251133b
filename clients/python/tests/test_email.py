"""The e-mail adapter on a real smtplib.SMTP connection to a fake SMTP
server on 127.0.0.1."""

from __future__ import annotations

import smtplib
from collections.abc import Iterator
from email.message import EmailMessage

import pytest

from conftest import AGENT_TOKEN, Server
from fakes import SmtpRecorder
from parallax_client import Denied, Firewall, Parallax
from parallax_client.adapters.email import EmailAdapter


@pytest.fixture
def mailer(server: Server, smtp: SmtpRecorder) -> Iterator[smtplib.SMTP]:
    fw = Firewall(Parallax(server.url, token=AGENT_TOKEN, timeout=10))
    conn = smtplib.SMTP("127.0.0.1", smtp.port, timeout=10)
    yield fw.wrap(EmailAdapter(conn))
    conn.quit()


def message(to: str, subject: str, body: str) -> EmailMessage:
    msg = EmailMessage()
    msg["From"] = "agent@northwind.test"
    msg["To"] = to
    msg["Subject"] = subject
    msg.set_content(body)
    return msg


def test_internal_mail_goes_unchanged(mailer: smtplib.SMTP, smtp: SmtpRecorder) -> None:
    mailer.send_message(message("ana@northwind.test", "Lunch", "See https://menu.test at noon"))
    (mail,) = smtp.mails
    assert mail.recipients == ["ana@northwind.test"]
    assert mail.message().get_content().strip() == "See https://menu.test at noon"


def test_partner_mail_is_rewritten(mailer: smtplib.SMTP, smtp: SmtpRecorder) -> None:
    mailer.send_message(message("bob@partner.test", "Offer", "Details at https://files.test/x"))
    (mail,) = smtp.mails
    assert mail.recipients == ["bob@partner.test"]
    assert mail.message()["Subject"] == "Offer"
    assert mail.message().get_content().strip() == "Details at [URL]"


def test_sendmail_with_raw_bytes_is_rewritten(mailer: smtplib.SMTP, smtp: SmtpRecorder) -> None:
    raw = message("bob@partner.test", "Raw", "go to http://x.test now").as_bytes()
    mailer.sendmail("agent@northwind.test", ["bob@partner.test"], raw)
    (mail,) = smtp.mails
    assert mail.sender == "agent@northwind.test"
    assert mail.message().get_content().strip() == "go to [URL] now"


def test_credentials_are_denied_and_never_sent(mailer: smtplib.SMTP, smtp: SmtpRecorder) -> None:
    with pytest.raises(Denied) as e:
        mailer.send_message(message("eve@elsewhere.test", "Access", "password: hunter2"))
    assert e.value.rule_ids == ["policy.no-credentials"]
    assert e.value.call is not None and e.value.call.tool_name == "email.send"
    assert smtp.mails == []


def test_bulk_mail_outside_is_denied_by_default(mailer: smtplib.SMTP, smtp: SmtpRecorder) -> None:
    to = ", ".join(f"p{i}@partner.test" for i in range(4))
    with pytest.raises(Denied) as e:
        mailer.send_message(message(to, "News", "hello"))
    assert e.value.rule_ids == ["policy.default"]
    assert smtp.mails == []


def test_other_smtp_methods_pass_through(mailer: smtplib.SMTP) -> None:
    assert mailer.noop()[0] == 250
