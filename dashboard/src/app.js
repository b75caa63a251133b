// The dashboard page: signs in with a token, reads the live stream and the
// /ui/api endpoints, and draws each view. Everything shown is put in the
// page with textContent (never as HTML), and the page's Content-Security-
// Policy allows scripts from /ui only: no inline code, nothing from
// elsewhere. The chart library is uPlot (global `uPlot`, vendored).

import {
  addDecision,
  countdown,
  formatMs,
  highlight,
  matchesFilter,
  parseSse,
} from "/ui/logic.js";

const state = {
  token: "",
  approverToken: "",
  decisions: [],
  lost: 0,
  selected: null,
  view: "live",
  charts: {},
  pending: [],
  timers: [],
};

const $ = (id) => document.getElementById(id);

/** An element with attributes and children (strings become text). */
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) {
      continue;
    }
    if (k === "class") {
      e.className = v;
    } else if (k.startsWith("on")) {
      e.addEventListener(k.slice(2), v);
    } else {
      e.setAttribute(k, v === true ? "" : String(v));
    }
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null) {
      continue;
    }
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

/** Replaces `node`'s children, leaving out the null ones. */
function fill(node, ...children) {
  node.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined));
}

function headers(token) {
  const h = { Accept: "application/json" };
  const t = token === undefined ? state.token : token;
  if (t) {
    h.Authorization = `Bearer ${t}`;
  }
  return h;
}

/** GET or POST JSON; throws an Error with the server's message on failure. */
async function api(path, options = {}) {
  const r = await fetch(path, {
    method: options.method || "GET",
    headers: { ...headers(options.token), ...(options.body ? { "Content-Type": "application/json" } : {}) },
    body: options.body ? JSON.stringify(options.body) : undefined,
  });
  let body = null;
  try {
    body = await r.json();
  } catch {
    body = null;
  }
  if (!r.ok) {
    const message = body && body.error ? body.error.message : `${r.status} ${r.statusText}`;
    const err = new Error(message);
    err.status = r.status;
    err.body = body;
    throw err;
  }
  return body;
}

function actionBadge(action) {
  return el("span", { class: `badge action-${action}` }, action);
}

function time(ts) {
  const d = new Date(ts);
  return Number.isNaN(d.getTime()) ? ts : d.toLocaleTimeString([], { hour12: false });
}

// ---- sign in -------------------------------------------------------------

async function signIn(ev) {
  ev.preventDefault();
  const token = $("token").value.trim();
  $("login-error").hidden = true;
  try {
    await api("/ui/api/overview", { token });
  } catch (e) {
    $("login-error").textContent =
      e.status === 401 ? "That token was refused (it must be server.auth_token)." : e.message;
    $("login-error").hidden = false;
    return;
  }
  state.token = token;
  $("login").hidden = true;
  $("tabs").hidden = false;
  document.body.classList.add("signed-in");
  show("live");
  stream();
  state.timers.push(setInterval(refresh, 2000));
  state.timers.push(setInterval(tick, 1000));
}

function show(view) {
  state.view = view;
  for (const b of document.querySelectorAll("#tabs button")) {
    b.classList.toggle("active", b.dataset.view === view);
  }
  for (const s of document.querySelectorAll("section.view")) {
    s.hidden = s.id !== `view-${view}`;
  }
  refresh();
}

function refresh() {
  const v = state.view;
  const done = (p) => p.catch((e) => console.warn(`refresh ${v}: ${e.message}`));
  if (v === "rules") {
    done(loadHits());
  } else if (v === "latency" || v === "health") {
    done(loadOverview());
  } else if (v === "approvals") {
    done(loadApprovals());
  }
}

// ---- live decisions --------------------------------------------------------

