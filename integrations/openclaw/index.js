// Parallax for OpenClaw: a native plugin whose hooks ask the Parallax server
// (`POST /evaluate`) and do what it says.
//
//   before_tool_call  tool.before      block  -> {block: true, blockReason}
//                                      redact -> {params: <rewritten arguments>}
//                                      approve -> the server waits (?wait=) for the
//                                                 human's decision and answers with
//                                                 the outcome; still pending ->
//                                                 {requireApproval: ...} (OpenClaw asks)
//   after_tool_call   tool.after       recorded in the audit log; a block is logged
//                                      (OpenClaw has already run the tool)
//   message_received  message.before   recorded in the audit log (OpenClaw's
//                                      event: {from, content, messageId,
//                                      senderId, sessionKey...}; ctx:
//                                      {channelId, conversationId, sessionKey})
//
// "No opinion" (allow, detect) is `undefined`: OpenClaw goes on as usual.
// When the server cannot be reached (or answers with an error) the call is
// blocked — this plugin has no rules of its own to fall back on — unless
// the config says `failClosed: false`, which lets it run with a warning.

export const DEFAULTS = Object.freeze({
  url: "http://127.0.0.1:9920",
  timeoutMs: 2000,
  approvalWaitSecs: 120,
  failClosed: true,
});

/** The plugin's settings: OpenClaw's `plugins.entries.parallax.config`. */
export function settings(config = {}, env = process.env) {
  const s = { ...DEFAULTS, ...(config ?? {}) };
  s.token = s.token || env.PARALLAX_AUTH_TOKEN || undefined;
  s.url = String(s.url).replace(/\/+$/, "");
  return s;
}

/** The Parallax event for an OpenClaw hook's (event, ctx). */
export function toEvent(stage, event = {}, ctx = {}) {
  const e = { stage };
  // Tool hooks carry ctx.sessionId; message hooks only the session key
  // (in ctx, and in the event).
  const session = ctx.sessionId ?? ctx.sessionKey ?? event.sessionKey;
  if (session) e.session_id = String(session);
  const tool = event.toolName ?? ctx.toolName;
  if (tool) e.tool_name = tool;
  if (stage !== "message.before" && event.params !== undefined) e.tool_args = event.params;
  if (stage === "tool.after") {
    e.tool_result = resultText(event.result) ?? (event.error ? String(event.error) : null);
  }
  if (stage === "message.before" && typeof event.content === "string") {
    e.message_text = event.content;
  }
  const meta = { framework: "openclaw" };
  const put = (key, value) => {
    if (value !== undefined && value !== null && value !== "") meta[key] = String(value);
  };
  put("agent_id", ctx.agentId);
  put("tool_call_id", event.toolCallId);
  if (stage === "message.before") {
    put("from", event.from);
    put("sender_id", event.senderId);
    put("message_id", event.messageId);
    put("thread_id", event.threadId);
    put("channel_id", ctx.channelId);
    put("conversation_id", ctx.conversationId);
  }
  e.metadata = meta;
  return e;
}

function resultText(result) {
  if (result == null) return null;
  if (typeof result === "string") return result;
  if (Array.isArray(result.content)) {
    return result.content
      .filter((c) => c && c.type === "text" && typeof c.text === "string")
      .map((c) => c.text)
      .join("\n");
  }
  return JSON.stringify(result);
}

/** `rule: reason; …` for the text the model reads. */
export function why(report) {
  const action = report.action;
  const rules = (report.results ?? [])
    .filter((r) => r.action === action)
    .map((r) => (r.reason ? `${r.rule_id}: ${r.reason}` : r.rule_id));
  const reasons = rules.length ? rules : (report.reasons ?? []);
  return reasons.join("; ") || (report.failure?.message ?? `action ${action}`);
}

