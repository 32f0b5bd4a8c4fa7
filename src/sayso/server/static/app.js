// sayso web UI: chat, request cards, the inbox, grants and the audit log, over the REST API (/v1). No build step.
"use strict";

const $ = (id) => document.getElementById(id);
const state = { token: sessionStorage.getItem("sayso-token") || "", threadId: null, agents: [] };
const SCOPE_LABELS = { once: "Just this call", thread: "Allow for this chat", always: "Always allow" };
const when = (seconds) => (seconds ? new Date(seconds * 1000).toLocaleString() : "");

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined) node.append(child);
  }
  return node;
}

let uid = 0;
const nextId = (prefix) => `${prefix}-${++uid}`;

async function api(method, path, body) {
  const headers = { Accept: "application/json" };
  if (state.token) headers.Authorization = `Bearer ${state.token}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const data = await response.json().catch(() => null);
  if (response.status === 401) $("signin").hidden = false;
  return { ok: response.ok, status: response.status, data };
}

// who is who: nested agents read "asked by analyst for coordinator"
function agentLabel(path) {
  if (!path.includes("/")) return null;
  const parts = path.split("/");
  return `asked by ${parts[parts.length - 1]} for ${parts.slice(0, -1).join(" / ")}`;
}

// cards

function cardShell(request, title, options) {
  const headingId = nextId("card-title");
  const card = el("article", { class: "card", "aria-labelledby": headingId, "data-request-id": request.id, "data-kind": request.kind });
  card.append(el("h3", { id: headingId }, title));
  const label = agentLabel(request.agent_path);
  if (label) card.append(el("p", { class: "label" }, label));
  if (options.context === "inbox") {
    card.append(el("p", { class: "label" }, `${request.agent_path} · thread `,
      el("a", { href: `#/thread/${request.thread_id}` }, request.thread_id)));
  }
  return card;
}

function feedback(card) {
  let node = card.querySelector(".feedback");
  if (!node) {
    node = el("p", { class: "feedback", role: "alert" });
    card.append(node);
  }
  return node;
}

async function decide(card, request, body, options) {
  const buttons = card.querySelectorAll("button");
  buttons.forEach((b) => { b.disabled = true; });
  const result = await api("POST", `/v1/requests/${encodeURIComponent(request.id)}/decision`, body);
  if (result.ok && result.data.recorded === false) {
    card.classList.add("done");
    feedback(card).textContent = "Already decided: this decision had been taken already, nothing changed.";
    options.onStale?.();
    return;
  }
  if (result.ok) {
    card.classList.add("done");
    card.replaceChildren(el("h3", {}, "Decided"), el("p", { role: "status" }, `${request.tool_name}: ${body.kind}`));
    options.onDecided?.(result.data);
    return;
  }
  const problem = result.data || { title: "Error", detail: `HTTP ${result.status}` };
  const message = feedback(card);
  message.className = "feedback error";
  if (result.status === 409 || result.status === 410 || result.status === 404) {
    // Someone (another tab, person or process) got there first: the card is closed, not retried.
    card.classList.add("done");
    message.textContent = `${problem.title}: ${problem.detail}`;
    options.onStale?.();
    return;
  }
  message.textContent = `${problem.title}: ${problem.detail}`;  // refused: the request stays open
  card.querySelectorAll(".field-error").forEach((node) => { node.textContent = ""; });
  card.querySelectorAll("[aria-invalid]").forEach((node) => node.removeAttribute("aria-invalid"));
  for (const error of problem.errors || []) {
    // A form's content is refused field by field: each message goes next to its field.
    const name = error.loc?.[0] === "content" ? error.loc[1] : undefined;
    const field = name === undefined ? null : card.querySelector(`[data-field="${CSS.escape(String(name))}"]`);
    if (!field) continue;
    field.querySelector(".field-error").textContent = error.msg;
    field.querySelector("input, select")?.setAttribute("aria-invalid", "true");
  }
  buttons.forEach((b) => { b.disabled = false; });
}

