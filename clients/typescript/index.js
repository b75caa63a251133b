// parallax-client: the Parallax HTTP API for Node agents (Node 20's fetch,
// no dependencies). Types: index.d.ts. The API contract it follows:
// docs/openapi.json (`parallax docs api`); every route it calls is in ROUTES,
// and the tests check each one against that document.

/** Where `parallax serve` listens by default. */
export const DEFAULT_URL = "http://127.0.0.1:9920";

/**
 * Every request this client makes: method and path template. All calls go
 * through this table, so checking it against docs/openapi.json checks the
 * client.
 */
export const ROUTES = Object.freeze({
  evaluate: Object.freeze(["POST", "/evaluate"]),
  health: Object.freeze(["GET", "/health"]),
  metrics: Object.freeze(["GET", "/metrics"]),
  reload: Object.freeze(["POST", "/admin/reload"]),
  listApprovals: Object.freeze(["GET", "/approvals"]),
  getApproval: Object.freeze(["GET", "/approvals/{id}"]),
  approve: Object.freeze(["POST", "/approvals/{id}/approve"]),
  deny: Object.freeze(["POST", "/approvals/{id}/deny"]),
});

/** Anything this client throws. */
export class ParallaxError extends Error {
  constructor(message, options) {
    super(message, options);
    this.name = "ParallaxError";
  }
}

/** The server answered with its JSON error (`{"error": {code, message}}`). */
export class ApiError extends ParallaxError {
  constructor(status, code, message, body) {
    super(`Parallax answered ${status} ${code}: ${message}`);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
    this.body = body;
  }
}

/** The server could not be reached (or did not answer in time). */
export class Unavailable extends ParallaxError {
  constructor(url, cause) {
    super(
      `Parallax is not reachable at ${url} (${cause?.message ?? cause}); start it with ` +
        "`parallax serve` (or pass the URL it listens on), or construct the client with " +
        "`failClosed: false` to let calls through while it is down",
      { cause },
    );
    this.name = "Unavailable";
    this.url = url;
  }
}

/**
 * A call Parallax refused: a rule blocked it, an approver denied it, or its
 * approval was still pending when the wait ran out.
 */
export class Denied extends ParallaxError {
  constructor(decision, message) {
    const reason = message ?? (decision.reasons.join("; ") || `Parallax: ${decision.action}`);
    super(reason);
    this.name = "Denied";
    this.reason = reason;
    this.ruleIds = decision.ruleIds;
    this.decision = decision;
  }
}

/** The verdict on one event (`POST /evaluate`'s answer), with helpers. */
export class Decision {
  constructor(raw) {
    const r = raw && typeof raw === "object" ? raw : {};
    this.raw = r;
    this.action = typeof r.action === "string" ? r.action : "block";
    this.blocked = r.blocked === true || this.action === "block";
    this.reasons = Array.isArray(r.reasons) ? r.reasons.map(String) : [];
    this.results = Array.isArray(r.results) ? r.results : [];
    // A redaction or a rule's transforms: the event as it should go on.
    this.rewrittenEvent = r.rewritten_event ?? r.redacted_event ?? null;
    /** `retrieval.after`: the indices of the documents to leave out. */
    this.dropDocuments = Array.isArray(r.drop_documents)
      ? r.drop_documents.filter((i) => Number.isInteger(i) && i >= 0)
      : [];
    this.approval = r.approval ?? null;
    this.failure = r.failure ?? null;
    this.elapsedMs = typeof r.elapsed_ms === "number" ? r.elapsed_ms : 0;
    /** Set on the allow a `failClosed: false` client answers while the server is down. */
    this.unavailable = r.unavailable === true;
  }

  /** `documents` (as sent for `retrieval.after`) without the dropped ones, in their order. */
  kept(documents) {
    const dropped = new Set(this.dropDocuments);
    return documents.filter((_, i) => !dropped.has(i));
  }

  /** parlok's four kinds: allow (detect included), rewrite, approve (still held), deny. */
  get kind() {
    if (this.action === "block") return "deny";
    if (this.action === "approve") return "approve";
    if (this.rewrittenEvent) return "rewrite";
    return "allow";
  }

