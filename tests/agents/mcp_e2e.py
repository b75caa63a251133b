#!/usr/bin/env python3
"""Claude Code as a real MCP client through `parallax mcp wrap`.

Driven by tests/agent_mcp.rs; runnable by hand (as root, Claude Code
installed by .ci/run into .ci/agents, the SDK venv in .venv):

    python3 tests/agents/mcp_e2e.py --parallax target/debug/parallax

Inside a loopback-only network namespace (e2e.py's machinery: fresh HOME,
TMPDIR, the scripted fake model server): the "user" has a stdio MCP server
`canary` (mcp_canary_server.py on the official SDK, logging every call it
receives) in `~/.claude.json` (user scope); `parallax setup claudecode
--mcp --scope user` rewrites it to start through `parallax mcp wrap` (a
second setup changes nothing). The fake model asks, in one answer, for
`mcp__canary__run_command {"command": "rm -rf /"}` (dangerous-rm-rf-root
blocks it; the server only pretends, so nothing is at risk) and
`mcp__canary__echo {"text": <token>}`, then ends.

Assertions: `claude -p` ends normally; the server's log has the echo and
never run_command; the model's second request carries the block reason as
an error tool result of the dangerous call and exactly the token as the
echo's result (as Claude Code shows structured content:
`{"result": <token>}`); `parallax revert claudecode --scope user` gives the server
entry back exactly as the user wrote it (Claude Code itself rewrites other
keys of ~/.claude.json during the run, which revert keeps). A JSON summary
is the last line of stdout; exit status 0 means every assertion held.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import e2e  # noqa: E402

SERVER = Path(__file__).resolve().parent / "mcp_canary_server.py"
BLOCK_RULE = "dangerous-rm-rf-root"
TOKEN = "echo-token-7f3a9c unchanged {\"k\": [1, 2]}"


def tool_results(body: Any) -> list[dict]:
    """Every tool_result block the agent sends back to the model."""
    out: list[dict] = []
    for m in (body or {}).get("messages", []):
        content = m.get("content")
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "tool_result":
                out.append(block)
    return out


def text_of(block: dict) -> str:
    c = block.get("content")
    if isinstance(c, str):
        return c
    return "".join(p.get("text", "") for p in c or [] if isinstance(p, dict))


def unchanged(text: str) -> bool:
    """The echo's result as the server sent it: its text, or (Claude Code
    hands the model a tool's structured content when there is one) the
    SDK's `{"result": <text>}`."""
    if text == TOKEN:
        return True
    try:
        return json.loads(text) == {"result": TOKEN}
    except json.JSONDecodeError:
        return False