function approvalCard(request, options) {
  const card = cardShell(request, `Approve ${request.tool_name}?`, options);
  if (request.hint) card.append(el("p", {}, request.hint));
  if (request.tool) {
    // What the tool's source (an MCP server) says about it.
    const about = [request.tool.title, request.tool.description].filter(Boolean).join(": ");
    if (about) card.append(el("p", { class: "label" }, `${request.tool.source || "tool"} · ${about}`));
    if (request.tool.destructive && !request.tool.read_only) card.append(el("p", { class: "error" }, "The tool's source says it may destroy data."));
  }
  if (request.subject) card.append(el("p", {}, "Covers: ", el("strong", {}, request.subject.label)));
  card.append(el("pre", { "aria-label": "Arguments" }, JSON.stringify(request.args, null, 2)));
  const scopes = request.scopes || ["once"];
  const scopeName = nextId("scope");
  if (scopes.length > 1) {
    card.append(el("fieldset", {}, el("legend", {}, "Remember"),
      scopes.map((scope, i) => {
        const id = nextId("scope-opt");
        return el("div", {}, el("input", { type: "radio", name: scopeName, id, value: scope, checked: i === 0 }),
          el("label", { for: id }, SCOPE_LABELS[scope] || scope));
      })));
  }
  const scope = () => card.querySelector(`input[name="${scopeName}"]:checked`)?.value || "once";
  const editId = nextId("edit");
  const editor = el("textarea", { id: editId, rows: 6 }, JSON.stringify(request.args, null, 2));
  const editBox = el("div", { hidden: true }, el("label", { for: editId }, "Arguments (JSON)"), editor,
    el("div", { class: "actions" }, el("button", { type: "button", class: "primary", onclick: () => {
      let edited;
      try { edited = JSON.parse(editor.value); } catch (err) {
        feedback(card).textContent = `The arguments are not valid JSON: ${err.message}`;
        return;
      }
      decide(card, request, { kind: "approve", scope: scope(), edited_args: edited }, options);
    } }, "Approve with these arguments")));
  const reasonId = nextId("reason");
  const reason = el("input", { id: reasonId, type: "text" });
  const rejectBox = el("div", { hidden: true }, el("label", { for: reasonId }, "Reason"), reason,
    el("div", { class: "actions" }, el("button", { type: "button", class: "danger", onclick: () =>
      decide(card, request, { kind: "reject", reason: reason.value.trim() || null }, options) }, "Confirm rejection")));
  card.append(el("div", { class: "actions" },
    el("button", { type: "button", class: "primary", onclick: () => decide(card, request, { kind: "approve", scope: scope() }, options) }, "Approve"),
    el("button", { type: "button", "aria-expanded": "false", onclick: (e) => {
      editBox.hidden = !editBox.hidden; e.target.setAttribute("aria-expanded", String(!editBox.hidden)); if (!editBox.hidden) editor.focus();
    } }, "Edit and approve"),
    el("button", { type: "button", class: "danger", "aria-expanded": "false", onclick: (e) => {
      rejectBox.hidden = !rejectBox.hidden; e.target.setAttribute("aria-expanded", String(!rejectBox.hidden)); if (!rejectBox.hidden) reason.focus();
    } }, "Reject")), editBox, rejectBox);
  return card;
}

function questionCard(request, options) {
  const card = cardShell(request, "A question for you", options);
  const readers = request.questions.map((question) => {
    const name = nextId("q");
    const type = question.multiple ? "checkbox" : "radio";
    const otherId = nextId("other");
    const otherTextId = nextId("other-text");
    const otherText = el("input", { type: "text", id: otherTextId, "aria-label": "Other answer" });
    const other = el("input", { type, name, id: otherId, value: "__other__" });
    otherText.addEventListener("input", () => { if (otherText.value) other.checked = true; });
    card.append(el("fieldset", {}, el("legend", {}, question.question + (question.multiple ? " (pick any)" : "")),
      question.choices.map((choice) => {
        const id = nextId("choice");
        return el("div", {}, el("input", { type, name, id, value: choice }), el("label", { for: id }, choice));
      }),
      el("div", {}, other, el("label", { for: otherId }, "Other"), " ", otherText)));
    return () => [...card.querySelectorAll(`input[name="${name}"]:checked`)]
      .map((input) => (input.value === "__other__" ? otherText.value.trim() : input.value))
      .filter((answer) => answer);
  });
  card.append(el("div", { class: "actions" },
    el("button", { type: "button", class: "primary", onclick: () => decide(card, request, { kind: "answer", answers: readers.map((read) => read()) }, options) }, "Send answer"),
    el("button", { type: "button", onclick: () => decide(card, request, { kind: "skip", reason: "the person skipped the question" }, options) }, "Skip")));
  return card;
}