  /** The call may go ahead (possibly rewritten). */
  get allowed() {
    return this.kind === "allow" || this.kind === "rewrite";
  }

  /** The ids of the rules that matched, in chain order. */
  get ruleIds() {
    return this.results.map((r) => r.rule_id).filter((id) => typeof id === "string");
  }

  /** The reasons as one line, for an error or a log. */
  get reason() {
    return this.reasons.join("; ");
  }
}

/** A client of one Parallax server. */
export class Parallax {
  /**
   * @param {string} [url] the server (default http://127.0.0.1:9920)
   * @param {object} [options] token, timeoutMs, failClosed, approvalWaitSecs
   */
  constructor(url = DEFAULT_URL, options = {}) {
    const env = globalThis.process?.env ?? {};
    this.url = String(url || DEFAULT_URL).replace(/\/+$/, "");
    this.token = options.token ?? env.PARALLAX_AUTH_TOKEN ?? undefined;
    this.timeoutMs = options.timeoutMs ?? 5000;
    this.failClosed = options.failClosed ?? true;
    this.approvalWaitSecs = options.approvalWaitSecs ?? 120;
  }

  /** One request of ROUTES: the parsed JSON (or text), or a thrown error. */
  async request(route, { params = {}, query = {}, body, token, waitSecs = 0 } = {}) {
    const [method, template] = ROUTES[route] ?? [];
    if (!method) throw new ParallaxError(`unknown route \`${route}\``);
    const path = template.replace(/\{(\w+)\}/g, (_, k) => encodeURIComponent(String(params[k])));
    const qs = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null) qs.set(k, String(v));
    const target = `${this.url}${path}${qs.size ? `?${qs}` : ""}`;
    const headers = { accept: "application/json" };
    const bearer = token ?? this.token;
    if (bearer) headers.authorization = `Bearer ${bearer}`;
    if (body !== undefined) headers["content-type"] = "application/json";
    let res;
    let text;
    try {
      res = await fetch(target, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(this.timeoutMs + waitSecs * 1000),
      });
      text = await res.text();
    } catch (e) {
      throw new Unavailable(this.url, e);
    }
    const json = parseJson(text);
    if (!res.ok) {
      const err = json?.error;
      throw new ApiError(
        res.status,
        typeof err?.code === "string" ? err.code : "http_error",
        typeof err?.message === "string" ? err.message : text.slice(0, 200),
        json,
      );
    }
    return json ?? text;
  }

  /**
   * `POST /evaluate`: the verdict on one event. `wait` (seconds) holds the
   * answer while an approval the event asked for is pending.
   */
  async evaluate(event, { wait = 0 } = {}) {
    try {
      const raw = await this.request("evaluate", {
        body: event,
        query: { wait: wait > 0 ? wait : undefined },
        waitSecs: wait,
      });
      return new Decision(raw);
    } catch (e) {
      if (e instanceof Unavailable && !this.failClosed) {
        return new Decision({
          action: "allow",
          blocked: false,
          reasons: [],
          results: [],
          unavailable: true,
          failure: { kind: "unavailable", message: e.message, fail_mode: "open" },
        });
      }
      throw e;
    }
  }

  /** A tool call about to run (`tool.before`). */
  checkTool(name, args = {}, options = {}) {
    return this.evaluate(
      withContext({ stage: "tool.before", tool_name: name, tool_args: args }, options),
      { wait: options.wait ?? 0 },
    );
  }

  /** A user message before the model sees it (`message.before`). */
  checkMessage(text, options = {}) {
    return this.evaluate(withContext({ stage: "message.before", message_text: text }, options));
  }

  /** A tool's result before the model sees it (`tool.after`). */
  checkResult(name, result, options = {}) {
    return this.evaluate(
      withContext(
        { stage: "tool.after", tool_name: name, tool_args: options.args, tool_result: result },
        options,
      ),
    );
  }

  /** Text about to be written to the agent's memory (`memory.before`). */
  checkMemory(text, options = {}) {
    const event = { stage: "memory.before", memory_text: text };
    if (options.key !== undefined) event.memory_key = options.key;
    return this.evaluate(withContext(event, options));
  }

  /**
   * A retrieval query before it is sent (`retrieval.before`), or with
   * `documents` (strings or `{text, source, score, id, metadata}`) what it
   * returned (`retrieval.after`): `decision.dropDocuments` names the ones to
   * leave out, `decision.kept(documents)` gives the rest.
   */
  checkRetrieval(query, documents, options = {}) {
    const event = { stage: documents === undefined ? "retrieval.before" : "retrieval.after" };
    if (query !== undefined) event.query = query;
    if (documents !== undefined) {
      event.documents = documents.map((d) => (typeof d === "string" ? { text: d } : d));
    }
    return this.evaluate(withContext(event, options));
  }

  /** `GET /health`. */
  health() {
    return this.request("health");
  }

  /** `GET /metrics`: Prometheus text. */
  metrics() {
    return this.request("metrics");
  }

  /** `POST /admin/reload`. */
  reload() {
    return this.request("reload");
  }

  /** `GET /approvals?status=&limit=`: the approvals, newest first. */
  async listApprovals({ status, limit, token } = {}) {
    const r = await this.request("listApprovals", { query: { status, limit }, token });
    return r.approvals;
  }

  /** `GET /approvals/{id}?wait=`: one approval, waiting while it is pending. */
  getApproval(id, { wait = 0, token } = {}) {
    return this.request("getApproval", {
      params: { id },
      query: { wait: wait > 0 ? wait : undefined },
      token,
      waitSecs: wait,
    });
  }

  /** `POST /approvals/{id}/approve` with an approver's own token. */
  approve(id, { token, comment } = {}) {
    return this.request("approve", { params: { id }, body: comment ? { comment } : {}, token });
  }

  /** `POST /approvals/{id}/deny` with an approver's own token. */
  deny(id, { token, comment } = {}) {
    return this.request("deny", { params: { id }, body: comment ? { comment } : {}, token });
  }
}

