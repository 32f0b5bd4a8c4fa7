// sayso web UI, shared helpers: DOM building, the REST client, times and the words for decisions. No build step.
"use strict";

const $ = (id) => document.getElementById(id);
const state = { token: sessionStorage.getItem("sayso-token") || "", me: null, threadId: null, titles: {}, firstAgent: {} };

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined && child !== false) node.append(child);
  }
  return node;
}

let uid = 0;
const nextId = (prefix) => `${prefix}-${++uid}`;

function authHeaders(extra = {}) {
  const headers = { ...extra };
  if (state.token) headers.Authorization = `Bearer ${state.token}`;
  return headers;
}

// A JSON integer a JavaScript number cannot hold (beyond 2**53, such as an account or reference number) is kept as
// its own digits (`JSON.rawJSON`): shown, compared and sent back as written, never rounded to a neighbour.
function exactNumber(value, source) {
  const unsafe = typeof value === "number" && !Number.isSafeInteger(value) && /^-?\d+$/.test(String(source));
  return unsafe && JSON.rawJSON ? JSON.rawJSON(String(source)) : value;
}

const parseJSON = (text) => JSON.parse(text, (key, value, context) => exactNumber(value, context?.source));
const isRawNumber = (value) => !!JSON.isRawJSON?.(value);

