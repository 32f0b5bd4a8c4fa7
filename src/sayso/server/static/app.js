// sayso web UI: chat, the inbox, grants and the audit log over the REST API (/v1), kept live by /v1/events.
// Helpers are in ui.js, request cards in cards.js, the transcript in transcript.js, live updates in live.js.
"use strict";

// Run `work` once at a time; a call made while it runs makes it run once more afterwards.
function coalesce(work) {
  let running = null; let again = false;
  const run = async () => {
    if (running) { again = true; return running; }
    running = (async () => {
      do { again = false; await work(); } while (again);
    })();
    try { await running; } finally { running = null; }
  };
  return run;
}

// The line under the chat; `working` adds the spinner (and aria-busy) while a run works.
function setStatus(text, working = false) {
  $("status").textContent = text;
  $("status").classList.toggle("working", working);
  $("transcript").setAttribute("aria-busy", String(working));
}

// chat

const chatCtx = { context: "chat", onDecided: () => { refreshThread(); refreshInboxCount(); } };

// The threads whose run this page is streaming: their page is drawn from the stream until it ends, and only while
// shown (the person may open another thread meanwhile, which is drawn from the server as usual).
const streaming = new Set();

// A thread shows its newest `pages` pages of lines; Older messages adds one, and a refresh reads as many again.
// `bottom`: the next drawing scrolls to the newest line (a thread just opened); `older`: it adds lines above the
// ones the person reads, who stays on them.
const TRANSCRIPT_PAGE = 100;
const transcriptView = { pages: 1, bottom: true, older: false };

// The thread, its transcript the newest `pages` pages of lines, oldest first (GET /v1/threads/{id} pages backwards).
async function readThread(threadId, pages) {
  const path = `/v1/threads/${encodeURIComponent(threadId)}`;
  const first = await api("GET", `${path}?limit=${TRANSCRIPT_PAGE}`);
  if (!first.ok) return first;
  let { transcript: lines, next_cursor: cursor } = first.data;
  for (let page = 1; page < pages && cursor; page++) {
    const older = await api("GET", `${path}?${new URLSearchParams({ limit: String(TRANSCRIPT_PAGE), cursor })}`);
    if (!older.ok) return older;
    lines = [...older.data.transcript, ...lines];
    cursor = older.data.next_cursor;
  }
  return { ...first, data: { ...first.data, transcript: lines, next_cursor: cursor } };
}

const atBottom = () => window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 40;

const refreshThread = coalesce(async () => {
  const threadId = state.threadId;
  if (!threadId || streaming.has(threadId)) return;
  const result = await readThread(threadId, transcriptView.pages);
  if (threadId !== state.threadId || streaming.has(threadId)) return;
  if (result.status === 404) {
    renderTranscript([]);
    // A thread this page started is stored with its first message, until which it is found nowhere. Any other
    // id is one no thread has or one the person may not see: the server answers both alike, and so does the page,
    // without a composer that would only be refused.
    const started = threadId in state.firstAgent;
    $("composer").hidden = !started;
    if (started) {
      reconcileCards($("cards"), [], chatCtx);
      setStatus("No messages yet.");
      return;
    }
    $("cards").replaceChildren();
    $("chat-title").textContent = "No such thread";
    $("chat-meta").replaceChildren();
    setStatus("No thread you may see has this id. Start a new chat, or open one of your threads.");
    return;
  }
  if (!result.ok) { setStatus(result.data?.detail || "Could not load the thread."); return; }
  $("composer").hidden = false;
  const thread = result.data;
  if (thread.title) state.titles[threadId] = thread.title;
  $("chat-title").textContent = thread.title || "New chat";
  $("chat-meta").replaceChildren(...(thread.created ? [`${thread.agent} · started `, timeNode(thread.created)] : []));
  const workflow = state.agents?.[thread.agent]?.kind === "workflow";
  $("message").placeholder = workflow ? `A new message starts ${thread.agent} over` : `Message ${thread.agent}`;
  const follow = transcriptView.bottom || atBottom();
  const fromBottom = document.documentElement.scrollHeight - window.scrollY;
  renderTranscript(thread.transcript);
  $("transcript-more").hidden = !thread.next_cursor;
  const run = thread.active_run;
  reconcileCards($("cards"), run && run.status === "paused" ? run.requests : [], chatCtx);
  // One record per decision: a receipt card (a workflow input's answer too) gives way once the transcript holds that
  // decision's line, unless it tells this page's person that their own answer came too late (another tab or person
  // decided first).
  const recorded = new Set(thread.transcript.filter((e) => e.role === "decision").map((e) => e.decision?.request_id));
  for (const card of $("cards").querySelectorAll("article.card[data-closed]:not([data-note])")) {
    if (recorded.has(card.dataset.requestId)) removeCard(card);
  }
  setStatus(!run ? "" : run.status === "paused" ? "Waiting for you." : run.status === "running" ? "Working… (started elsewhere)" : "",
    run?.status === "running");
  // At the newest line when opened or followed there; on the same lines when older ones came in above them.
  if (transcriptView.older) window.scrollTo(0, document.documentElement.scrollHeight - fromBottom);
  else if (follow) window.scrollTo(0, document.documentElement.scrollHeight);
  Object.assign(transcriptView, { bottom: false, older: false });
  markCurrentThread();
});

