"""The Slack adapter with the real slack_sdk WebClient, pointed (base_url)
at a fake Slack Web API on 127.0.0.1: what the policies allow reaches it,
rewritten where they say; what they deny never does."""

from __future__ import annotations

import asyncio

import pytest
from slack_sdk import WebClient
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web import SlackResponse

from conftest import AGENT_TOKEN, Server
from fakes import HttpRecorder
from parallax_client import ApprovalPending, AsyncParallax, Denied, Firewall, Parallax
from parallax_client.adapters.slack import SlackAdapter


def slack_for(server: Server, recorder: HttpRecorder, **fw_options: float) -> WebClient:
    fw = Firewall(Parallax(server.url, token=AGENT_TOKEN, timeout=10), **fw_options)
    return fw.wrap(SlackAdapter(WebClient(token="xoxb-test", base_url=recorder.url + "/api/")))


def test_rewrite_reaches_slack_rewritten(server: Server, recorder: HttpRecorder) -> None:
    slack = slack_for(server, recorder)
    r = slack.chat_postMessage(channel="#sales", text="card 4111 1111 1111 1111 for the order")
    assert isinstance(r, SlackResponse) and r["ok"] is True
    (sent,) = recorder.calls("/api/chat.postMessage")
    assert sent.params()["text"] == "card [CARD] for the order"
    assert sent.params()["channel"] == "#sales"
    assert sent.headers["authorization"] == "Bearer xoxb-test"


def test_denied_message_raises_with_reason_and_never_reaches_slack(
    server: Server, recorder: HttpRecorder
) -> None:
    slack = slack_for(server, recorder)
    with pytest.raises(Denied) as e:
        slack.chat_postMessage(channel="#general", text="the db password: hunter2")
    assert e.value.rule_ids == ["policy.no-credentials"]
    assert "Credentials never leave through a tool." in e.value.reason
    assert e.value.call is not None and e.value.call.tool_name == "slack.chat_postMessage"
    assert recorder.calls("/api/chat.postMessage") == []


def test_an_ungoverned_action_of_the_adapter_is_denied_by_default(
    server: Server, recorder: HttpRecorder
) -> None:
    slack = slack_for(server, recorder)
    with pytest.raises(Denied) as e:
        slack.chat_update(channel="#sales", ts="1.0", text="edited")
    assert e.value.rule_ids == ["policy.default"]
    assert recorder.calls("/api/chat.update") == []


def test_other_methods_pass_through(server: Server, recorder: HttpRecorder) -> None:
    slack = slack_for(server, recorder)
    assert slack.conversations_list()["ok"] is True
    assert len(recorder.calls("/api/conversations.list")) == 1
    assert slack.token == "xoxb-test"  # attributes too


def test_blocks_are_checked_and_a_rewrite_drops_them(server: Server, recorder: HttpRecorder) -> None:
    slack = slack_for(server, recorder)
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": "card 4111 1111 1111 1111"}}]
    slack.chat_postMessage(channel="#sales", blocks=blocks)
    (sent,) = recorder.calls("/api/chat.postMessage")
    assert "blocks" not in sent.params()
    assert sent.params()["text"] == "card [CARD]"


def test_approval_waits_for_the_human(server: Server, recorder: HttpRecorder, approver) -> None:
    slack = slack_for(server, recorder, approval_timeout=20)
    person = approver("v4.2 is out", "approve", comment="go")
    r = slack.chat_postMessage(channel="#announce", text="v4.2 is out")
    assert person.done()[0] == 200
    assert r["ok"] is True
    (sent,) = recorder.calls("/api/chat.postMessage")
    assert sent.params()["text"] == "v4.2 is out"


def test_refused_approval_raises(server: Server, recorder: HttpRecorder, approver) -> None:
    slack = slack_for(server, recorder, approval_timeout=20)
    person = approver("v5 leaks", "deny", comment="not yet")
    with pytest.raises(Denied) as e:
        slack.chat_postMessage(channel="#announce", text="v5 leaks")
    assert person.done()[0] == 200
    assert "not yet" in e.value.reason and "alice" in e.value.reason
    assert "policy.announcements-need-a-human" in e.value.rule_ids
    assert recorder.calls("/api/chat.postMessage") == []


def test_approval_not_waited_for_raises_pending(server: Server, recorder: HttpRecorder) -> None:
    slack = slack_for(server, recorder, approval_timeout=0)
    with pytest.raises(ApprovalPending) as e:
        slack.chat_postMessage(channel="#announce", text="nobody decides this")
    assert e.value.approval.pending and e.value.approval.id.startswith("apr_")
    assert f"/approvals/{e.value.approval.id}/approve" in str(e.value)
    assert recorder.calls("/api/chat.postMessage") == []


def test_async_web_client(server: Server, recorder: HttpRecorder) -> None:
    async def main() -> None:
        fw = Firewall(AsyncParallax(server.url, token=AGENT_TOKEN, timeout=10))
        slack = fw.wrap(SlackAdapter(AsyncWebClient(token="xoxb-test", base_url=recorder.url + "/api/")))
        r = await slack.chat_postMessage(channel="#sales", text="card 4111 1111 1111 1111")
        assert r["ok"] is True
        with pytest.raises(Denied):
            await slack.chat_postMessage(channel="#sales", text="api_key = abc")
        assert (await slack.auth_test())["ok"] is True

    asyncio.run(main())
    (sent,) = recorder.calls("/api/chat.postMessage")
    assert sent.params()["text"] == "card [CARD]"
    assert len(recorder.calls("/api/auth.test")) == 1
