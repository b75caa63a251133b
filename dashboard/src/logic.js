// The dashboard's logic that is not drawing: filtering the live list,
// reading the server-sent events out of a fetch stream, countdowns and
// number formats. Kept apart from app.js (which touches the DOM) so node's
// test runner checks it: tests/browser/logic.test.mjs.

/** The filter keys the live list offers, each a field of a decision line. */
export const FILTER_KEYS = ["action", "rule", "stage", "session", "framework", "door"];

/** The live list keeps this many decisions, newest first. */
export const MAX_DECISIONS = 500;

/**
 * Whether `d` (a decision line from the stream) passes `filter`. Empty
 * values pass everything; action, stage and door must be equal; rule,
 * session and framework are case-insensitive substrings (a rule filter
 * passes a decision where any matched rule's id contains it).
 */
export function matchesFilter(d, filter) {
  const f = filter || {};
  const eq = (want, have) => !want || want === have;
  const has = (want, have) =>
    !want || (typeof have === "string" && have.toLowerCase().includes(want.toLowerCase()));
  if (!eq(f.action, d.action) || !eq(f.stage, d.stage) || !eq(f.door, d.door)) {
    return false;
  }
  if (!has(f.session, d.session_id) || !has(f.framework, d.framework)) {
    return false;
  }
  if (f.rule) {
    const matches = Array.isArray(d.matches) ? d.matches : [];
    if (!matches.some((m) => has(f.rule, m.rule_id))) {
      return false;
    }
  }
  return true;
}

/** `list` with `d` in front, at most `max` long (the oldest fall off). */
export function addDecision(list, d, max = MAX_DECISIONS) {
  const out = [d, ...list];
  if (out.length > max) {
    out.length = max;
  }
  return out;
}

/**
 * Splits server-sent-event text into complete events. Returns the events
 * (`{event, data}`; `data` joined from its `data:` lines) and the
 * unfinished rest, to be prefixed to the next chunk. Comment lines
 * (keep-alives) are skipped.
 */
export function parseSse(buffer) {
  const events = [];
  const text = buffer.replace(/\r\n/g, "\n");
  let start = 0;
  for (;;) {
    const end = text.indexOf("\n\n", start);
    if (end < 0) {
      break;
    }
    const block = text.slice(start, end);
    start = end + 2;
    let event = "message";
    const data = [];
    for (const line of block.split("\n")) {
      if (line.startsWith(":") || line === "") {
        continue;
      }
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) {
        value = value.slice(1);
      }
      if (field === "event") {
        event = value;
      } else if (field === "data") {
        data.push(value);
      }
    }
    if (data.length > 0) {
      events.push({ event, data: data.join("\n") });
    }
  }
  return { events, rest: text.slice(start) };
}

/** Time left until `expiresAt` (RFC 3339) at `nowMs`: "4m 05s", "12s" or "expired". */
export function countdown(expiresAt, nowMs) {
  const left = Math.floor((Date.parse(expiresAt) - nowMs) / 1000);
  if (!Number.isFinite(left)) {
    return "?";
  }
  if (left <= 0) {
    return "expired";
  }
  const h = Math.floor(left / 3600);
  const m = Math.floor((left % 3600) / 60);
  const s = left % 60;
  const pad = (n) => String(n).padStart(2, "0");
  if (h > 0) {
    return `${h}h ${pad(m)}m`;
  }
  return m > 0 ? `${m}m ${pad(s)}s` : `${s}s`;
}

/** A duration in milliseconds for a table: µs below 1 ms; "—" for none. */
export function formatMs(v) {
  if (v === null || v === undefined) {
    return "—";
  }
  if (v === "+Inf") {
    return "> 100 ms";
  }
  if (v < 1) {
    return `${Math.round(v * 1000 * 10) / 10} µs`;
  }
  return `${Math.round(v * 100) / 100} ms`;
}

/**
 * `text` cut into pieces around each occurrence of any of `needles`
 * (longest first where they overlap): `[{text, hit}]`, for marking a
 * rule's match inside the event it was found in.
 */
export function highlight(text, needles) {
  const wanted = (needles || []).filter((n) => typeof n === "string" && n.length > 0);
  wanted.sort((a, b) => b.length - a.length);
  const pieces = [];
  let i = 0;
  let plain = "";
  while (i < text.length) {
    const n = wanted.find((w) => text.startsWith(w, i));
    if (n) {
      if (plain) {
        pieces.push({ text: plain, hit: false });
        plain = "";
      }
      pieces.push({ text: n, hit: true });
      i += n.length;
    } else {
      plain += text[i];
      i += 1;
    }
  }
  if (plain) {
    pieces.push({ text: plain, hit: false });
  }
  return pieces;
}