// A card that gives way hands the focus it held to the next card (its heading), else to the message box: never to
// the page's <body>, from where a keyboard user would tab through the page from the top again.
function removeCard(card) {
  const focused = holdsFocus(card);
  const later = [...$("cards").querySelectorAll("article.card")]
    .filter((other) => card.compareDocumentPosition(other) & Node.DOCUMENT_POSITION_FOLLOWING);
  card.remove();
  if (!focused) return;
  const heading = later[0]?.querySelector("h3");
  if (heading) {
    heading.tabIndex = -1;
    heading.focus();
  } else {
    $("message").focus();
  }
}

function openThread(threadId) {
  if (state.threadId !== threadId) {
    Object.assign(transcriptView, { pages: 1, bottom: true, older: false });
    $("transcript-more").hidden = true;
    $("cards").replaceChildren();
    $("transcript").replaceChildren();
    $("chat-title").textContent = state.titles[threadId] || "Thread";
    $("chat-meta").replaceChildren();
  }
  state.threadId = threadId;
  hideSkipWarning();
  $("send").disabled = streaming.has(threadId);
  if (streaming.has(threadId)) setStatus("Working…", true);
  $("workflow-hint").hidden = true;
  showView("chat");
  watchLive(threadId);
  refreshThread();
  refreshInboxCount();
}

const openCards = () => [...$("cards").querySelectorAll("article.card:not([data-closed])")];

function showSkipWarning(count) {
  $("skip-text").textContent = count === 1
    ? "Sending this message skips the open request above: the agent reads that you moved on, and the call does not run."
    : `Sending this message skips the ${count} open requests above: the agent reads that you moved on, and none of them runs.`;
  $("skip-warning").hidden = false;
  $("skip-send").focus();
}

function hideSkipWarning() { $("skip-warning").hidden = true; }

function submitMessage(confirmed) {
  const message = $("message").value.trim();
  if (!message) return;
  const waiting = openCards().length;
  if (waiting && !confirmed) { showSkipWarning(waiting); return; }
  hideSkipWarning();
  $("message").value = "";
  document.body.classList.remove("threads-open");  // on a phone, the thread list folds away for the answer
  $("threads-toggle").setAttribute("aria-expanded", "false");
  sendMessage(message);
}

