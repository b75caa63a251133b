"""Token and cost budgets (`budgets:`) through the official SDKs: each
answer's usage (the fake upstream reports word counts as tokens, in every
API and streamed too) is charged to the request's session and user, and a
request whose budget is spent is answered with a block naming the budget
and never reaches the model. The ledger is a file, so spending survives a
restart."""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from conftest import (
    FakeUpstream,
    Parallax,
    http_get,
    make_anthropic,
    make_openai,
    parallax_bin,
    start_parallax,
    stop,
    wait_healthy,
)
from scenarios import PLAIN_REPLY, PLAIN_STEP, Json

SESSION_BUDGET = "session-tokens"
USER_BUDGET = "user-daily-cost"
# Each call below costs 9 tokens (the fake counts words: 4 in, 5 out):
# three fit under 25 (27 spent), the fourth finds it spent.
SESSION_TOKENS = 25
# Priced at 1,000,000 per million tokens, a token costs 1: 40 tokens a day.
USER_COST = 40.0


def budgets_config(ledger: Path) -> Json:
    return {
        "path": str(ledger),
        "warn_at": 0.5,
        "prices": {"gpt-test*": {"input": 1_000_000, "output": 1_000_000}},
        "limits": [
            {"id": SESSION_BUDGET, "tokens_per_session": SESSION_TOKENS},
            {"id": USER_BUDGET, "cost_per_user_per_day": USER_COST},
        ],
    }


def start_with_budgets(tmp: Path, upstream: str, ledger: Path) -> Parallax:
    px = start_parallax(tmp, upstream)
    stop(px.proc)
    # The same config with budgets added (start_parallax writes JSON).
    cfg = tmp / "parallax.yaml"
    config = json.loads(cfg.read_text())
    config["budgets"] = budgets_config(ledger)
    cfg.write_text(json.dumps(config))
    return restart(px, tmp)


def restart(px: Parallax, tmp: Path) -> Parallax:
    """`parallax serve` again on the same port, config and files."""
    with px.stderr_path.open("ab") as err:
        proc = subprocess.Popen(
            [str(parallax_bin()), "serve", "-c", str(tmp / "parallax.yaml"), "--log-level", "warn"],
            stdout=subprocess.DEVNULL,
            stderr=err,
            cwd=tmp,
        )
    return wait_healthy(
        Parallax(proc=proc, port=px.port, audit_log=px.audit_log, stderr_path=px.stderr_path)
    )


@pytest.fixture(scope="module")
def budgeted(tmp_path_factory: pytest.TempPathFactory, fake: FakeUpstream) -> Iterator[Parallax]:
    tmp = tmp_path_factory.mktemp("parallax-budgets")
    px = start_with_budgets(tmp, fake.url, tmp / "budgets.db")
    yield px
    stop(px.proc)


def chat(client: openai.OpenAI, stream: bool) -> str:
    kwargs: Any = {
        "model": "gpt-test-1",
        "messages": [{"role": "user", "content": "Say something nice."}],
    }
    if not stream:
        r = client.chat.completions.create(**kwargs)
        return r.choices[0].message.content or ""
    text = ""
    with client.chat.completions.create(stream=True, **kwargs) as chunks:
        for c in chunks:
            for choice in c.choices:
                text += choice.delta.content or ""
    return text


def metrics(px: Parallax) -> str:
    status, body = http_get(f"{px.url}/metrics")
    assert status == 200
    return body


def sid() -> str:
    return f"budget-{uuid.uuid4().hex[:10]}"


@pytest.mark.parametrize("stream", [False, True])
def test_a_spent_session_is_blocked_before_the_model(
    upstream: FakeUpstream, budgeted: Parallax, stream: bool
) -> None:
    upstream.script({"chat": [PLAIN_STEP]})
    client = make_openai(budgeted.url, sid())
    replies = [chat(client, stream) for _ in range(4)]
    assert replies[:3] == [PLAIN_REPLY] * 3, replies
    assert "Parallax blocked" in replies[3] and SESSION_BUDGET in replies[3], replies[3]
    sent = upstream.model_requests("/v1/chat/completions")
    assert len(sent) == 3, "the fourth request reached the model"
    if stream:
        assert all(r["body"]["stream_options"]["include_usage"] for r in sent), (
            "Parallax asks a streamed chat for its usage"
        )
    # The refusal is an audit line of its own, naming the budget.
    deadline = time.monotonic() + 10
    while not [a for a in budgeted.audit() if a.get("kind") == "budget"]:
        assert time.monotonic() < deadline, "no budget line in the audit log"
        time.sleep(0.05)
    line = [a for a in budgeted.audit() if a.get("kind") == "budget"][-1]
    assert line["action"] == "block" and line["door"] == "proxy", line
    assert SESSION_BUDGET in line["reason"], line
    # Another session of another user is not affected.
    other = make_openai(budgeted.url, sid())
    assert chat(other, stream) == PLAIN_REPLY
    m = metrics(budgeted)
    assert f'parallax_budget_blocked_total{{budget="{SESSION_BUDGET}"}}' in m, m
    assert f'parallax_budget_warnings_total{{budget="{SESSION_BUDGET}"}}' in m, m
    # The dashboard's overview reports them too.
    status, body = http_get(f"{budgeted.url}/ui/api/overview")
    assert status == 200, body
    report = json.loads(body)["budgets"]
    assert report["blocked"][SESSION_BUDGET] >= 1, report
    assert {"id": USER_BUDGET, "measure": "cost_per_user_per_day", "limit": USER_COST} in report[
        "limits"
    ], report
    assert report["output_tokens"] > 0, report


