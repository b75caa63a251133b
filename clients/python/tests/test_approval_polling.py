"""Past the server's ``approvals.max_wait_seconds`` the firewall goes on
waiting with ``GET /approvals/{id}?wait=``: a server that holds answers for
one second, an approver who decides after two."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from conftest import AGENT_TOKEN, Server, start_server, stop_server
from parallax_client import ApprovalPending, Denied, Firewall, Parallax


@pytest.fixture(scope="module")
def short_wait(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = start_server(tmp_path_factory.mktemp("short-wait"), {"max_wait_seconds: 30": "max_wait_seconds: 1"})
    yield srv
    stop_server(srv)


def test_polls_the_approval_after_the_server_s_wait(short_wait: Server, approver) -> None:
    fw = Firewall(Parallax(short_wait.url, token=AGENT_TOKEN, timeout=10), approval_timeout=15)
    ran = []

    @fw.guard
    def release(command: str) -> str:
        ran.append(command)
        return "released"

    person = approver("deploy prod poll-1", "approve", delay=2.0, on=short_wait)
    started = time.monotonic()
    assert release("deploy prod poll-1") == "released"
    assert time.monotonic() - started >= 2.0
    assert person.done()[0] == 200
    assert ran == ["deploy prod poll-1"]

    person = approver("deploy prod poll-2", "deny", comment="no", delay=2.0, on=short_wait)
    with pytest.raises(Denied) as e:
        release("deploy prod poll-2")
    assert person.done()[0] == 200
    assert "denied by alice: no" in e.value.reason
    assert ran == ["deploy prod poll-1"]


def test_gives_up_after_approval_timeout(short_wait: Server) -> None:
    fw = Firewall(Parallax(short_wait.url, token=AGENT_TOKEN, timeout=10), approval_timeout=1.5)
    started = time.monotonic()
    with pytest.raises(ApprovalPending) as e:
        fw.enforce("release", {"command": "deploy prod nobody-decides"})
    assert 1.4 <= time.monotonic() - started < 5
    assert e.value.approval.pending