async function sendMessage(message) {
  if (!state.threadId) {
    const created = await api("POST", "/v1/threads", { agent: $("agent").value || null });
    if (!created.ok) { setStatus(created.data?.detail || "Could not start a thread."); return; }
    state.threadId = created.data.thread_id;
    state.titles[state.threadId] = message.slice(0, 80);
    // A new thread's agent (or workflow) goes with its first message, which stores the thread: kept until one is
    // taken, so a message sent again after a refusal still goes to the agent picked.
    state.firstAgent[state.threadId] = created.data.agent;
    history.replaceState(null, "", `#/thread/${state.threadId}`);
    watchLive(state.threadId);
  }
  if (!$("transcript").children.length) $("chat-title").textContent = message.slice(0, 80);
  const threadId = state.threadId;
  const agent = state.firstAgent[threadId];
  const shown = () => state.threadId === threadId;
  streaming.add(threadId);
  $("transcript").append(entryNode({ role: "user", text: message, at: new Date().toISOString() }));
  $("cards").replaceChildren();  // the open ones are skipped by this message, the receipts are in the transcript
  $("send").disabled = true;
  setStatus("Working…", true);
  $("workflow-hint").hidden = true;
  const headers = authHeaders({ "Content-Type": "application/json", Accept: "text/event-stream", "Sayso-Via": "web" });
  const body = { message, thread_id: threadId, ...(agent ? { agent } : {}) };
  let assistant = null;
  let refused = null;  // why the message was not taken: said again once the thread is reloaded
  try {
    const response = await fetch("/v1/runs?stream=true", {
      method: "POST", headers, body: JSON.stringify(body),
    });
    if (!response.ok) {
      const problem = await response.json().catch(() => ({}));
      if (response.status === 401) $("signin").hidden = false;
      refused = `${problem.title || "Error"}: ${problem.detail || response.status}`;
      return;
    }
    delete state.firstAgent[threadId];  // the thread is stored with its agent now
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer = parseEvents(buffer + value, (name, data) => {
        if (name === "error") refused = `${data.title}: ${data.detail}`;
        if (!shown()) return;  // another thread is on screen: this one is drawn from the server when opened again
        if (name === "progress") setStatus(`Working… ${data.elapsed}s`, true);
        else if (name === "tool_call" || name === "tool_result") $("transcript").append(entryNode({ role: name, ...data }));
        else if (name === "decision") $("transcript").append(entryNode({ role: "decision", ...data }));
        else if (name === "text_delta") {
          if (!assistant) { assistant = entryNode({ role: "assistant", text: "" }); $("transcript").append(assistant); }
          assistant.append(data.delta);
        } else if (name === "run") {
          reconcileCards($("cards"), data.status === "paused" ? data.requests : [], chatCtx);
          setStatus(data.status === "paused" ? "Waiting for you." : data.status === "failed" ? `Failed: ${data.error}` : "");
        }
      });
    }
  } catch (err) {
    refused = `The message was not sent: ${err.message}`;
  } finally {
    streaming.delete(threadId);
    if (shown()) {
      $("status").classList.remove("working");
      $("send").disabled = false;
    }
    const reloaded = refreshThread();
    loadThreads();
    refreshInboxCount();
    if (refused && shown()) {
      // The reload shows the thread as it is (without this message); the problem stays said, the words kept.
      await reloaded;
      setStatus(refused);
      if (!$("message").value) $("message").value = message;
    }
  }
}

// inbox

const inboxCtx = { context: "inbox", onDecided: () => { loadInbox(); refreshInboxCount(); } };

// The inbox shows its first `pages` pages, oldest first; Show more adds one.
const INBOX_PAGE = 100;
const inbox = { pages: 1 };

function inboxQuery() {
  const params = new URLSearchParams();
  if ($("filter-agent").value) params.set("agent", $("filter-agent").value);
  if ($("filter-kind").value) params.set("kind", $("filter-kind").value);
  params.set("limit", String(INBOX_PAGE));
  return params;
}

const loadInbox = coalesce(async () => {
  const result = await apiPages("/v1/requests", inboxQuery(), "requests", inbox.pages);
  if (!result.ok || $("inbox-view").hidden) return;
  reconcileCards($("inbox-cards"), result.items, inboxCtx);
  const shown = result.items.length;
  const noun = result.total === 1 ? "open request" : "open requests";
  $("inbox-shown").textContent = !result.total ? ""
    : result.cursor ? `Showing ${shown} of ${result.total} ${noun}.`
    : result.total === 1 ? "1 open request." : `All ${result.total} ${noun} are shown.`;
  $("inbox-more").hidden = !result.cursor;
  updateInboxEmpty();
});

function updateInboxEmpty() {
  $("inbox-empty").hidden = !!$("inbox-cards").querySelector("article.card:not([data-closed])");
}

function openInbox(fresh) {
  showView("inbox");
  if (fresh) { $("inbox-cards").replaceChildren(); inbox.pages = 1; }
  watchLive(null);
  loadInbox();
  refreshInboxCount();
}

function setBadge(count) { $("inbox-count").textContent = count ? String(count) : ""; }

// What is really open for this person, however many pages it takes (`total`), read with a page of one.
const refreshInboxCount = coalesce(async () => {
  const result = await api("GET", "/v1/requests?limit=1");
  if (result.ok) setBadge(result.data.total);
});

// grants

// Every grant the caller sees, newest first: GET /v1/grants pages, so its pages are read until the last.
const GRANTS_PAGE = 200;

async function readGrants() {
  let result = await api("GET", `/v1/grants?limit=${GRANTS_PAGE}`);
  if (!result.ok) return result;
  let grants = result.data.grants;
  while (result.data.next_cursor) {
    const params = new URLSearchParams({ limit: String(GRANTS_PAGE), cursor: result.data.next_cursor });
    result = await api("GET", `/v1/grants?${params}`);
    if (!result.ok) return result;
    grants = [...grants, ...result.data.grants];
  }
  return { ...result, data: { grants, next_cursor: null } };
}