async function api(method, path, body, extraHeaders = {}) {
  const headers = authHeaders({ Accept: "application/json", ...extraHeaders });
  // Every call that changes something is JSON, body or not: the server refuses other types (no cross-site forms).
  if (method !== "GET" || body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (err) {
    return { ok: false, status: 0, data: { title: "Offline", detail: "the server did not answer" } };
  }
  const data = await response.text().then(parseJSON).catch(() => null);
  if (response.status === 401) $("signin").hidden = false;
  return { ok: response.ok, status: response.status, data };
}

// The first `pages` pages of a listing (`key` its items), following `next_cursor`: a list that shows that many pages
// reads them all again, so what closed drops out and what opened on them comes in.
async function apiPages(path, params, key, pages) {
  const items = [];
  let cursor = null;
  let total = null;
  for (let page = 0; page < pages; page++) {
    const query = new URLSearchParams(params);
    if (cursor) query.set("cursor", cursor);
    const result = await api("GET", `${path}?${query}`);
    if (!result.ok) return result;
    items.push(...result.data[key]);
    ({ next_cursor: cursor, total = null } = result.data);
    if (!cursor) break;
  }
  return { ok: true, items, cursor, total };
}

const problemText = (result) => `${result.data?.title || "Error"}: ${result.data?.detail || `HTTP ${result.status}`}`;

// times: RFC 3339 from the API, shown relative ("3 min ago") with the exact time on hover

const RELATIVE = new Intl.RelativeTimeFormat(undefined, { numeric: "auto", style: "short" });

function relative(iso, now = Date.now()) {
  const seconds = Math.round((Date.parse(iso) - now) / 1000);
  const size = Math.abs(seconds);
  if (size < 45) return seconds <= 0 ? "just now" : "in a moment";
  if (size < 3600) return RELATIVE.format(Math.round(seconds / 60), "minute");
  if (size < 86400) return RELATIVE.format(Math.round(seconds / 3600), "hour");
  if (size < 7 * 86400) return RELATIVE.format(Math.round(seconds / 86400), "day");
  return new Date(iso).toLocaleDateString();
}

function timeNode(iso, prefix = "") {
  if (!iso) return null;
  const node = el("time", { datetime: iso, title: new Date(iso).toLocaleString(), "data-prefix": prefix });
  node.textContent = prefix + relative(iso);
  return node;
}

// Relative times age: refresh their words every half minute.
setInterval(() => {
  for (const node of document.querySelectorAll("time[datetime]")) {
    node.textContent = (node.dataset.prefix || "") + relative(node.getAttribute("datetime"));
  }
}, 30_000);

// who decided what, through which interface

const SCOPE_LABELS = { once: "Just this call", thread: "Allow for this chat", always: "Always allow" };
const SCOPE_REACH = { thread: "for this chat", always: "always" };
const VIA_LABELS = { python: "Python", cli: "CLI", rest: "REST", web: "web UI", a2a: "A2A", "ag-ui": "AG-UI", mcp: "MCP", email: "email", slack: "Slack" };
const VERBS = {
  approve: "Approved", reject: "Rejected", skip: "Skipped", answer: "Answered", result: "Result given",
  error: "Error reported", provide: "Answered", accept: "Accepted", decline: "Declined", cancel: "Dismissed",
  expired: "Expired",
};

const whoName = (principal) => (principal && state.me && principal === state.me ? "you" : principal);

// "Approved by alice (CLI)", "Skipped by sayso", "Expired", "Allowed by a remembered approval"
function outcomeTitle({ decision, by, principal, via, edited }) {
  if (decision === "expired") return "Expired: nobody decided in time";
  if (by === "permission") return "Allowed by a remembered approval";
  const verb = decision === "approve" && edited ? "Edited and approved" : VERBS[decision] || decision;
  if (by === "system") return `${verb} by sayso`;
  if (by === "service") return `${verb} by the service`;
  const who = whoName(principal);
  return `${verb}${who ? ` by ${who}` : ""}${via ? ` (${VIA_LABELS[via] || via})` : ""}`;
}

const show = (value) => (typeof value === "string" ? value : JSON.stringify(value));

// An edit, field by field: name  notes.txt → todo.md
function editList(edits) {
  return el("ul", { class: "edits", "aria-label": "Changes" }, edits.map((change) => el("li", {},
    el("code", {}, change.field), " ",
    "before" in change ? el("del", {}, show(change.before)) : el("em", {}, "(added)"),
    " → ",
    "after" in change ? el("ins", {}, show(change.after)) : el("em", {}, "(removed)"))));
}

// The details of a decision line or a closed card: scope, reason, edits, answers, grant, expiry.
function outcomeDetails(record) {
  const parts = [];
  if (record.by === "permission") {
    const reach = SCOPE_REACH[record.scope] || record.scope;
    parts.push(el("span", {}, `${record.subject_label || "this call"} (${reach}, given by ${whoName(record.principal)})`,
      record.grant_id ? el("span", { class: "muted" }, ` · ${record.grant_id}`) : null));
  } else if (record.decision === "approve" && record.scope && record.scope !== "once") {
    parts.push(`remembered ${SCOPE_REACH[record.scope]}${record.subject_label ? `: ${record.subject_label}` : ""}`);
  }
  if (record.reason) parts.push(el("q", {}, record.reason));
  if (record.message) parts.push(el("q", {}, record.message));
  if (record.answers) {
    parts.push(el("span", {}, record.answers.map((a, i) =>
      `${i ? "; " : ""}${a.question} → ${Array.isArray(a.answer) ? a.answer.join(", ") : show(a.answer)}`)));
  }
  // A form's answer (an object) reads as its fields, below; anything else inline.
  const fields = record.value !== null && typeof record.value === "object" && !Array.isArray(record.value);
  // With the schema it answers (`schema`), a choice reads by the title the person picked.
  if (record.value !== undefined && record.value !== null && !fields) {
    parts.push(record.schema ? renderValue(record.value, record.schema) : el("code", {}, show(record.value)));
  }
  const nodes = [];
  if (parts.length) nodes.push(el("p", { class: "detail" }, parts.flatMap((p, i) => (i ? [" · ", p] : [p]))));
  if (fields) nodes.push(el("div", { class: "answered", "aria-label": "Answer" }, renderValue(record.value, record.schema)));
  if (record.edits?.length) nodes.push(editList(record.edits));
  return nodes;
}

// The answers to a question request, paired with their questions as transcript lines show them.
function answerRecord(request, answers) {
  if (!answers || !request.questions) return undefined;
  return request.questions.map((q, i) => ({ question: q.question, answer: answers[i] || [] }));
}

// The schema an answer to `request` follows (a workflow input's, an elicitation's form): what its choices are titled.
function answerSchema(request) {
  if (request?.kind === "input") return request.response_schema || null;
  if (request?.kind === "elicitation") return request.requested_schema || null;
  return null;
}

// A decision as REST's request state says it (`GET /v1/requests/{id}`, the live `request.closed`).
function stateOutcome(data) {
  const decision = data.decision || {};
  const kind = data.status === "expired" ? "expired" : decision.kind;
  return {
    decision: kind, by: data.decided_by, principal: data.principal, via: data.via, at: data.decided,
    scope: decision.scope, reason: decision.reason, message: decision.message, value: decision.value ?? decision.content,
    answers: answerRecord(data.request, decision.answers), edited: !!decision.edited_args,
    edits: decision.edited_args ? diffArgs(data.request.args, decision.edited_args) : null,
    closedWithoutDecision: data.status === "closed", schema: answerSchema(data.request),
  };
}

const REDACTED = "«redacted»";

// The fields an edit changed (as the server's transcript line says it, for a card closed here).
function diffArgs(before, after) {
  const changes = [];
  for (const field of new Set([...Object.keys(before || {}), ...Object.keys(after || {})])) {
    const had = before && field in before;
    const has = after && field in after;
    if (had && has && JSON.stringify(before[field]) === JSON.stringify(after[field])) continue;
    const change = { field };
    const hidden = had && before[field] === REDACTED;  // a redacted field stays hidden after the edit too
    if (had) change.before = before[field];
    if (has) change.after = hidden ? REDACTED : after[field];
    changes.push(change);
  }
  return changes;
}
