"""The stdio MCP server of the real-agent MCP test (mcp_e2e.py), on the
official `mcp` SDK: `run_command` (a pretend shell — it runs nothing) and
`echo`. Every call that reaches it is appended to the log given as the
first argument, so the test can prove a refused call never arrived.

    .venv/bin/python mcp_canary_server.py CALLS.jsonl
"""

from __future__ import annotations

import json
import sys

from mcp.server.mcpserver import MCPServer

LOG = sys.argv[1]
server = MCPServer("canary")


def record(tool: str, args: dict) -> None:
    with open(LOG, "a") as f:
        f.write(json.dumps({"tool": tool, "args": args}) + "\n")


@server.tool(description="Pretend to run a shell command (nothing is executed).")
def run_command(command: str) -> str:
    record("run_command", {"command": command})
    return f"would run: {command}"


@server.tool(description="Echo the text back, unchanged.")
def echo(text: str) -> str:
    record("echo", {"text": text})
    return text


if __name__ == "__main__":
    server.run("stdio")