function loadGrants() {
  showView("grants");
  watchLive(null);
  $("grants-status").textContent = "";
  Object.assign($("grants-status").dataset, { revoked: "", empty: "" });
  refreshGrants();
}

// The grants as they are now: read again when one is given or revoked anywhere (`grants.changed`).
const refreshGrants = coalesce(async () => {
  const result = await readGrants();
  if ($("grants-view").hidden) return;
  if (!result.ok) {
    $("grants-rows").replaceChildren();
    $("grants-status").textContent = result.data?.detail || `Could not load the grants (HTTP ${result.status}).`;
    return;
  }
  const grants = result.data.grants;
  // A revocation this page just said stays said (with none left, that is said after it); "none" goes once some come.
  const status = $("grants-status");
  const said = status.dataset.revoked ? `${status.dataset.revoked} ` : "";
  if (!grants.length) status.textContent = `${said}No remembered approvals: every gated call asks.`;
  else if (status.dataset.empty) status.textContent = said;
  status.dataset.empty = grants.length ? "" : "true";
  placeRows($("grants-rows"), grants);
});

// The rows of `grants` in their order: a row already shown stays (a Revoke button keeps its focus), one revoked
// goes, a new one comes in where it belongs.
function placeRows(body, grants) {
  const ids = new Set(grants.map((grant) => grant.grant_id));
  const shown = new Map([...body.children].map((row) => [row.dataset.grantId, row]));
  for (const [id, row] of shown) if (!ids.has(id)) row.remove();
  grants.forEach((grant, index) => {
    const row = shown.get(grant.grant_id) || grantRow(grant);
    if (body.children[index] !== row) body.insertBefore(row, body.children[index] || null);
  });
}

function grantRow(grant) {
  const revoke = el("button", { type: "button", class: "danger", "aria-label": `Revoke ${grant.tool} on ${grant.subject_label}`,
    onclick: async () => {
      revoke.disabled = true;
      const revoked = await api("DELETE", `/v1/grants/${encodeURIComponent(grant.grant_id)}`);
      if (!revoked.ok && revoked.status !== 404) {
        $("grants-status").textContent = problemText(revoked);
        revoke.disabled = false;
        return;
      }
      const note = `Revoked: ${grant.tool} on ${grant.subject_label}. The next call asks again.`;
      Object.assign($("grants-status").dataset, { revoked: note, empty: "" });
      $("grants-status").textContent = note;
      row.remove();
    } }, "Revoke");
  const thread = grant.thread_id
    ? el("a", { href: `#/thread/${grant.thread_id}` }, state.titles[grant.thread_id] || grant.thread_id) : "any";
  const cell = (label, ...content) => el("td", { "data-label": label }, ...content);
  const row = el("tr", { "data-grant-id": grant.grant_id },
    cell("Tool", grant.tool), cell("Covers", grant.subject_label), cell("Scope", SCOPE_LABELS[grant.scope] || grant.scope),
    cell("Principal", grant.principal), cell("Agent", grant.agent || "none"), cell("Thread", thread),
    cell("Since", timeNode(grant.created)), el("td", { class: "actions-cell" }, revoke));
  return row;
}

// audit log

const audit = { cursor: null };

function auditRow(record) {
  const body = record.body;
  const decision = body.decision ? `${body.decision}${body.scope && body.scope !== "once" ? ` (${body.scope})` : ""}` : "";
  const details = [];
  if (body.reason) details.push(`reason: ${body.reason}`);
  if (body.subject_label || body.subject) details.push(`covers: ${body.subject_label || body.subject}`);
  if (body.grant_id) details.push(`grant: ${body.grant_id}`);
  if (body.edits) details.push(`edits: ${body.edits.map((c) => `${c.field} ${show(c.before)} → ${show(c.after)}`).join(", ")}`);
  if (body.answers) details.push(`answers: ${JSON.stringify(body.answers)}`);
  if (body.executed_args && body.event === "executed") details.push(`args: ${JSON.stringify(body.executed_args)}`);
  const who = [body.by && body.by !== "person" ? body.by : null, body.principal, VIA_LABELS[body.via]].filter(Boolean).join(" · ");
  const cell = (label, content, attrs = {}) => el("td", { "data-label": label, ...attrs }, content || null);
  return el("tr", { "data-seq": String(record.seq) },
    cell("#", String(record.seq)), cell("When", timeNode(record.at)), cell("Event", body.event || ""),
    cell("Tool", body.tool_name || ""), cell("Decision", decision), cell("Who", who),
    cell("Details", details.join("; "), { class: "mono" }));
}