function clientToolCard(request, options) {
  const card = cardShell(request, `Run ${request.tool_name} here`, options);
  if (request.description) card.append(el("p", {}, request.description));
  card.append(el("pre", { "aria-label": "Arguments" }, JSON.stringify(request.args, null, 2)));
  const resultId = nextId("result");
  const result = el("textarea", { id: resultId, rows: 4 }, "");
  const errorId = nextId("error");
  const error = el("input", { id: errorId, type: "text" });
  card.append(el("label", { for: resultId }, "Result (JSON)"), result,
    el("div", { class: "actions" }, el("button", { type: "button", class: "primary", onclick: () => {
      let value;
      try { value = JSON.parse(result.value); } catch (err) {
        feedback(card).textContent = `The result is not valid JSON: ${err.message}`;
        return;
      }
      decide(card, request, { kind: "result", value }, options);
    } }, "Send result")),
    el("label", { for: errorId }, "Error message"), error,
    el("div", { class: "actions" },
      el("button", { type: "button", class: "danger", onclick: () => decide(card, request, { kind: "error", message: error.value.trim() || "the client tool failed" }, options) }, "Send error"),
      el("button", { type: "button", onclick: () => decide(card, request, { kind: "skip" }, options) }, "Skip")));
  return card;
}

// An MCP server (or the agent's before-call hook) asks the person: a form built from the requested
// schema, or a page to visit ("Open", then "Done").
function schemaField(name, schema, required) {
  const id = nextId("field");
  const errorId = nextId("field-error");
  const label = schema.title || name;
  let input;
  if (Array.isArray(schema.enum)) {
    const names = schema.enumNames || schema.enum;
    input = el("select", { id }, required ? null : el("option", { value: "" }, "—"),
      schema.enum.map((value, i) => el("option", { value: JSON.stringify(value) }, String(names[i] ?? value))));
  } else if (schema.type === "boolean") {
    input = el("input", { id, type: "checkbox", checked: schema.default === true });
  } else if (schema.type === "integer" || schema.type === "number") {
    input = el("input", { id, type: "number", step: schema.type === "integer" ? "1" : "any", min: schema.minimum, max: schema.maximum });
  } else {
    const types = { email: "email", uri: "url", date: "date", "date-time": "datetime-local" };
    input = el("input", { id, type: types[schema.format] || "text", minlength: schema.minLength, maxlength: schema.maxLength });
  }
  input.setAttribute("aria-describedby", errorId);
  if (required) input.setAttribute("aria-required", "true");
  if (schema.default !== undefined && schema.type !== "boolean" && !Array.isArray(schema.enum)) input.value = String(schema.default);
  const node = el("div", { class: "field", "data-field": name },
    el("label", { for: id }, label + (required ? " (required)" : "")), input,
    schema.description ? el("p", { class: "muted" }, schema.description) : null,
    el("p", { class: "field-error", id: errorId, role: "alert" }));
  const read = () => {
    if (input.type === "checkbox") return input.checked;
    if (input.value === "") return undefined;
    if (input.tagName === "SELECT") return JSON.parse(input.value);
    if (input.type === "number") return Number(input.value);
    return input.value;
  };
  return { node, read };
}

function elicitationCard(request, options) {
  const asker = request.server || "A check before this call";
  const card = cardShell(request, `${asker} asks (${request.tool_name})`, options);
  card.append(el("p", {}, request.message));
  const refuse = () => [
    el("button", { type: "button", onclick: () => decide(card, request, { kind: "decline" }, options) }, "Decline"),
    el("button", { type: "button", onclick: () => decide(card, request, { kind: "cancel" }, options) }, "Cancel"),
  ];
  if (request.mode === "url") {
    let link = null;
    try {
      const url = new URL(request.url);
      if (url.protocol === "https:" || url.protocol === "http:") {
        link = el("a", { class: "button primary", href: url.href, target: "_blank", rel: "noopener noreferrer" }, "Open");
      }
      card.append(el("p", {}, "Page: ", el("code", {}, url.href)));
    } catch (err) {
      card.append(el("p", { class: "feedback error" }, `This page address cannot be opened: ${request.url}`));
    }
    card.append(el("div", { class: "actions" }, link,
      el("button", { type: "button", class: "primary", onclick: () => decide(card, request, { kind: "accept" }, options) }, "Done"),
      refuse()));
    return card;
  }
  const schema = request.requested_schema || { properties: {} };
  const required = new Set(schema.required || []);
  const fields = Object.entries(schema.properties || {}).map(([name, field]) => [name, schemaField(name, field, required.has(name))]);
  const form = el("form", { onsubmit: (e) => {
    e.preventDefault();
    const content = {};
    for (const [name, field] of fields) {
      const value = field.read();
      if (value !== undefined) content[name] = value;
    }
    decide(card, request, { kind: "accept", content }, options);
  } }, fields.map(([, field]) => field.node),
    el("div", { class: "actions" }, el("button", { type: "submit", class: "primary" }, "Submit"), refuse()));
  card.append(form);
  if (!request.durable) {
    card.append(el("p", { class: "muted" }, "The server waits for this answer on an open call; if the server restarts first, the call may not complete."));
  }
  return card;
}

