"""The engine in-process (``Firewall.from_file``): parlok's three lines with
no server to run, against parlok's own example file byte for byte, fake
Slack and SMTP services on 127.0.0.1, and a real DB-API cursor (sqlite3).
Then the CLI (``python -m parallax_client lint|test``), approvals decided
in-process, and bad input."""

from __future__ import annotations

import asyncio
import email.message
import json
import os
import shutil
import smtplib
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import REPO
from fakes import HttpRecorder, SmtpRecorder
from parallax_client import ApiError, ApprovalPending, Denied, Embedded, Firewall
from parallax_client.adapters.dbapi import SqlAdapter
from parallax_client.adapters.email import EmailAdapter
from parallax_client.adapters.slack import SlackAdapter

SEED = REPO / "tests" / "fixtures" / "parlok" / "firewall.yaml"
SEED_SHA256 = "cd0eb22977e4817de41f3b56d9c9345f6ea2b13ede6e9b60b87acab9808db355"


def listening_ports() -> set[int]:
    """The TCP ports this machine listens on (IPv4 and IPv6)."""
    ports: set[int] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "0A":  # LISTEN
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


@pytest.fixture
def firewall_yaml(tmp_path: Path) -> Path:
    """parlok's example file, as a user would have it: same bytes."""
    import hashlib

    data = SEED.read_bytes()
    assert hashlib.sha256(data).hexdigest() == SEED_SHA256
    path = tmp_path / "firewall.yaml"
    path.write_bytes(data)
    return path


def test_the_three_lines_run_with_no_server(firewall_yaml: Path, recorder: HttpRecorder) -> None:
    before = listening_ports()
    os.environ["SLACK_TOKEN"] = "xoxb-test"
    fw = Firewall.from_file(firewall_yaml)
    slack = fw.wrap(SlackAdapter(token=os.environ["SLACK_TOKEN"], base_url=recorder.url + "/api/"))
    asyncio.run(slack.chat_postMessage(channel="#sales", text="Closed a deal"))
    # The engine opened no port of its own.
    assert listening_ports() <= before
    assert fw.embedded
    (sent,) = recorder.calls("/api/chat.postMessage")
    assert sent.params()["text"] == "Closed a deal"
    assert sent.params()["channel"] == "#sales"


def test_pii_is_redacted_before_slack_sees_it(firewall_yaml: Path, recorder: HttpRecorder) -> None:
    fw = Firewall.from_file(firewall_yaml)
    slack = fw.wrap(SlackAdapter(token="xoxb-test", base_url=recorder.url + "/api/"))
    asyncio.run(slack.chat_postMessage(channel="#sales", text="SSN 123-45-6789, card 4111 1111 1111 1111"))
    (sent,) = recorder.calls("/api/chat.postMessage")
    assert sent.params()["text"] == "SSN [REDACTED], card [REDACTED]"
    # clamp_length(2000) from the same policy.
    asyncio.run(slack.chat_postMessage(channel="#sales", text="x" * 5000))
    assert len(recorder.calls("/api/chat.postMessage")[1].params()["text"]) == 2000


def mail(to: str, body: str) -> email.message.EmailMessage:
    m = email.message.EmailMessage()
    m["From"] = "ana@northwind.test"
    m["To"] = to
    m["Subject"] = "Quote"
    m.set_content(body)
    return m


def test_an_external_recipient_is_held(firewall_yaml: Path, smtp: SmtpRecorder) -> None:
    fw = Firewall.from_file(firewall_yaml, approval_timeout=0)
    conn = fw.wrap(EmailAdapter(smtplib.SMTP("127.0.0.1", smtp.port, timeout=10)))
    with pytest.raises(ApprovalPending) as e:
        conn.send_message(mail("buyer@customer.test", "Your quote is attached"))
    assert e.value.rule_ids == ["firewall.external-message-approval"]
    assert e.value.approval.pending
    assert smtp.mails == []


def test_a_held_call_goes_ahead_once_approved_in_process(firewall_yaml: Path, smtp: SmtpRecorder) -> None:
    fw = Firewall.from_file(firewall_yaml, approval_timeout=30)
    conn = fw.wrap(EmailAdapter(smtplib.SMTP("127.0.0.1", smtp.port, timeout=10)))
    engine = fw.sync
    assert isinstance(engine, Embedded)
    decided: list[str] = []

    def approver() -> None:
        # The approver finds the held call and approves it.
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            pending = engine.pending()
            if pending:
                fw.approve(pending[0].id, by="alice", comment="ok")
                decided.append(pending[0].id)
                return
            time.sleep(0.02)

    t = threading.Thread(target=approver)
    t.start()
    started = time.monotonic()
    conn.send_message(mail("buyer@customer.test", "Your quote is attached"))
    t.join()
    assert decided, "the approver never saw the held call"
    assert time.monotonic() - started < 10
    (sent,) = smtp.mails
    assert sent.recipients == ["buyer@customer.test"]
    approval = engine.approval(decided[0])
    assert approval.status == "approved" and approval.decided_by == "alice"
    assert engine.pending() == []


def test_drop_table_is_denied_with_the_policys_reason(firewall_yaml: Path) -> None:
    fw = Firewall.from_file(firewall_yaml)
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE customers (id INTEGER)")
    cur = fw.wrap(SqlAdapter(db.cursor()))
    with pytest.raises(Denied) as e:
        cur.execute("DROP TABLE customers")
    assert "Destructive schema change blocked in production." in str(e.value)
    assert e.value.rule_ids == ["firewall.block-prod-drops"]
    assert db.execute("SELECT count(*) FROM sqlite_master WHERE name = 'customers'").fetchone() == (1,)