/** The server's report on `event`, or throws why there is none. */
export async function evaluate(s, event, { fetchImpl = fetch } = {}) {
  const wait = Math.max(0, Math.floor(s.approvalWaitSecs ?? 0));
  const url = `${s.url}/evaluate${wait > 0 ? `?wait=${wait}` : ""}`;
  const headers = {
    "content-type": "application/json",
    "x-parallax-door": "hook",
    "x-parallax-framework": "openclaw",
  };
  if (s.token) headers.authorization = `Bearer ${s.token}`;
  const signal = AbortSignal.timeout(s.timeoutMs + wait * 1000);
  const resp = await fetchImpl(url, {
    method: "POST",
    headers,
    body: JSON.stringify(event),
    signal,
  });
  const text = await resp.text();
  if (!resp.ok) throw new Error(`${s.url} answered ${resp.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

/** What `before_tool_call` returns for a report. */
export function beforeToolCallResult(report, s) {
  switch (report.action) {
    case "allow":
    case "detect":
      return undefined;
    case "redact": {
      const args = report.redacted_event?.tool_args;
      if (args && typeof args === "object") return { params: args };
      return {
        block: true,
        blockReason: `Parallax blocked this tool call: its arguments hold text that must be redacted and could not be rewritten (${why(report)})`,
      };
    }
    case "approve": {
      const id = report.approval?.id ?? "unknown";
      return {
        requireApproval: {
          title: "Parallax: a human approval is needed",
          description: `Parallax approval ${id} is still pending: ${why(report)}`,
          severity: "warning",
          timeoutMs: Math.max(1, s.approvalWaitSecs) * 1000,
          timeoutBehavior: "deny",
        },
      };
    }
    default:
      // block, and any action this plugin does not know: not stricter
      // than block, never let through unjudged.
      return { block: true, blockReason: `Parallax blocked this tool call: ${why(report)}` };
  }
}

/** The hook handlers, for `api.on` (and the tests). */
export function handlers(config, { logger = console, fetchImpl = fetch, env = process.env } = {}) {
  const s = settings(config, env);
  const unreachable = (err) => {
    const msg = `the Parallax server at ${s.url} did not answer (${err?.message ?? err})`;
    return msg;
  };
  return {
    async before_tool_call(event, ctx) {
      let report;
      try {
        report = await evaluate(s, toEvent("tool.before", event, ctx), { fetchImpl });
      } catch (err) {
        const msg = unreachable(err);
        if (s.failClosed !== false) {
          return {
            block: true,
            blockReason: `Parallax blocked this tool call: ${msg}, and the plugin fails closed (failClosed: false lets calls run unchecked instead)`,
          };
        }
        logger.warn?.(`parallax: ${msg}; the tool call goes ahead unchecked (failClosed: false)`);
        return undefined;
      }
      return beforeToolCallResult(report, s);
    },
    async after_tool_call(event, ctx) {
      try {
        const report = await evaluate(
          { ...s, approvalWaitSecs: 0 },
          toEvent("tool.after", event, ctx),
          { fetchImpl },
        );
        if (report.action === "block") {
          logger.warn?.(`parallax: the result of ${event.toolName} matched a block rule: ${why(report)}`);
        }
      } catch (err) {
        logger.warn?.(`parallax: ${unreachable(err)}`);
      }
      return undefined;
    },
    async message_received(event, ctx) {
      try {
        await evaluate({ ...s, approvalWaitSecs: 0 }, toEvent("message.before", event, ctx), {
          fetchImpl,
        });
      } catch (err) {
        logger.warn?.(`parallax: ${unreachable(err)}`);
      }
      return undefined;
    },
  };
}

export default {
  id: "parallax",
  name: "Parallax",
  description: "Runtime security for AI agents: every tool call asks the Parallax server first",
  register(api) {
    const h = handlers(api.pluginConfig ?? {}, { logger: api.logger ?? console });
    // First among the tool hooks: a block must win over plugins that
    // would otherwise run or rewrite the call.
    api.on("before_tool_call", h.before_tool_call, { priority: 1000 });
    api.on("after_tool_call", h.after_tool_call);
    api.on("message_received", h.message_received);
  },
};