async function loadAudit(more = false) {
  showView("audit");
  watchLive(null);
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
  // Unanchored is expected while developing locally (no key set): said, but not as an alarm.
  const note = el("p", { class: result.data.anchored || state.localMode ? "muted" : "bad-text" }, result.data.note);
  if (result.data.intact) {
    out.replaceChildren(el("span", { class: "ok" }, "Intact"), ` — all ${result.data.records} records chain correctly.`, note);
    return;
  }
  const { seq, problem } = result.data.problem;
  const said = result.data.predates_key ? "Not yet anchored" : `Broken at record ${seq}`;
  out.replaceChildren(el("span", { class: "bad-text" }, said), `: ${problem}.`, note);
  document.querySelector(`#audit-rows tr[data-seq="${seq}"]`)?.classList.add("bad");
}

// navigation

const VIEWS = ["chat", "inbox", "grants", "audit", "stats"];

function showView(name) {
  state.view = name;
  for (const view of VIEWS) $(`${view}-view`).hidden = name !== view;
  for (const view of VIEWS.slice(1)) {
    if (view === name) $(`nav-${view}`).setAttribute("aria-current", "page");
    else $(`nav-${view}`).removeAttribute("aria-current");
  }
  document.body.classList.remove("threads-open");
  $("threads-toggle").setAttribute("aria-expanded", "false");
}