function renderCard(request, options) {
  if (request.kind === "approval") return approvalCard(request, options);
  if (request.kind === "question") return questionCard(request, options);
  if (request.kind === "client_tool") return clientToolCard(request, options);
  if (request.kind === "elicitation") return elicitationCard(request, options);
  return cardShell(request, `${request.kind} request (not supported in this UI yet)`, options);
}

// chat

function entryNode(entry) {
  if (entry.role === "user" || entry.role === "assistant") return el("li", { class: entry.role }, entry.text);
  if (entry.role === "tool_call") return el("li", { class: "tool_call" }, `→ ${entry.tool_name}(${JSON.stringify(entry.args)})`);
  return el("li", { class: "tool_result" }, `← ${entry.tool_name}: ${entry.text}`);
}

function showCards(requests) {
  $("cards").replaceChildren(...requests.map((request) => renderCard(request, {
    context: "chat",
    onDecided: () => openThread(state.threadId),
    onStale: () => setTimeout(() => refreshInboxCount(), 0),
  })));
}

function setStatus(text) { $("status").textContent = text; }

async function openThread(threadId) {
  state.threadId = threadId;
  showView("chat");
  $("chat-title").textContent = `Thread ${threadId}`;
  const result = await api("GET", `/v1/threads/${encodeURIComponent(threadId)}`);
  if (result.status === 404) {
    $("transcript").replaceChildren();
    $("cards").replaceChildren();
    setStatus("No messages yet.");
    return;
  }
  if (!result.ok) { setStatus(result.data?.detail || "Could not load the thread."); return; }
  $("transcript").replaceChildren(...result.data.transcript.map(entryNode));
  const run = result.data.active_run;
  showCards(run && run.status === "paused" ? run.requests : []);
  setStatus(run && run.status === "paused" ? "Waiting for you." : "");
  markCurrentThread();
  refreshInboxCount();
}

function parseEvents(buffer, handle) {
  let index;
  while ((index = buffer.indexOf("\n\n")) >= 0) {
    const block = buffer.slice(0, index);
    buffer = buffer.slice(index + 2);
    let name = "message"; let data = "";
    for (const line of block.split("\n")) {
      if (line.startsWith("event: ")) name = line.slice(7);
      else if (line.startsWith("data: ")) data += line.slice(6);
    }
    handle(name, data ? JSON.parse(data) : null);
  }
  return buffer;
}

async function sendMessage(message) {
  if (!state.threadId) {
    const created = await api("POST", "/v1/threads", { agent: $("agent").value || null });
    if (!created.ok) { setStatus(created.data?.detail || "Could not start a thread."); return; }
    state.threadId = created.data.thread_id;
    history.replaceState(null, "", `#/thread/${state.threadId}`);
    $("chat-title").textContent = `Thread ${state.threadId}`;
  }
  $("transcript").append(entryNode({ role: "user", text: message }));
  $("cards").replaceChildren();
  $("send").disabled = true;
  setStatus("Working…");
  const headers = { "Content-Type": "application/json", Accept: "text/event-stream" };
  if (state.token) headers.Authorization = `Bearer ${state.token}`;
  const body = { message, thread_id: state.threadId };
  let assistant = null;
  try {
    const response = await fetch("/v1/runs?stream=true", { method: "POST", headers, body: JSON.stringify(body) });
    if (!response.ok) {
      const problem = await response.json().catch(() => ({}));
      if (response.status === 401) $("signin").hidden = false;
      setStatus(`${problem.title || "Error"}: ${problem.detail || response.status}`);
      return;
    }
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer = parseEvents(buffer + value, (name, data) => {
        if (name === "progress") setStatus(`Working… ${data.elapsed}s`);
        else if (name === "tool_call" || name === "tool_result") $("transcript").append(entryNode({ role: name, ...data }));
        else if (name === "text_delta") {
          if (!assistant) { assistant = entryNode({ role: "assistant", text: "" }); $("transcript").append(assistant); }
          assistant.textContent += data.delta;
        } else if (name === "run") {
          showCards(data.status === "paused" ? data.requests : []);
          setStatus(data.status === "paused" ? "Waiting for you." : data.status === "failed" ? `Failed: ${data.error}` : "");
        } else if (name === "error") setStatus(`${data.title}: ${data.detail}`);
      });
    }
  } finally {
    $("send").disabled = false;
    loadThreads();
    refreshInboxCount();
  }
}

