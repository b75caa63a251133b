"""``python -m parallax_client lint|test``: parlok's ``parlok lint`` and
``parlok test`` on the embedded engine (no server, no ``parallax`` binary).

    python -m parallax_client lint firewall.yaml
    python -m parallax_client test firewall.yaml --call '{"adapter": "slack", "action": "chat_postMessage", "recipient": "#sales", "body": "hi"}'

``lint`` compiles the file and lists what it holds (exit 1 with every error
when it does not compile); ``test`` decides each ``--call`` (a parlok tool
call, or a whole event with ``stage``) and prints parlok's decision.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Sequence

from .embedded import Embedded, _engine_module
from .errors import ApiError

#: parlok's word for each of Parallax's actions.
PARLOK_DECISION = {"allow": "allow", "detect": "allow", "redact": "rewrite", "approve": "approve", "block": "deny"}


def _lint(path: str) -> int:
    try:
        engine = Embedded(path)
    except ValueError as e:
        print(e, file=sys.stderr)
        return 1
    s = engine.summary
    print(s["path"])
    if s["policy_file"]:
        print("  a parlok policy file: its policies are the whole program")
    for ev in s["evaluators"]:
        print(f"  {ev['name']:<28} {ev['rules']:>4} rules")
    print(f"ok: {s['rules']} rules compiled ({s['backend']} backend); fingerprint {s['fingerprint']}")
    return 0


def _test(path: str, calls: Sequence[str]) -> int:
    engine_module = _engine_module()
    events = []
    for call in calls:
        try:
            events.append((call, json.loads(engine_module.Engine.call_event(call))))
        except ValueError as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
    try:
        engine = Embedded(path)
    except ValueError as e:
        print(e, file=sys.stderr)
        return 1
    for text, event in events:
        try:
            d = engine.evaluate(event)
        except ApiError as e:
            print(f"error: {text}: {e}", file=sys.stderr)
            return 1
        print(text)
        print(f"  {event.get('tool_name') or event['stage']}: {PARLOK_DECISION[d.action]} (action {d.action})")
        for reason in d.reasons:
            print(f"    {reason}")
        if d.action == "redact" and d.rewritten_event:
            print(f"    sent as: {json.dumps(d.rewritten_event.get('tool_args'), sort_keys=True)}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m parallax_client", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    lint = sub.add_parser("lint", help="compile a policy file or config and list what it holds")
    lint.add_argument("file")
    test = sub.add_parser("test", help="decide sample tool calls against a policy file or config")
    test.add_argument("file")
    test.add_argument("--call", action="append", default=[], metavar="JSON", help="a tool call (repeatable)")
    args = parser.parse_args(argv)
    if args.command == "lint":
        return _lint(args.file)
    if not args.call:
        parser.error("test: give at least one --call JSON")
    return _test(args.file, args.call)


if __name__ == "__main__":
    sys.exit(main())