function markCurrentThread() {
  for (const link of document.querySelectorAll("#threads a")) {
    if (link.dataset.threadId === state.threadId) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
}

// The sidebar lists its first `pages` pages of threads, newest first; Older threads adds one.
const threadList = { pages: 1 };

const loadThreads = coalesce(async () => {
  const result = await apiPages("/v1/threads", { limit: "50" }, "threads", threadList.pages);
  if (!result.ok) return;
  for (const thread of result.items) if (thread.title) state.titles[thread.thread_id] = thread.title;
  $("threads-more").hidden = !result.cursor;
  $("threads").replaceChildren(...result.items.map((thread) => el("li", {},
    el("a", { href: `#/thread/${thread.thread_id}`, "data-thread-id": thread.thread_id, title: thread.title || thread.thread_id },
      el("span", { class: "title" }, thread.title || thread.thread_id),
      el("span", { class: "meta" }, thread.active_run_id ? el("span", { class: "dot", title: "a run is open" }, "•") : null,
        timeNode(thread.created))))));
  markCurrentThread();
});

function newChat() {
  state.threadId = null;
  $("composer").hidden = false;
  Object.assign(transcriptView, { pages: 1, bottom: true, older: false });
  $("transcript-more").hidden = true;
  $("send").disabled = false;
  showView("chat");
  watchLive(null);
  hideSkipWarning();
  $("chat-title").textContent = "New chat";
  $("chat-meta").replaceChildren();
  $("transcript").replaceChildren();
  $("cards").replaceChildren();
  setStatus("");
  describeAgent();
  markCurrentThread();
  // Never take the caret from a field the person is typing in (the token, while the page loads).
  const typing = document.activeElement;
  if (!typing || typing === document.body || typing === $("message")) $("message").focus();
}

function route() {
  const hash = location.hash;
  if (hash.startsWith("#/thread/")) openThread(decodeURIComponent(hash.slice(9)));
  else if (hash === "#/inbox") openInbox(true);
  else if (hash === "#/grants") loadGrants();
  else if (hash === "#/audit") loadAudit();
  else if (hash === "#/stats") { showView("stats"); loadStats(); }
  else newChat();
}

// live: what another tab, person or process changed

onLive({
  ready: () => {
    refreshInboxCount();
    loadThreads();
    if (state.view === "chat") refreshThread();
    if (state.view === "inbox") loadInbox();
    if (state.view === "grants") refreshGrants();
  },
  "request.opened": () => {
    refreshInboxCount();
    if (state.view === "inbox") loadInbox();
    if (state.view === "chat") refreshThread();
  },
  "request.voted": (data) => showProgressOf(data),
  "request.closed": (data) => {
    closeCardsOf(data);
    refreshInboxCount();
    if (state.view === "inbox") { updateInboxEmpty(); loadInbox(); }
  },
  "run.changed": (data) => { if (data.thread_id === state.threadId) refreshThread(); },
  "threads.changed": () => loadThreads(),
  "grants.changed": () => { if (state.view === "grants") refreshGrants(); },
});

// What the chosen agent for a new chat is: its description, a placeholder that fits it, and for a workflow, how
// a chat with it starts.
function describeAgent() {
  const agent = state.agents?.[$("agent").value];
  if (!agent) return;
  const workflow = agent.kind === "workflow";
  $("agent-about").textContent = agent.description || "";
  $("message").placeholder = workflow
    ? `Say anything to start ${agent.name}, for example "hello"`
    : `Message ${agent.name}${agent.description ? `: ${agent.description.replace(/\.$/, "").toLowerCase()}` : ""}`;
  const fresh = !state.threadId;
  $("workflow-hint").hidden = !(workflow && fresh);
  $("workflow-hint").textContent = workflow
    ? `${agent.name} is a workflow${agent.description ? `: ${agent.description}` : ""} Send any message to start it; `
      + "it then asks you, in a form here, for what it needs."
    : "";
}

async function start() {
  const me = await api("GET", "/v1/me");
  if (me.ok) {
    state.me = me.data.principal;
    state.localMode = me.data.local_mode;
    $("signin-error").textContent = "";
    $("who").textContent = me.data.local_mode ? "local development mode" : `signed in as ${me.data.principal}`;
  } else if (me.status === 401 && state.token) {
    // A token was given and refused: say so where it was typed, and forget it.
    state.token = "";
    sessionStorage.removeItem("sayso-token");
    $("signin-error").textContent = "Invalid token: no principal has that token. Check it and try again.";
    $("token").focus();
    return;
  }
  const agents = await api("GET", "/v1/agents");
  if (agents.ok) {
    $("agent").replaceChildren();
    $("filter-agent").replaceChildren(el("option", { value: "" }, "any"));
    state.agents = Object.fromEntries(agents.data.agents.map((agent) => [agent.name, agent]));
    for (const agent of agents.data.agents) {
      // An internal agent (a delegate, a workflow's node) works for others: its requests are in the inbox, but
      // nobody starts a chat with it.
      if (!agent.internal) {
        const label = agent.kind === "workflow" ? `${agent.name} (workflow)` : agent.name;
        $("agent").append(el("option", { value: agent.name, selected: agent.entry }, label));
      }
      $("filter-agent").append(el("option", { value: agent.name }, agent.name));
    }
    describeAgent();
  }
  await loadThreads();
  route();
}

window.addEventListener("hashchange", route);
document.addEventListener("DOMContentLoaded", () => {
  $("new-chat").addEventListener("click", () => { if (location.hash && location.hash !== "#/") location.hash = "#/"; else newChat(); });
  $("threads-toggle").addEventListener("click", (event) => {
    const open = document.body.classList.toggle("threads-open");
    event.currentTarget.setAttribute("aria-expanded", String(open));
  });
  $("composer").addEventListener("submit", (event) => { event.preventDefault(); submitMessage(false); });
  $("message").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) { event.preventDefault(); $("composer").requestSubmit(); }
  });
  $("skip-send").addEventListener("click", () => submitMessage(true));
  $("agent").addEventListener("change", describeAgent);
  $("skip-cancel").addEventListener("click", () => { hideSkipWarning(); $("message").focus(); });
  $("inbox-filters").addEventListener("submit", (event) => { event.preventDefault(); openInbox(true); });
  $("audit-verify").addEventListener("click", verifyAudit);
  $("audit-refresh").addEventListener("click", () => loadAudit());
  $("audit-more").addEventListener("click", () => loadAudit(true));
  $("inbox-more").addEventListener("click", () => { inbox.pages += 1; loadInbox(); });
  $("threads-more").addEventListener("click", () => { threadList.pages += 1; loadThreads(); });
  $("transcript-more").addEventListener("click", () => {
    Object.assign(transcriptView, { pages: transcriptView.pages + 1, older: true });
    refreshThread();
  });
  $("stats-window").addEventListener("change", () => loadStats());
  $("signin").addEventListener("submit", (event) => {
    event.preventDefault();
    state.token = $("token").value;
    sessionStorage.setItem("sayso-token", state.token);
    $("signin").hidden = true;
    live.controller?.abort();
    live.controller = null;
    start();
  });
  start();
});