async function stream() {
  for (;;) {
    setStreamState("connecting…");
    try {
      const r = await fetch("/ui/api/stream", { headers: headers() });
      if (!r.ok || !r.body) {
        throw new Error(`${r.status}`);
      }
      setStreamState("live");
      const reader = r.body.getReader();
      const decoder = new TextDecoder();
      let rest = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) {
          break;
        }
        const parsed = parseSse(rest + decoder.decode(value, { stream: true }));
        rest = parsed.rest;
        for (const e of parsed.events) {
          onStreamEvent(e);
        }
      }
    } catch (e) {
      console.warn(`stream: ${e.message}`);
    }
    setStreamState("reconnecting…");
    await new Promise((ok) => setTimeout(ok, 2000));
  }
}

function setStreamState(s) {
  const lost = state.lost ? ` · ${state.lost} lost (too slow)` : "";
  $("stream-state").textContent = `stream: ${s}${lost}`;
  $("stream-state").dataset.state = s;
}

function onStreamEvent(e) {
  if (e.event === "decision") {
    let d;
    try {
      d = JSON.parse(e.data);
    } catch {
      return;
    }
    state.decisions = addDecision(state.decisions, d);
    renderDecisions();
  } else if (e.event === "lost") {
    try {
      state.lost += JSON.parse(e.data).lost || 0;
    } catch {
      state.lost += 1;
    }
    setStreamState("live");
  }
}

function filter() {
  return {
    action: $("f-action").value,
    stage: $("f-stage").value,
    door: $("f-door").value,
    rule: $("f-rule").value.trim(),
    session: $("f-session").value.trim(),
    framework: $("f-framework").value.trim(),
  };
}

function renderDecisions() {
  const f = filter();
  const rows = state.decisions.filter((d) => matchesFilter(d, f));
  const tbody = $("decisions").tBodies[0];
  tbody.replaceChildren(
    ...rows.map((d) =>
      el(
        "tr",
        {
          class: `decision${state.selected === d.seq ? " selected" : ""}`,
          "data-seq": d.seq,
          onclick: () => openDecision(d),
        },
        el("td", {}, time(d.ts)),
        el("td", {}, actionBadge(d.action)),
        el("td", { class: "rule-ids" }, (d.matches || []).map((m) => m.rule_id).join(", ")),
        el("td", {}, d.stage),
        el("td", {}, d.door, d.framework ? ` · ${d.framework}` : ""),
        el("td", {}, d.tool_name || ""),
        el("td", { class: "mono" }, d.session_id || ""),
      ),
    ),
  );
  $("decisions-empty").hidden = rows.length > 0;
  if (state.decisions.length > 0) {
    $("decisions-empty").textContent = "No decision passes the filter.";
  }
}

/** Pretty JSON with every occurrence of `needles` marked. */
function jsonWithMarks(value, needles) {
  const text = JSON.stringify(value, null, 2);
  const quoted = needles.map((n) => JSON.stringify(n).slice(1, -1));
  return el(
    "pre",
    { class: "json" },
    highlight(text, quoted).map((p) => (p.hit ? el("mark", {}, p.text) : p.text)),
  );
}

function openDecision(d) {
  state.selected = d.seq;
  renderDecisions();
  const matches = d.matches || [];
  const needles = matches.map((m) => m.match).filter((m) => typeof m === "string");
  const panel = $("decision");
  fill(
    panel,
    el("h3", {}, actionBadge(d.action), ` ${d.stage} · ${d.door}`, d.tool_name ? ` · ${d.tool_name}` : ""),
    el(
      "p",
      { class: "muted" },
      `${d.ts} · ${d.elapsed_ms} ms · ${d.backend} rules ${String(d.rules_fingerprint).slice(0, 12)}`,
      d.masked ? " · secrets masked" : "",
    ),
    d.reasons && d.reasons.length ? el("ul", { class: "reasons" }, d.reasons.map((r) => el("li", {}, r))) : null,
    el("h4", {}, "Matched rules"),
    matches.length
      ? el(
          "table",
          { class: "matches" },
          el("thead", {}, el("tr", {}, el("th", {}, "rule"), el("th", {}, "action"), el("th", {}, "match"))),
          el(
            "tbody",
            {},
            matches.map((m) =>
              el(
                "tr",
                {},
                el("td", {}, el("a", { href: "#", class: "rule-link", onclick: (ev) => linkRule(ev, m.rule_id) }, m.rule_id)),
                el("td", {}, actionBadge(m.action), m.monitor ? " (monitor)" : ""),
                el("td", { class: "mono" }, m.match === null || m.match === undefined ? "—" : m.match),
              ),
            ),
          ),
        )
      : el("p", { class: "muted" }, "No rule matched."),
    d.failure ? el("p", { class: "error" }, `${d.failure.kind}: ${d.failure.message} (fail_mode ${d.failure.fail_mode})`) : null,
    el("h4", {}, "Event", d.masked ? " (secrets masked as in the audit log)" : ""),
    jsonWithMarks(d.event, needles),
    d.rewritten_event ? el("h4", {}, "Rewritten event") : null,
    d.rewritten_event ? jsonWithMarks(d.rewritten_event, ["[REDACTED]"]) : null,
    d.approval ? el("p", {}, `Held for approval ${d.approval.id} (${d.approval.status})`) : null,
  );
  panel.hidden = false;
}

