// Unit tests of the dashboard page's logic (dashboard/src/logic.js), run by
// node's test runner from tests/dashboard_page.rs.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  addDecision,
  countdown,
  formatMs,
  highlight,
  matchesFilter,
  parseSse,
} from "../../dashboard/src/logic.js";

const blocked = {
  action: "block",
  stage: "tool.before",
  door: "http",
  framework: "claudecode",
  session_id: "sess-42",
  matches: [{ rule_id: "dangerous-rm-rf-root" }, { rule_id: "secret-aws-access-key" }],
};

test("an empty filter passes everything", () => {
  assert.equal(matchesFilter(blocked, {}), true);
  assert.equal(matchesFilter(blocked, { action: "", rule: "" }), true);
  assert.equal(matchesFilter(blocked, undefined), true);
});

test("action, stage and door must be equal", () => {
  assert.equal(matchesFilter(blocked, { action: "block" }), true);
  assert.equal(matchesFilter(blocked, { action: "allow" }), false);
  assert.equal(matchesFilter(blocked, { stage: "tool.after" }), false);
  assert.equal(matchesFilter(blocked, { door: "proxy" }), false);
  assert.equal(matchesFilter(blocked, { door: "http", stage: "tool.before" }), true);
});

test("rule, session and framework match case-insensitive parts", () => {
  assert.equal(matchesFilter(blocked, { rule: "RM-RF" }), true);
  assert.equal(matchesFilter(blocked, { rule: "aws" }), true, "any matched rule");
  assert.equal(matchesFilter(blocked, { rule: "mkfs" }), false);
  assert.equal(matchesFilter({ ...blocked, matches: undefined }, { rule: "rm" }), false);
  assert.equal(matchesFilter(blocked, { session: "42" }), true);
  assert.equal(matchesFilter({ ...blocked, session_id: null }, { session: "42" }), false);
  assert.equal(matchesFilter(blocked, { framework: "Claude" }), true);
  assert.equal(matchesFilter(blocked, { framework: "codex" }), false);
});

test("the list is newest first and bounded", () => {
  let list = [];
  for (let i = 1; i <= 5; i++) {
    list = addDecision(list, { seq: i }, 3);
  }
  assert.deepEqual(
    list.map((d) => d.seq),
    [5, 4, 3],
  );
});

test("server-sent events split across chunks", () => {
  const one = parseSse('event: hello\ndata: {"a":1}\n\n: keep-alive\n\nevent: decision\ndata: {"se');
  assert.deepEqual(one.events, [{ event: "hello", data: '{"a":1}' }]);
  const two = parseSse(`${one.rest}q":7}\n\nevent: lost\r\ndata: {"lost":3}\r\n\r\n`);
  assert.deepEqual(two.events, [
    { event: "decision", data: '{"seq":7}' },
    { event: "lost", data: '{"lost":3}' },
  ]);
  assert.equal(two.rest, "");
  const multi = parseSse("data: a\ndata: b\n\n");
  assert.deepEqual(multi.events, [{ event: "message", data: "a\nb" }]);
});

test("countdowns", () => {
  const now = Date.parse("2026-12-01T12:00:00Z");
  assert.equal(countdown("2026-12-01T12:04:05Z", now), "4m 05s");
  assert.equal(countdown("2026-12-01T12:00:09.9Z", now), "9s");
  assert.equal(countdown("2026-12-01T14:30:00Z", now), "2h 30m");
  assert.equal(countdown("2026-12-01T11:59:00Z", now), "expired");
  assert.equal(countdown("not a time", now), "?");
});

test("durations", () => {
  assert.equal(formatMs(null), "—");
  assert.equal(formatMs(0.025), "25 µs");
  assert.equal(formatMs(2.5), "2.5 ms");
  assert.equal(formatMs("+Inf"), "> 100 ms");
});

test("a match is marked where it occurs, longest first", () => {
  assert.deepEqual(highlight("rm -rf / now", ["rm -rf /"]), [
    { text: "rm -rf /", hit: true },
    { text: " now", hit: false },
  ]);
  assert.deepEqual(highlight("a [REDACTED] b", ["[REDACTED]", "RED"]), [
    { text: "a ", hit: false },
    { text: "[REDACTED]", hit: true },
    { text: " b", hit: false },
  ]);
  assert.deepEqual(highlight("nothing", ["", null]), [{ text: "nothing", hit: false }]);
});