def test_an_unmatched_call_is_denied(firewall_yaml: Path) -> None:
    fw = Firewall.from_file(firewall_yaml)
    db = sqlite3.connect(":memory:")
    cur = fw.wrap(SqlAdapter(db.cursor()))
    with pytest.raises(Denied) as e:
        cur.execute("SELECT 1")
    assert e.value.rule_ids == ["firewall.default"]


def test_a_file_that_does_not_compile_names_the_problem(tmp_path: Path) -> None:
    bad = tmp_path / "firewall.yaml"
    bad.write_text("version: 1\npolicies:\n  - name: p\n    decision: approve\n    via: carrier_pigeon\n")
    with pytest.raises(ValueError, match="via `carrier_pigeon`"):
        Firewall.from_file(bad)
    with pytest.raises(ValueError, match="does not exist"):
        Firewall.from_file(tmp_path / "missing.yaml")


def test_bad_events_are_refused_with_the_apis_error_codes(firewall_yaml: Path) -> None:
    engine = Embedded(firewall_yaml)
    with pytest.raises(ApiError) as e:
        engine.evaluate({"stage": "tool.sometime"})
    assert e.value.status == 400 and e.value.code == "invalid_event"
    with pytest.raises(ValueError):
        engine.evaluate({"stage": "tool.before"}, wait=-1)
    with pytest.raises(KeyError):
        engine.approval("no-such-id")


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "parallax_client", *args], capture_output=True, text=True, timeout=60
    )


def test_lint_and_test_from_python(firewall_yaml: Path) -> None:
    r = run_cli("lint", str(firewall_yaml))
    assert r.returncode == 0, r.stderr
    assert "a parlok policy file" in r.stdout and "4 rules" in r.stdout
    call = {"adapter": "slack", "action": "chat_postMessage", "recipient": "#sales", "body": "SSN 123-45-6789"}
    r = run_cli("test", str(firewall_yaml), "--call", json.dumps(call))
    assert r.returncode == 0, r.stderr
    assert "slack.chat_postMessage: rewrite" in r.stdout
    assert '"body": "SSN [REDACTED]"' in r.stdout
    r = run_cli("test", str(firewall_yaml), "--call", '{"adapter": "slack"}')
    assert r.returncode == 1 and "`action` is required" in r.stderr
    bad = firewall_yaml.parent / "bad.yaml"
    bad.write_text("version: 2\npolicies: []\n")
    r = run_cli("lint", str(bad))
    assert r.returncode == 1 and "version 2" in r.stderr


def test_state_db_keeps_approvals_across_engines(tmp_path: Path) -> None:
    path = tmp_path / "firewall.yaml"
    path.write_text(
        "version: 1\nstate_db: parlok.db\npolicies:\n"
        "  - name: hold\n    match:\n      adapter: email\n    decision: approve\n"
    )
    first = Embedded(path)
    d = first.evaluate({"stage": "tool.before", "tool_name": "email.send", "tool_args": {"recipient": "x@y.test"}})
    assert d.action == "approve" and d.approval is not None
    assert (tmp_path / "parlok.db").is_file()
    # A second engine on the same file (another process would do the same)
    # sees the approval and decides it.
    second = Embedded(path)
    assert second.approval(d.approval.id).pending
    second.deny(d.approval.id, by="bob", comment="no")
    assert first.approval(d.approval.id).status == "denied"
    shutil.rmtree(tmp_path / "unused", ignore_errors=True)


def test_held_calls_reach_the_configured_notifier(tmp_path: Path, recorder: HttpRecorder, smtp: SmtpRecorder) -> None:
    """A parallax.yaml naming the policy file and an approvals webhook: the
    embedded engine tells the webhook about the held call, as a server
    would, and the call goes ahead once approved."""
    (tmp_path / "firewall.yaml").write_text(
        "version: 1\npolicies:\n"
        "  - name: outside\n    match:\n      adapter: email\n    when: recipient.is_external\n"
        "    decision: approve\n    via: webhook_approver\n"
        "  - name: inside\n    match:\n      adapter: email\n    decision: allow\n"
    )
    (tmp_path / "parallax.yaml").write_text(
        "policy_files: [firewall.yaml]\n"
        "policy:\n  internal_domains: [northwind.test]\n"
        "approvals:\n"
        f"  path: {tmp_path / 'approvals.db'}\n"
        f"  webhook_url: {recorder.url}/approvals-hook\n"
        "  webhook_secret: test-secret-for-signing\n"
    )
    fw = Firewall.from_file(tmp_path / "parallax.yaml", approval_timeout=30)
    conn = fw.wrap(EmailAdapter(smtplib.SMTP("127.0.0.1", smtp.port, timeout=10)))

    def approve_when_told() -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            for req in recorder.calls("/approvals-hook"):
                body = json.loads(req.body)
                if body["kind"] == "approval" and body["transition"] == "created":
                    fw.approve(body["approval"]["id"], by="alice")
                    return
            time.sleep(0.02)

    t = threading.Thread(target=approve_when_told)
    t.start()
    conn.send_message(mail("buyer@customer.test", "quote"))
    t.join()
    (sent,) = smtp.mails
    assert sent.recipients == ["buyer@customer.test"]
    hooks = recorder.calls("/approvals-hook")
    assert hooks and all(r.headers["x-parallax-signature"].startswith("sha256=") for r in hooks)
    # The held call's secret-free event went to the approver.
    assert json.loads(hooks[0].body)["event"]["tool_name"] == "email.send"