function linkRule(ev, id) {
  ev.preventDefault();
  show("rules");
  openRule(id);
}

// ---- rules -----------------------------------------------------------------

async function loadHits() {
  const w = $("window").value;
  const h = await api(`/ui/api/hits?window=${encodeURIComponent(w)}`);
  const from = new Date(h.from * 1000).toLocaleTimeString([], { hour12: false });
  $("window-note").textContent = h.complete
    ? `${h.rules.reduce((n, r) => n + r.hits, 0)} hits in the window`
    : `history starts at ${from} (when the dashboard first asked); ${h.never_fired} rules never fired`;
  $("categories").tBodies[0].replaceChildren(
    ...h.categories
      .slice()
      .sort((a, b) => b.hits - a.hits || a.category.localeCompare(b.category))
      .map((c) => el("tr", {}, el("td", {}, c.category), el("td", {}, c.rules), el("td", {}, c.hits))),
  );
  $("rules").tBodies[0].replaceChildren(
    ...h.rules.map((r) =>
      el(
        "tr",
        { class: r.top ? "top" : r.never_fired ? "never" : "" },
        el(
          "td",
          {},
          el("a", { href: "#", class: "rule-link", onclick: (ev) => { ev.preventDefault(); openRule(r.id); } }, r.id),
          r.top ? el("span", { class: "tag top" }, "most") : null,
          r.never_fired ? el("span", { class: "tag never" }, "never") : null,
        ),
        el("td", {}, r.category),
        el("td", {}, r.engine),
        el("td", {}, actionBadge(r.action)),
        el("td", { class: "num" }, r.hits),
        el("td", { class: "num" }, r.total),
      ),
    ),
  );
  drawHits(h.series);
}

function chartWidth(container) {
  return Math.max(320, container.clientWidth || 800);
}

function drawHits(series) {
  const box = $("hits-chart");
  const data = [series.t, series.hits];
  if (state.charts.hits) {
    state.charts.hits.setData(data);
    return;
  }
  state.charts.hits = new uPlot(
    {
      width: chartWidth(box),
      height: 180,
      title: "Rule hits per sample interval",
      series: [{}, { label: "hits", stroke: "#c0392b", fill: "rgba(192,57,43,0.15)", width: 2 }],
      axes: [{}, { label: "hits" }],
    },
    data,
    box,
  );
}