// inbox

async function loadInbox() {
  showView("inbox");
  const params = new URLSearchParams();
  if ($("filter-agent").value) params.set("agent", $("filter-agent").value);
  if ($("filter-kind").value) params.set("kind", $("filter-kind").value);
  params.set("limit", "200");
  const result = await api("GET", `/v1/requests?${params}`);
  if (!result.ok) return;
  const requests = result.data.requests;
  $("inbox-empty").hidden = requests.length > 0;
  $("inbox-cards").replaceChildren(...requests.map((request) => renderCard(request, {
    context: "inbox", onDecided: () => refreshInboxCount(), onStale: () => refreshInboxCount(),
  })));
  setBadge(requests.length);
}

function setBadge(count) { $("inbox-count").textContent = count ? String(count) : ""; }

async function refreshInboxCount() {
  const result = await api("GET", "/v1/requests?limit=200");
  if (result.ok) setBadge(result.data.requests.length);
}

// grants

async function loadGrants() {
  showView("grants");
  const result = await api("GET", "/v1/grants");
  if (!result.ok) {
    $("grants-rows").replaceChildren();
    $("grants-status").textContent = result.data?.detail || `Could not load the grants (HTTP ${result.status}).`;
    return;
  }
  const grants = result.data.grants;
  $("grants-status").textContent = grants.length ? "" : "No remembered approvals: every gated call asks.";
  $("grants-rows").replaceChildren(...grants.map((grant) => {
    const scope = grant.scope === "thread" ? SCOPE_LABELS.thread : SCOPE_LABELS.always;
    const revoke = el("button", { type: "button", class: "danger", "aria-label": `Revoke ${grant.tool} on ${grant.subject_label}`,
      onclick: async () => {
        revoke.disabled = true;
        const revoked = await api("DELETE", `/v1/grants/${encodeURIComponent(grant.grant_id)}`);
        if (!revoked.ok && revoked.status !== 404) {
          $("grants-status").textContent = `${revoked.data?.title || "Error"}: ${revoked.data?.detail || revoked.status}`;
          revoke.disabled = false;
          return;
        }
        $("grants-status").textContent = `Revoked: ${grant.tool} on ${grant.subject_label}. The next call asks again.`;
        row.remove();
      } }, "Revoke");
    const thread = grant.thread_id ? el("a", { href: `#/thread/${grant.thread_id}` }, grant.thread_id) : "any";
    const row = el("tr", { "data-grant-id": grant.grant_id },
      el("td", {}, grant.tool), el("td", {}, grant.subject_label), el("td", {}, scope), el("td", {}, grant.principal),
      el("td", {}, thread), el("td", {}, when(grant.created_at)), el("td", {}, revoke));
    return row;
  }));
}

// audit log

const audit = { cursor: null };

function auditRow(record) {
  const body = record.body;
  const decision = body.decision ? `${body.decision}${body.scope && body.scope !== "once" ? ` (${body.scope})` : ""}` : "";
  const details = [];
  if (body.reason) details.push(`reason: ${body.reason}`);
  if (body.subject) details.push(`subject: ${body.subject}`);
  if (body.grant_id) details.push(`grant: ${body.grant_id}`);
  if (body.executed_args) details.push(`args: ${JSON.stringify(body.executed_args)}`);
  const who = body.by && body.by !== "person" ? [body.by, body.principal].filter(Boolean).join(" · ") : body.principal || "";
  return el("tr", { "data-seq": String(record.seq) },
    el("td", {}, String(record.seq)), el("td", {}, when(body.decided_at || body.at)), el("td", {}, body.event || ""),
    el("td", {}, body.tool_name || ""), el("td", {}, decision), el("td", {}, who),
    el("td", { class: "mono" }, details.join("; ")));
}

