#!/usr/bin/env python3
"""A real Claude Code run whose hook waits on a human approval.

Driven by tests/agent_approvals.rs; runnable by hand (as root, Claude Code
installed by .ci/run into .ci/agents):

    python3 tests/agents/approval_e2e.py --parallax target/debug/parallax

Inside a loopback-only network namespace (e2e.py's machinery: fresh HOME,
TMPDIR, the scripted fake model server): `parallax serve` runs the
repository's rules plus one rule of this test's, `e2e-release-step` —
`action: approve`, approver `alice` — and `parallax setup claudecode
--scope user` writes the command hooks. The fake model asks, in one answer,
for two Bash commands the rule holds: `touch <work>/release-step-go.marker`
and `touch <work>/release-step-stop.marker`. While Claude Code's hooks wait
(`POST /evaluate?wait=`), this script plays alice: it reads `GET
/approvals?status=pending` with her token and approves the first command's
approval and denies the second's over HTTP (`POST
/approvals/{id}/approve|deny`).

Assertions: the agent ends normally; the approved command ran (its marker
exists), the denied one did not; the model's second request carries the
denial (the approval id and `alice`) as the denied call's tool result; the
agent's own token could not have decided (a decision with it is a 403);
the audit log has both approval transitions by alice. A JSON summary is the
last line of stdout; exit status 0 means every assertion held.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import e2e  # noqa: E402
import hooks_e2e  # noqa: E402

RULE = "e2e-release-step"
ALICE = "alice-e2e-approver-token-5b1f0c"
AGENT_TOKEN = "agent-e2e-token-9d2e77"


def start_server(binary: str, root: Path) -> tuple[subprocess.Popen, int, Path]:
    port = e2e.free_port()
    audit = root / "audit.jsonl"
    config = root / "parallax.yaml"
    config.write_text(
        "\n".join(
            [
                "server:",
                "  host: 127.0.0.1",
                f"  port: {port}",
                f"  auth_token: {AGENT_TOKEN}",
                "reporting:",
                f"  log_file: {json.dumps(str(audit))}",
                "  log_allows: true",
                "  flush_ms: 10",
                "approvals:",
                f"  path: {json.dumps(str(root / 'approvals.db'))}",
                "  approver_tokens:",
                f"    alice: {ALICE}",
                f"rules_dir: {json.dumps(str(e2e.RULES))}",
                "evaluators:",
                "  - name: e2e-approvals",
                "    type: regex",
                "    stages: [tool.before]",
                "    rules:",
                f"      - id: {RULE}",
                "        title: A release step needs a human",
                "        action: approve",
                "        priority: high",
                "        reason: release steps need a human",
                "        fields: [command]",
                "        patterns: ['release-step']",
                "        approval:",
                "          approvers: [alice]",
                "          timeout_seconds: 60",
                "          on_timeout: deny",
                "",
            ]
        )
    )
    proc = subprocess.Popen(
        [binary, "serve", "-c", str(config)],
        stdout=open(root / "parallax.stdout", "wb"),
        stderr=open(root / "parallax.stderr", "wb"),
    )
    deadline = time.monotonic() + e2e.START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise e2e.Failure(
                f"parallax exited {proc.returncode}: " + (root / "parallax.stderr").read_text()[-2000:]
            )
        try:
            if json.loads(e2e.http_get(f"http://127.0.0.1:{port}/health", 1))["status"] == "ok":
                return proc, port, audit
        except OSError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise e2e.Failure(f"parallax not healthy within {e2e.START_TIMEOUT} s")


def call(url: str, token: str, method: str = "GET", body: Any = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Authorization", f"Bearer {token}")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


class Alice(threading.Thread):
    """Decides each pending approval once: approve `go`, deny `stop`."""

    def __init__(self, base: str, go: str, stop: str) -> None:
        super().__init__(daemon=True)
        self.base, self.go, self.stop_cmd = base, go, stop
        self.decided: dict[str, str] = {}
        self.agent_token_status: int | None = None
        self.errors: list[str] = []
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            status, body = call(f"{self.base}/approvals?status=pending", ALICE)
            if status != 200:
                self.errors.append(f"GET /approvals: {status} {body}")
                time.sleep(0.2)
                continue
            for a in body.get("approvals", []):
                command = ((a.get("event") or {}).get("tool_args") or {}).get("command", "")
                if a["id"] in self.decided:
                    continue
                if self.agent_token_status is None:
                    # The agent's own token may read but never decide.
                    s, _ = call(f"{self.base}/approvals/{a['id']}/approve", AGENT_TOKEN, "POST", {})
                    self.agent_token_status = s
                verdict = "approve" if command == self.go else "deny" if command == self.stop_cmd else None
                if verdict is None:
                    continue
                s, b = call(
                    f"{self.base}/approvals/{a['id']}/{verdict}", ALICE, "POST", {"comment": f"e2e {verdict}"}
                )
                if s != 200:
                    self.errors.append(f"{verdict} {a['id']}: {s} {b}")
                self.decided[a["id"]] = verdict
            time.sleep(0.1)


def inside(args: argparse.Namespace) -> int:
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    e2e.assert_isolated()
    root = Path(tempfile.mkdtemp(prefix="parallax-approval-claude-"))
    summary: dict[str, Any] = {"agent": "claude", "root": str(root)}
    failures: list[str] = []
    procs: list[subprocess.Popen] = []
    alice = None
    check = lambda cond, what: e2e.check(cond, what, failures)  # noqa: E731
    try:
        for d in ("home", "tmp", "work", "codex-home"):
            (root / d).mkdir(parents=True)
        work = root / "work"
        go_marker, stop_marker = work / "release-step-go.marker", work / "release-step-stop.marker"
        go, stop = f"touch '{go_marker}'", f"touch '{stop_marker}'"
        scenario = {
            "messages": [
                [
                    {"text": "Running the release steps."},
                    {"tool_call": {"name": "Bash", "input": {"command": go}}},
                    {"tool_call": {"name": "Bash", "input": {"command": stop}}},
                ],
                [{"text": e2e.FINAL_TEXT}],
            ]
        }
        fake, fake_port, fake_log = e2e.start_fake(root, scenario)
        procs.append(fake)
        px, px_port, audit = start_server(args.parallax, root)
        procs.append(px)
        base = f"http://127.0.0.1:{px_port}"
        penv = e2e.agent_env(root / "home", root / "tmp")
        setup = hooks_e2e.run_parallax(
            args.parallax, ["setup", "claudecode", "--scope", "user", "--url", base], penv, work
        )
        check(setup.returncode == 0, f"setup failed: {setup.stderr}")

        alice = Alice(base, go, stop)
        alice.start()
        started = time.monotonic()
        hargs = argparse.Namespace(agent="claude", agents_bin=args.agents_bin)
        # The hook sends the agent's token (server.auth_token).
        result = run_claude_with_token(hargs, root, work, fake_port)
        summary["seconds"] = round(time.monotonic() - started, 2)
        alice.done.set()
        summary["exit"] = result.returncode
        (root / "agent.stdout").write_text(result.stdout)
        (root / "agent.stderr").write_text(result.stderr)
        summary["decided"] = sorted(alice.decided.values())
        summary["approved_ran"] = go_marker.exists()
        summary["denied_ran"] = stop_marker.exists()
        summary["agent_token_decide_status"] = alice.agent_token_status
        check(result.returncode == 0, f"agent exited {result.returncode}")
        check(not alice.errors, f"alice's calls failed: {alice.errors}")
        check(summary["decided"] == ["approve", "deny"], f"decisions made: {alice.decided}")
        check(summary["approved_ran"], "the approved command did not run")
        check(not summary["denied_ran"], "the denied command ran")
        check(alice.agent_token_status == 403, f"the agent's token decided: {alice.agent_token_status}")

        requests = [r for r in e2e.read_jsonl(fake_log) if r.get("method") == "POST"]
        results = hooks_e2e.tool_results(requests[-1].get("body")) if requests else []
        summary["tool_results"] = results
        denied_id = next(i for i, v in alice.decided.items() if v == "deny") if alice.decided else "?"
        told = [r for r in results if denied_id in r and "alice" in r]
        check(len(told) == 1, f"the model was not told of the denial: {results}")

        deadline = time.monotonic() + 5
        while True:
            lines = [r for r in e2e.read_jsonl(audit) if r.get("kind") == "approval"]
            transitions = sorted(str(r.get("transition")) for r in lines if r.get("by") == "alice")
            if transitions == ["approved", "denied"] or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        summary["audit_transitions"] = transitions
        check(transitions == ["approved", "denied"], f"audit approval lines by alice: {transitions}")
    except e2e.Failure as e:
        failures.append(str(e))
    finally:
        if alice is not None:
            alice.done.set()
        e2e.stop_processes(procs)
    return e2e.finish(summary, failures, root, args.keep)


def run_claude_with_token(hargs: argparse.Namespace, root: Path, work: Path, fake_port: int):
    """hooks_e2e's Claude Code run, with PARALLAX_AUTH_TOKEN in its
    environment so the hook sends the agent's token."""
    original = e2e.agent_env

    def with_token(home: Path, tmp: Path) -> dict[str, str]:
        env = original(home, tmp)
        env["PARALLAX_AUTH_TOKEN"] = AGENT_TOKEN
        return env

    e2e.agent_env = with_token
    try:
        return hooks_e2e.run_agent(hargs, root, work, fake_port)
    finally:
        e2e.agent_env = original


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parallax", default=str(e2e.REPO / "target" / "debug" / "parallax"))
    ap.add_argument("--agents-bin", default=str(e2e.AGENTS_BIN))
    ap.add_argument("--keep", action="store_true", help="keep the run's directory")
    ap.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.inside:
        return inside(args)
    return e2e.reexec_in_namespace(Path(__file__))


if __name__ == "__main__":
    sys.exit(main())