async function openRule(id) {
  const panel = $("rule");
  panel.hidden = false;
  panel.replaceChildren(el("p", { class: "muted" }, `Loading ${id}…`));
  let d;
  try {
    d = await api(`/ui/api/rules/${encodeURIComponent(id)}`);
  } catch (e) {
    panel.replaceChildren(el("p", { class: "error" }, e.message));
    return;
  }
  const row = (k, v) => el("tr", {}, el("th", {}, k), el("td", {}, v === null || v === undefined ? "—" : v));
  fill(
    panel,
    el("h3", { class: "rule-title" }, d.id),
    el("p", {}, d.title),
    d.description ? el("p", { class: "muted" }, d.description) : null,
    el(
      "table",
      { class: "definition" },
      el(
        "tbody",
        {},
        row("engine", d.engine),
        row("evaluator", d.evaluator),
        row("source", d.source),
        row("stages", (d.stages || []).join(", ")),
        row("action", d.action),
        row("priority", d.priority),
        row("category", d.category),
        row("reason", d.reason),
        d.monitor ? row("monitor", "yes: reported, never blocks") : null,
      ),
    ),
    el("h4", {}, "Atoms (what is scanned, and how)"),
    (d.atoms || []).length
      ? el(
          "table",
          { class: "atoms" },
          el("thead", {}, el("tr", {}, el("th", {}, "field"), el("th", {}, "path"), el("th", {}, "DFA cost"), el("th", {}, "pattern"))),
          el(
            "tbody",
            {},
            d.atoms.map((a) =>
              el(
                "tr",
                {},
                el("td", {}, a.field),
                el("td", {}, el("span", { class: `tag path-${a.path}` }, a.path)),
                el("td", {}, a.dfa_shard_bytes ? `${(a.dfa_shard_bytes / 1024).toFixed(1)} KiB shard, ${a.dfa_shard_atoms} atoms` : "—"),
                el("td", { class: "mono" }, a.pattern),
              ),
            ),
          ),
        )
      : el("p", { class: "muted" }, "No text atoms (a typed check, CEL or SQL condition)."),
    d.sql ? el("pre", { class: "json" }, d.sql.query) : null,
    d.approval ? el("pre", { class: "json" }, JSON.stringify(d.approval, null, 2)) : null,
  );
}

// ---- latency and health ---------------------------------------------------

async function loadOverview() {
  const o = await api("/ui/api/overview");
  if (state.view === "latency") {
    renderLatency(o.latency);
  } else {
    renderHealth(o);
  }
}

function renderLatency(lat) {
  const doors = Object.entries(lat.doors);
  const row = (name, v) =>
    el(
      "tr",
      { class: v.count ? "" : "idle" },
      el("td", {}, name),
      el("td", { class: "num" }, v.count),
      el("td", { class: "num" }, formatMs(v.mean_ms)),
      el("td", { class: "num" }, formatMs(v.p50_ms)),
      el("td", { class: "num" }, formatMs(v.p90_ms)),
      el("td", { class: "num" }, formatMs(v.p99_ms)),
    );
  $("latency").tBodies[0].replaceChildren(...doors.map(([n, v]) => row(n, v)), row("all doors", lat.all));
  const select = $("latency-door");
  for (const [n] of doors) {
    if (![...select.options].some((o) => o.value === n)) {
      select.append(el("option", { value: n }, n));
    }
  }
  const chosen = select.value === "all" ? lat.all : lat.doors[select.value] || lat.all;
  drawLatency(chosen.buckets);
}

function drawLatency(buckets) {
  const box = $("latency-chart");
  const labels = buckets.map((b) => (b.le_ms === "+Inf" ? "more" : `≤ ${formatMs(b.le_ms)}`));
  const data = [buckets.map((_, i) => i), buckets.map((b) => b.count)];
  if (state.charts.latency) {
    state.charts.latency.setData(data);
    return;
  }
  state.charts.latency = new uPlot(
    {
      width: chartWidth(box),
      height: 220,
      title: "Decisions per evaluation-time bucket",
      scales: { x: { time: false } },
      series: [
        { label: "bucket", value: (_, i) => (i === null ? "" : labels[i] || "") },
        { label: "decisions", stroke: "#2c6fbb", fill: "rgba(44,111,187,0.35)", paths: uPlot.paths.bars({ size: [0.7, 60] }) },
      ],
      axes: [{ values: (_, ticks) => ticks.map((t) => labels[t] || ""), space: 60 }, { label: "decisions" }],
    },
    data,
    box,
  );
}