function parseJson(text) {
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

function withContext(event, { sessionId, userId, channel, metadata } = {}) {
  if (sessionId !== undefined) event.session_id = sessionId;
  if (userId !== undefined) event.user_id = userId;
  if (channel !== undefined) event.channel = channel;
  if (metadata !== undefined) event.metadata = metadata;
  for (const k of Object.keys(event)) if (event[k] === undefined) delete event[k];
  return event;
}

/**
 * Wraps an async tool function `fn(args)` so every call asks Parallax first:
 * allowed calls run as they are, rewritten (redacted) arguments are what the
 * tool gets, a held call waits up to `approvalWaitSecs` for the human, and a
 * denied one throws `Denied` with the reason and rule ids (the tool never
 * runs). With `checkResult: true` the result is judged too (`tool.after`):
 * a redaction rewrites it, a block throws.
 *
 * @param {Parallax} client
 * @param {Function} fn an async function taking one arguments object
 * @param {object} [options] name (default fn.name), sessionId, approvalWaitSecs, checkResult
 */
export function guard(client, fn, options = {}) {
  if (!(client instanceof Parallax)) throw new TypeError("guard(client, fn): client is a Parallax");
  if (typeof fn !== "function") throw new TypeError("guard(client, fn): fn is a function");
  const name = options.name ?? fn.name;
  if (!name) throw new TypeError("guard(client, fn): name the tool ({ name }) or use a named function");
  const wait = options.approvalWaitSecs ?? client.approvalWaitSecs;
  const guarded = async function (args = {}, ...rest) {
    const decision = await client.checkTool(name, args, { ...options, wait });
    if (decision.kind === "deny") throw new Denied(decision);
    if (decision.kind === "approve") {
      const id = decision.approval?.id ?? "?";
      throw new Denied(
        decision,
        `approval ${id} is still pending after ${wait} s: ${decision.reason || "held for a human"}`,
      );
    }
    const callArgs = decision.rewrittenEvent?.tool_args ?? args;
    const result = await fn.call(this, callArgs, ...rest);
    if (!options.checkResult) return result;
    const after = await client.checkResult(name, result, { ...options, args: callArgs });
    if (after.kind === "deny") throw new Denied(after);
    return after.rewrittenEvent && "tool_result" in after.rewrittenEvent
      ? after.rewrittenEvent.tool_result
      : result;
  };
  Object.defineProperty(guarded, "name", { value: name });
  return guarded;
}
