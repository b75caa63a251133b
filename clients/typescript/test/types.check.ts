// Type-checked, never run (tsc --noEmit, tests/typescript_client.rs): a
// typed use of the client, so a wrong or missing declaration in index.d.ts
// fails the build.

import { Parallax, Decision, Denied, ApiError, Unavailable, ROUTES, guard } from "../index.js";
import type { Event, Action, DecisionKind, Approval } from "../index.js";

const px = new Parallax("http://127.0.0.1:9920", { token: "t", timeoutMs: 1000, failClosed: true });

async function use(): Promise<void> {
  const event: Event = { stage: "tool.before", tool_name: "exec", tool_args: { command: "ls" } };
  const d: Decision = await px.evaluate(event, { wait: 5 });
  const action: Action = d.action;
  const kind: DecisionKind = d.kind;
  const ids: string[] = d.ruleIds;
  const rewritten: Event | null = d.rewrittenEvent;
  await px.checkTool("exec", { command: "ls" }, { sessionId: "s" });
  await px.checkMessage("hi", { userId: "u" });
  await px.checkResult("read", "text", { args: { path: "/x" } });
  const pending: Approval[] = await px.listApprovals({ status: "pending", limit: 10 });
  await px.approve(pending[0].id, { token: "alice", comment: "ok" });
  const health = await px.health();
  const rules: number = health.rules;
  const [method, path]: readonly [string, string] = ROUTES.evaluate;

  const sendMessage = guard(px, async (args: { channel: string; text: string }) => args.text.length, {
    name: "send_message",
  });
  try {
    const n: number = await sendMessage({ channel: "#ops", text: "hello" });
    void n;
  } catch (e) {
    if (e instanceof Denied) {
      const why: string = e.reason;
      const rule: string[] = e.ruleIds;
      void why, rule;
    } else if (e instanceof ApiError) {
      const code: string = e.code;
      void code;
    } else if (e instanceof Unavailable) {
      void e.url;
    }
  }
  void action, kind, ids, rewritten, rules, method, path;
}

void use;