function counts(id, entries) {
  $(id).tBodies[0].replaceChildren(
    ...entries.map(([k, v]) => el("tr", {}, el("th", {}, k), el("td", { class: "num" }, String(v)))),
  );
}

function renderHealth(o) {
  const h = o.health;
  const card = (k, v, cls) => el("div", { class: `card ${cls || ""}` }, el("div", { class: "k" }, k), el("div", { class: "v" }, v));
  $("health-cards").replaceChildren(
    card("status", h.status, "ok"),
    card("mode", h.mode),
    card("backend", h.backend),
    card("rules fingerprint", h.rules_fingerprint, "mono"),
    card("rules", `${h.rules} in ${h.evaluators} evaluators`),
    card("fail_mode", h.fail_mode),
    card("version", h.version),
    card("reload", h.last_reload ? `${h.last_reload.status} at ${h.last_reload.at}` : (h.reload_watch ? "watching files" : "on request"),
      h.last_reload && h.last_reload.status === "failed" ? "bad" : ""),
  );
  // A reload that failed (a watched edit that does not compile) says why
  // until the next one succeeds.
  if (h.last_reload && h.last_reload.status === "failed") {
    $("reload-errors").textContent = h.last_reload.error || "reload failed; the running rules were kept";
    $("reload-errors").hidden = false;
  }
  counts("decision-counts", Object.entries(o.decisions));
  counts("audit-counts", [["enabled", o.audit.enabled ? "yes" : "no"], ...Object.entries(o.audit).filter(([k]) => k !== "enabled")]);
  counts("webhook-counts", [["enabled", o.webhook.enabled ? "yes" : "no"], ...Object.entries(o.webhook).filter(([k]) => k !== "enabled")]);
  counts("other-counts", [
    ["reloads ok", o.reloads.ok],
    ["reloads failed", o.reloads.failed],
    ...Object.entries(o.approvals).map(([k, v]) => [`approvals ${k}`, v]),
    ["live viewers", o.feed.viewers],
    ["live entries lost", o.feed.lost],
  ]);
  const b = o.budgets;
  counts("budget-counts", b ? [
    ...b.limits.map((l) => [`${l.id} (${l.measure})`, l.limit]),
    ["input tokens", b.input_tokens],
    ["output tokens", b.output_tokens],
    ["cost", b.cost.toFixed(4)],
    ...Object.entries(b.blocked).map(([k, v]) => [`blocked by ${k}`, v]),
    ...Object.entries(b.warnings).map(([k, v]) => [`warned on ${k}`, v]),
    ["unpriced answers", b.unpriced_answers],
    ["ledger errors", b.ledger_errors],
  ] : [["enabled", "no"]]);
}

async function reload() {
  $("reload").disabled = true;
  $("reload-state").textContent = "reloading…";
  $("reload-errors").hidden = true;
  try {
    const r = await api("/admin/reload", { method: "POST" });
    const info = r.reload || {};
    $("reload-state").textContent = `reloaded: ${info.rules_fingerprint || info.fingerprint || JSON.stringify(info)}`;
  } catch (e) {
    $("reload-state").textContent = e.status === 409 ? "reload refused" : "reload failed; the running rules were kept";
    $("reload-errors").textContent = e.message;
    $("reload-errors").hidden = false;
  } finally {
    $("reload").disabled = false;
    refresh();
  }
}

// ---- approvals ---------------------------------------------------------------

function readToken() {
  return state.approverToken || state.token;
}

async function loadApprovals() {
  let pending;
  let all;
  try {
    pending = await api("/approvals?status=pending&limit=100", { token: readToken() });
    all = await api("/approvals?limit=100", { token: readToken() });
  } catch (e) {
    $("approvals-error").textContent = e.message;
    $("approvals-error").hidden = false;
    return;
  }
  $("approvals-error").hidden = true;
  renderPending(pending.approvals);
  $("history").tBodies[0].replaceChildren(
    ...all.approvals
      .filter((a) => a.status !== "pending")
      .map((a) =>
        el(
          "tr",
          { "data-id": a.id },
          el("td", {}, a.decided_at ? time(a.decided_at) : time(a.expires_at)),
          el("td", {}, el("span", { class: `badge status-${a.status}` }, a.status)),
          el("td", {}, a.decided_by || (a.status === "expired" ? "(nobody: expired)" : "—")),
          el("td", {}, a.comment || ""),
          el("td", {}, (a.rule_ids || []).join(", ")),
          el("td", {}, a.reason),
        ),
      ),
  );
}