def inside(args: argparse.Namespace) -> int:
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    e2e.assert_isolated()
    root = Path(tempfile.mkdtemp(prefix="parallax-mcp-claude-"))
    summary: dict[str, Any] = {"agent": "claude", "root": str(root)}
    failures: list[str] = []
    procs: list[subprocess.Popen] = []
    check = lambda cond, what: e2e.check(cond, what, failures)  # noqa: E731
    try:
        for d in ("home", "tmp", "work"):
            (root / d).mkdir(parents=True)
        home, work = root / "home", root / "work"
        calls_log = root / "server-calls.jsonl"
        scenario = {
            "messages": [
                [
                    {"text": "Using the MCP tools."},
                    {"tool_call": {"name": "mcp__canary__run_command", "input": {"command": "rm -rf /"}}},
                    {"tool_call": {"name": "mcp__canary__echo", "input": {"text": TOKEN}}},
                ],
                [{"text": e2e.FINAL_TEXT}],
            ]
        }
        fake, fake_port, fake_log = e2e.start_fake(root, scenario)
        procs.append(fake)

        entry = {"type": "stdio", "command": args.python, "args": [str(SERVER), str(calls_log)], "env": {}}
        claude_json = home / ".claude.json"
        claude_json.write_text(json.dumps({"mcpServers": {"canary": entry}}, indent=2) + "\n")
        penv = e2e.agent_env(home, root / "tmp")

        def parallax(*a: str) -> subprocess.CompletedProcess:
            return subprocess.run(
                ["timeout", "30", args.parallax, *a], env=penv, cwd=work, capture_output=True, text=True
            )

        setup = parallax("setup", "claudecode", "--mcp", "--scope", "user")
        summary["setup_stdout"] = setup.stdout
        check(setup.returncode == 0, f"setup failed: {setup.stderr}")
        wrapped = json.loads(claude_json.read_text())["mcpServers"]["canary"]
        summary["wrapped"] = wrapped
        check(wrapped["args"][:5] == ["mcp", "wrap", "--name", "canary", "--"], f"not wrapped: {wrapped}")
        again = parallax("setup", "claudecode", "--mcp", "--scope", "user")
        check("unchanged" in again.stdout, f"a second setup changed something: {again.stdout}")

        env = e2e.agent_env(home, root / "tmp")
        env.update(
            {
                "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{fake_port}",
                "ANTHROPIC_API_KEY": "sk-ant-dummy-e2e",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                "DISABLE_TELEMETRY": "1",
                "DISABLE_AUTOUPDATER": "1",
                "CLAUDE_CODE_TMPDIR": str(root / "tmp"),
            }
        )
        cmd = [str(Path(args.agents_bin) / "claude"), "-p", e2e.PROMPT, "--output-format", "json"]
        cmd += ["--allowedTools", "mcp__canary__run_command,mcp__canary__echo"]
        started = time.monotonic()
        result = e2e.run_bounded(cmd, env, work)
        summary["seconds"] = round(time.monotonic() - started, 2)
        summary["exit"] = result.returncode
        (root / "agent.stdout").write_text(result.stdout)
        (root / "agent.stderr").write_text(result.stderr)
        check(result.returncode == 0, f"agent exited {result.returncode}")
        try:
            out = json.loads(result.stdout)
        except json.JSONDecodeError:
            out = {}
            failures.append("claude printed no JSON result")
        summary["result"] = out.get("result")
        check(out.get("result") == e2e.FINAL_TEXT, f"claude's result is {out.get('result')!r}")

        received = e2e.read_jsonl(calls_log)
        summary["server_calls"] = received
        tools = [c.get("tool") for c in received]
        check("run_command" not in tools, f"the refused call reached the server: {received}")
        check(tools == ["echo"], f"the server got {tools}, not one echo")
        check(received[:1] == [{"tool": "echo", "args": {"text": TOKEN}}], f"echo args: {received}")

        requests = [r for r in e2e.read_jsonl(fake_log) if r.get("method") == "POST"]
        check(len(requests) >= 2, f"the fake saw {len(requests)} model calls, not 2")
        results = tool_results(requests[-1].get("body")) if requests else []
        summary["tool_results"] = results
        refused = [r for r in results if BLOCK_RULE in text_of(r)]
        check(len(refused) == 1, f"the model was not told the block reason: {results}")
        check(all(r.get("is_error") for r in refused), f"the refusal is not an error: {refused}")
        echoed = [r for r in results if r not in refused]
        check(len(echoed) == 1 and unchanged(text_of(echoed[0])), f"the echo result changed: {echoed}")
        check(not any(r.get("is_error") for r in echoed), f"the echo is an error: {echoed}")

        revert = parallax("revert", "claudecode", "--scope", "user")
        summary["revert_stdout"] = revert.stdout
        check(revert.returncode == 0, f"revert failed: {revert.stderr}")
        after = json.loads(claude_json.read_text())
        restored = after.get("mcpServers", {}).get("canary")
        summary["restored"] = restored == entry
        check(restored == entry, f"revert left the entry as {restored}, not {entry}")
    except e2e.Failure as e:
        failures.append(str(e))
    finally:
        e2e.stop_processes(procs)
    return e2e.finish(summary, failures, root, args.keep)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parallax", default=str(e2e.REPO / "target" / "debug" / "parallax"))
    ap.add_argument("--agents-bin", default=str(e2e.AGENTS_BIN))
    ap.add_argument("--python", default=str(e2e.REPO / ".venv" / "bin" / "python"))
    ap.add_argument("--keep", action="store_true", help="keep the run's directory")
    ap.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.inside:
        return inside(args)
    return e2e.reexec_in_namespace(Path(__file__))


if __name__ == "__main__":
    sys.exit(main())