def test_anthropic_and_responses_answers_are_charged(
    upstream: FakeUpstream, budgeted: Parallax
) -> None:
    upstream.script({"messages": [PLAIN_STEP], "responses": [PLAIN_STEP]})
    session = sid()
    claude = make_anthropic(budgeted.url, session)
    texts = []
    for i in range(6):
        kwargs: Any = {
            "model": "claude-test-1",
            "max_tokens": 100,
            "messages": [{"role": "user", "content": "Say something nice."}],
        }
        if i % 2:
            with claude.messages.stream(**kwargs) as s:
                texts.append(s.get_final_text())
        else:
            m = claude.messages.create(**kwargs)
            texts.append("".join(b.text for b in m.content if b.type == "text"))
        if "Parallax blocked" in texts[-1]:
            break
    assert texts[0] == PLAIN_REPLY
    assert "Parallax blocked" in texts[-1] and SESSION_BUDGET in texts[-1], texts
    # Responses, streamed: charged when the stream completes.
    r_client = make_openai(budgeted.url, sid())
    outs = []
    for _ in range(6):
        with r_client.responses.stream(model="gpt-test-1", input="Say something nice.") as s:
            outs.append(s.get_final_response().output_text)
        if "Parallax blocked" in outs[-1]:
            break
    assert outs[0] == PLAIN_REPLY and "Parallax blocked" in outs[-1], outs


def test_a_users_daily_cost_spans_sessions_and_survives_a_restart(
    tmp_path: Path, fake: FakeUpstream
) -> None:
    fake.script({"chat": [PLAIN_STEP]})
    ledger = tmp_path / "budgets.db"
    px = start_with_budgets(tmp_path / "px", fake.url, ledger)
    user = f"user-{uuid.uuid4().hex[:6]}"

    def client() -> openai.OpenAI:
        c = make_openai(px.url, sid())
        return c.with_options(default_headers={"x-parallax-user": user, "x-parallax-session": sid()})

    try:
        # A fresh session each time: only the user's daily cost can stop it.
        first = [chat(client(), False) for _ in range(3)]
        assert first == [PLAIN_REPLY] * 3
        stop(px.proc)
        px = restart(px, tmp_path / "px")
        later = [chat(client(), False) for _ in range(5)]
        blocked = [t for t in later if "Parallax blocked" in t]
        assert blocked and USER_BUDGET in blocked[0], later
        assert later[0] == PLAIN_REPLY, "the first call after the restart still fits"
        # Someone else still may.
        other = make_openai(px.url, sid()).with_options(
            default_headers={"x-parallax-user": "someone-else", "x-parallax-session": sid()}
        )
        assert chat(other, False) == PLAIN_REPLY
        m = metrics(px)
        assert "parallax_budget_cost_total" in m and "parallax_budget_ledger_errors_total 0" in m, m
    finally:
        stop(px.proc)


def test_bad_budgets_are_refused_naming_the_key(tmp_path: Path) -> None:
    cfg = tmp_path / "parallax.yaml"
    cfg.write_text(
        json.dumps(
            {
                "budgets": {
                    "warn_at": 2,
                    "limits": [{"id": "x", "cost_per_session": 5, "tokens_per_session": 3}],
                }
            }
        )
    )
    out = subprocess.run(
        [str(parallax_bin()), "lint", "-c", str(cfg)], capture_output=True, text=True, timeout=60
    )
    assert out.returncode != 0
    assert "budgets.warn_at" in out.stderr and "budgets.limits[0]" in out.stderr, out.stderr