function renderPending(list) {
  const box = $("pending");
  const known = new Set(list.map((a) => a.id));
  // Keep cards (and a comment being typed) that are still pending.
  for (const c of [...box.children]) {
    if (!known.has(c.dataset.id)) {
      c.remove();
    }
  }
  for (const a of list) {
    if (box.querySelector(`[data-id="${CSS.escape(a.id)}"]`)) {
      continue;
    }
    const comment = el("input", { type: "text", class: "comment", placeholder: "comment (optional)" });
    const result = el("span", { class: "result muted" });
    const decide = async (verb) => {
      if (!state.approverToken) {
        result.textContent = "enter an approver token above to decide";
        result.className = "result error";
        return;
      }
      try {
        await api(`/approvals/${encodeURIComponent(a.id)}/${verb}`, {
          method: "POST",
          token: state.approverToken,
          body: comment.value.trim() ? { comment: comment.value.trim() } : {},
        });
        result.textContent = verb === "approve" ? "approved" : "denied";
        loadApprovals();
      } catch (e) {
        result.textContent = e.message;
        result.className = "result error";
      }
    };
    box.append(
      el(
        "div",
        { class: "approval", "data-id": a.id, "data-expires": a.expires_at },
        el("div", { class: "approval-head" }, el("strong", {}, (a.rule_ids || []).join(", ")), " ", el("span", { class: "countdown" }, countdown(a.expires_at, Date.now())), el("span", { class: "muted" }, ` · ${a.id}`)),
        el("p", {}, a.reason || ""),
        a.approvers && a.approvers.length ? el("p", { class: "muted" }, `approvers: ${a.approvers.join(", ")} · on timeout: ${a.on_timeout}`) : el("p", { class: "muted" }, `any approver · on timeout: ${a.on_timeout}`),
        el("pre", { class: "json" }, JSON.stringify(a.event, null, 2)),
        el(
          "div",
          { class: "decide" },
          comment,
          el("button", { type: "button", class: "approve", onclick: () => decide("approve") }, "Approve"),
          el("button", { type: "button", class: "deny", onclick: () => decide("deny") }, "Deny"),
          result,
        ),
      ),
    );
  }
  $("pending-empty").hidden = list.length > 0;
}

function tick() {
  for (const c of document.querySelectorAll(".approval")) {
    const cd = c.querySelector(".countdown");
    if (cd) {
      cd.textContent = countdown(c.dataset.expires, Date.now());
    }
  }
}

function useApprover(ev) {
  ev.preventDefault();
  state.approverToken = $("approver-token").value.trim();
  for (const r of document.querySelectorAll(".approval .result")) {
    r.textContent = "";
    r.className = "result muted";
  }
  $("approver-state").textContent = state.approverToken
    ? "Approver token set: Approve and Deny decide as its approver."
    : "Deciding needs an approver's own token; the API token can only read.";
  loadApprovals();
}

// ---- wiring --------------------------------------------------------------------

function wire() {
  $("login-form").addEventListener("submit", signIn);
  for (const b of document.querySelectorAll("#tabs button")) {
    b.addEventListener("click", () => show(b.dataset.view));
  }
  $("filters").addEventListener("input", renderDecisions);
  $("filters").addEventListener("submit", (ev) => ev.preventDefault());
  $("window").addEventListener("change", () => loadHits());
  $("latency-door").addEventListener("change", () => loadOverview());
  $("reload").addEventListener("click", reload);
  $("approver-form").addEventListener("submit", useApprover);
  $("token").focus();
}

wire();
