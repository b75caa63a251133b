// Types of parallax-client (index.js). The shapes follow docs/openapi.json.

/** Where in an agent's lifecycle an event was sent from. */
export type Stage =
  | "message.before"
  | "tool.before"
  | "tool.after"
  | "params.before"
  | "response.after"
  | "memory.before"
  | "retrieval.before"
  | "retrieval.after";

/** One retrieved document (`retrieval.after`). */
export interface RetrievedDocument {
  text: string;
  source?: string;
  score?: number;
  id?: string | number;
  metadata?: unknown;
}

/** A verdict, weakest first. */
export type Action = "allow" | "detect" | "redact" | "approve" | "block";

/** parlok's decision kinds. */
export type DecisionKind = "allow" | "rewrite" | "approve" | "deny";

/** One lifecycle event (docs/FIELDS.md); unknown fields are rejected. */
export interface Event {
  stage: Stage;
  session_id?: string;
  channel?: string;
  user_id?: string;
  /** Epoch seconds, or an RFC 3339 string. */
  timestamp?: number | string;
  message_text?: string;
  tool_name?: string;
  tool_args?: unknown;
  tool_result?: unknown;
  model?: string;
  params?: Record<string, unknown>;
  metadata?: unknown;
  response_text?: string;
  memory_key?: string;
  memory_text?: string;
  query?: string;
  documents?: RetrievedDocument[];
}

/** One rule that matched. */
export interface RuleResult {
  evaluator: string;
  rule_id: string;
  title: string;
  action: Exclude<Action, "allow">;
  priority: "low" | "medium" | "high" | "critical";
  monitor?: boolean;
  reason: string;
  match: string | null;
  author?: string;
}

export type ApprovalStatus = "pending" | "approved" | "denied" | "expired";

/** A held call's approval. */
export interface ApprovalTicket {
  id: string;
  status: ApprovalStatus;
  created_at: string;
  expires_at: string;
  reason: string;
  rule_id?: string | null;
  rule_ids: string[];
  approvers: string[];
  on_timeout: "deny" | "allow";
  outcome?: "allow" | "deny" | null;
  decided_by?: string | null;
  decided_at?: string | null;
  comment?: string | null;
}

/** The whole approval record (`GET /approvals/{id}`). */
export interface Approval extends ApprovalTicket {
  event: Record<string, unknown>;
  session_id?: string | null;
}

export interface EvaluationFailure {
  kind: string;
  message: string;
  fail_mode: "open" | "closed";
}

/** `POST /evaluate`'s answer as sent. */
export interface RawDecision {
  action: Action;
  blocked: boolean;
  would_block?: boolean;
  reasons: string[];
  results: RuleResult[];
  redacted?: string;
  redacted_event?: Event;
  rewritten_event?: Event;
  /** `retrieval.after`: the indices of the documents to leave out. */
  drop_documents?: number[];
  elapsed_ms: number;
  failure?: EvaluationFailure;
  approval?: ApprovalTicket;
}

export interface Health {
  status: "ok";
  mode: "enforce" | "monitor";
  evaluators: number;
  rules: number;
  version: string;
  backend: "baked" | "dynamic";
  rules_fingerprint: string;
}

export declare const DEFAULT_URL: string;

export type RouteName =
  | "evaluate"
  | "health"
  | "metrics"
  | "reload"
  | "listApprovals"
  | "getApproval"
  | "approve"
  | "deny";

/** Every request the client makes: [method, path template]. */
export declare const ROUTES: Readonly<Record<RouteName, readonly [string, string]>>;

export declare class ParallaxError extends Error {}

export declare class ApiError extends ParallaxError {
  readonly status: number;
  readonly code: string;
  readonly body: unknown;
}

export declare class Unavailable extends ParallaxError {
  readonly url: string;
}

export declare class Denied extends ParallaxError {
  constructor(decision: Decision, message?: string);
  readonly reason: string;
  readonly ruleIds: string[];
  readonly decision: Decision;
}

export declare class Decision {
  constructor(raw: RawDecision | Record<string, unknown>);
  readonly raw: RawDecision;
  readonly action: Action;
  readonly blocked: boolean;
  readonly reasons: string[];
  readonly results: RuleResult[];
  /** The event as it should go on (a redaction or a rule's transforms). */
  readonly rewrittenEvent: Event | null;
  /** `retrieval.after`: the indices of the documents to leave out. */
  readonly dropDocuments: number[];
  /** `documents` without the dropped ones, in their order. */
  kept<T>(documents: readonly T[]): T[];
  readonly approval: ApprovalTicket | null;
  readonly failure: EvaluationFailure | null;
  readonly elapsedMs: number;
  /** The allow a `failClosed: false` client answers while the server is down. */
  readonly unavailable: boolean;
  readonly kind: DecisionKind;
  readonly allowed: boolean;
  readonly ruleIds: string[];
  readonly reason: string;
}

export interface ClientOptions {
  /** `server.auth_token`; default PARALLAX_AUTH_TOKEN. */
  token?: string;
  /** Per request, plus any approval wait; default 5000. */
  timeoutMs?: number;
  /** Throw `Unavailable` when the server is down (default); false: allow. */
  failClosed?: boolean;
  /** How long `guard` waits for a human on a held call; default 120. */
  approvalWaitSecs?: number;
}

export interface EventContext {
  sessionId?: string;
  userId?: string;
  channel?: string;
  metadata?: unknown;
}

export declare class Parallax {
  constructor(url?: string, options?: ClientOptions);
  readonly url: string;
  readonly token: string | undefined;
  readonly timeoutMs: number;
  readonly failClosed: boolean;
  readonly approvalWaitSecs: number;
  evaluate(event: Event, options?: { wait?: number }): Promise<Decision>;
  checkTool(name: string, args?: unknown, options?: EventContext & { wait?: number }): Promise<Decision>;
  checkMessage(text: string, options?: EventContext): Promise<Decision>;
  checkResult(name: string, result: unknown, options?: EventContext & { args?: unknown }): Promise<Decision>;
  /** Text about to be written to the agent's memory (`memory.before`). */
  checkMemory(text: string, options?: EventContext & { key?: string }): Promise<Decision>;
  /** A retrieval query (`retrieval.before`), or with `documents` what it returned (`retrieval.after`). */
  checkRetrieval(
    query: string | undefined,
    documents?: Array<RetrievedDocument | string>,
    options?: EventContext,
  ): Promise<Decision>;
  health(): Promise<Health>;
  metrics(): Promise<string>;
  reload(): Promise<{ status: "reloaded"; reload: Record<string, unknown> }>;
  listApprovals(options?: { status?: ApprovalStatus; limit?: number; token?: string }): Promise<Approval[]>;
  getApproval(id: string, options?: { wait?: number; token?: string }): Promise<Approval>;
  approve(id: string, options?: { token?: string; comment?: string }): Promise<Approval>;
  deny(id: string, options?: { token?: string; comment?: string }): Promise<Approval>;
}

export interface GuardOptions extends EventContext {
  /** The tool's name; default the function's name. */
  name?: string;
  /** How long a held call waits for a human; default the client's. */
  approvalWaitSecs?: number;
  /** Judge the result too (`tool.after`): redactions rewrite it, a block throws. */
  checkResult?: boolean;
}

/** `fn` behind Parallax: denied calls throw `Denied` and never run. */
export declare function guard<A, R>(
  client: Parallax,
  fn: (args: A) => Promise<R>,
  options?: GuardOptions,
): (args: A) => Promise<R>;