async function loadAudit(more = false) {
  showView("audit");
  if (!more) { audit.cursor = null; $("audit-rows").replaceChildren(); $("audit-result").textContent = ""; }
  const params = new URLSearchParams({ order: "desc", limit: "100" });
  if (audit.cursor !== null) params.set("cursor", String(audit.cursor));
  const result = await api("GET", `/v1/audit?${params}`);
  if (!result.ok) {
    $("audit-result").textContent = result.data?.detail || `Could not load the audit log (HTTP ${result.status}).`;
    return;
  }
  $("audit-rows").append(...result.data.records.map(auditRow));
  audit.cursor = result.data.next_cursor;
  $("audit-more").hidden = audit.cursor === null;
  if (!result.data.total) $("audit-result").textContent = "The audit log is empty.";
}

async function verifyAudit() {
  const out = $("audit-result");
  out.textContent = "Verifying…";
  const result = await api("GET", "/v1/audit/verify");
  if (!result.ok) { out.textContent = result.data?.detail || `Could not verify (HTTP ${result.status}).`; return; }
  for (const row of document.querySelectorAll("#audit-rows tr.bad")) row.classList.remove("bad");
  if (result.data.intact) {
    out.replaceChildren(el("span", { class: "ok" }, "Intact"), ` — all ${result.data.records} records chain correctly.`);
    return;
  }
  const { seq, problem } = result.data.problem;
  out.replaceChildren(el("span", { class: "bad-text" }, `Broken at record ${seq}`), `: ${problem}.`);
  document.querySelector(`#audit-rows tr[data-seq="${seq}"]`)?.classList.add("bad");
}

// navigation

const VIEWS = ["chat", "inbox", "grants", "audit"];

function showView(name) {
  for (const view of VIEWS) $(`${view}-view`).hidden = name !== view;
  for (const view of VIEWS.slice(1)) {
    if (view === name) $(`nav-${view}`).setAttribute("aria-current", "page");
    else $(`nav-${view}`).removeAttribute("aria-current");
  }
}

function markCurrentThread() {
  for (const link of document.querySelectorAll("#threads a")) {
    if (link.dataset.threadId === state.threadId) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
}

async function loadThreads() {
  const result = await api("GET", "/v1/threads?limit=50");
  if (!result.ok) return;
  $("threads").replaceChildren(...result.data.threads.map((thread) => el("li", {},
    el("a", { href: `#/thread/${thread.thread_id}`, "data-thread-id": thread.thread_id, title: thread.thread_id },
      `${thread.title || thread.thread_id}${thread.active_run_id ? " •" : ""}`))));
  markCurrentThread();
}

function newChat() {
  state.threadId = null;
  showView("chat");
  $("chat-title").textContent = "New chat";
  $("transcript").replaceChildren();
  $("cards").replaceChildren();
  setStatus("");
  markCurrentThread();
  $("message").focus();
}

function route() {
  const hash = location.hash;
  if (hash.startsWith("#/thread/")) openThread(decodeURIComponent(hash.slice(9)));
  else if (hash === "#/inbox") loadInbox();
  else if (hash === "#/grants") loadGrants();
  else if (hash === "#/audit") loadAudit();
  else newChat();
}

async function start() {
  const me = await api("GET", "/v1/me");
  if (me.ok) $("who").textContent = me.data.local_mode ? "local development mode" : `signed in as ${me.data.principal}`;
  const agents = await api("GET", "/v1/agents");
  if (agents.ok) {
    for (const agent of agents.data.agents) {
      $("agent").append(el("option", { value: agent.name, selected: agent.entry }, agent.name));
      $("filter-agent").append(el("option", { value: agent.name }, agent.name));
    }
  }
  loadThreads();
  route();
}

window.addEventListener("hashchange", route);
document.addEventListener("DOMContentLoaded", () => {
  $("new-chat").addEventListener("click", () => { if (location.hash && location.hash !== "#/") location.hash = "#/"; else newChat(); });
  $("composer").addEventListener("submit", (event) => {
    event.preventDefault();
    const message = $("message").value.trim();
    if (!message) return;
    $("message").value = "";
    sendMessage(message);
  });
  $("message").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) { event.preventDefault(); $("composer").requestSubmit(); }
  });
  $("inbox-filters").addEventListener("submit", (event) => { event.preventDefault(); loadInbox(); });
  $("audit-verify").addEventListener("click", verifyAudit);
  $("audit-refresh").addEventListener("click", () => loadAudit());
  $("audit-more").addEventListener("click", () => loadAudit(true));
  $("signin").addEventListener("submit", (event) => {
    event.preventDefault();
    state.token = $("token").value;
    sessionStorage.setItem("sayso-token", state.token);
    $("signin").hidden = true;
    start();
  });
  start();
});
