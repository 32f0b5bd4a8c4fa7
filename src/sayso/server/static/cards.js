// sayso web UI, request cards: one function per request kind (CARD_KINDS), and how a card closes.
// A new kind of request is one more function in CARD_KINDS, built on cardShell and decideCard; forms built from a
// JSON Schema (input requests, approval feedback) come from forms.js.
"use strict";

// who is who: nested agents read "asked by analyst for coordinator"
function agentLabel(path) {
  if (!path.includes("/")) return null;
  const parts = path.split("/");
  return `asked by ${parts[parts.length - 1]} for ${parts.slice(0, -1).join(" / ")}`;
}

function cardShell(request, title, ctx) {
  const headingId = nextId("card-title");
  const card = el("article", {
    class: "card", "aria-labelledby": headingId, "data-request-id": request.id, "data-kind": request.kind,
    "data-tool": request.tool_name || (request.node ? humanize(request.node) : null),
  });
  card.append(el("h3", { id: headingId }, title));
  const meta = [agentLabel(request.agent_path), timeNode(request.created, "asked "),
    request.expires ? timeNode(request.expires, "expires ") : null].filter(Boolean);
  if (ctx.context === "inbox") {
    const chat = request.chat_thread_id || request.thread_id;  // a delegate's request belongs to the person's chat
    const thread = state.titles[chat] || chat;
    meta.unshift(el("span", {}, `${request.agent_path} · `, el("a", { href: `#/thread/${chat}` }, thread)));
  }
  card.append(el("p", { class: "label" }, meta.flatMap((m, i) => (i ? [" · ", m] : [m]))));
  if (request.approvers) {
    // A routed request (docs/guides/routing.md): who decides it, and where its vote stands.
    const names = request.approvers.principals.map((p) => p.name).join(", ") || "nobody";
    card.append(el("p", { class: "label routing" }, `Decided by ${request.approvers.named.join(", ")} (${names})`));
  }
  if (request.quorum) card.append(el("p", { class: "quorum", role: "status" }, `Approvals: ${request.quorum.text}`));
  return card;
}

// The arguments a person approves: an edit's, once one restarted the count, else the proposed ones.
function shownArgs(request) {
  return request.quorum?.args ?? request.args;
}

// An approval of a request that needs several names the arguments this person saw: if someone's edit
// changed them meanwhile, the vote starts a round on what was seen instead of approving unseen ones.
function plainApproval(request, scope) {
  return request.quorum ? { kind: "approve", scope, edited_args: shownArgs(request) } : { kind: "approve", scope };
}

// A vote that leaves the request waiting for more approvals: the card says so and takes no second vote.
// Focus, where the person was on the card, moves to what it says now (its hidden forms held it).
function voteRecorded(card, result, already) {
  const text = `${already ? "You voted already" : "Your vote is recorded"}: ${result.quorum.text}`;
  const focused = holdsFocus(card);
  card.querySelector(".quorum")?.replaceChildren(`Approvals: ${result.quorum.text}`);
  card.querySelectorAll("form.box").forEach((box) => { box.hidden = true; });
  card.classList.add("done");
  const said = feedback(card, text, false);
  if (focused) {
    said.tabIndex = -1;
    said.focus();
  }
}

function feedback(card, text, isError = true) {
  let node = card.querySelector(".feedback");
  if (!node) {
    node = el("p", { class: "feedback", role: "alert" });
    card.append(node);
  }
  node.classList.toggle("error", isError);
  node.textContent = text;
  return node;
}

// A form with a field the browser could not read (text in a number field) is not sent: its fields say why.
function unreadable(card, form) {
  if (!form.refusal()) return false;
  feedback(card, "Not sent: correct the fields marked above.");
  return true;
}

// Whether the person is on `card`: its focus, or a decision sent from it (its buttons, disabled, lose focus).
function holdsFocus(card) {
  return card.contains(document.activeElement) || card.dataset.deciding === "true";
}

// A card whose request stopped waiting becomes a receipt of what happened to it, wherever that was decided.
// A person on the card stays there: focus moves to the receipt's heading instead of falling to the page.
function closeCard(card, outcome, note) {
  if (card.dataset.closed) return;
  card.dataset.closed = "true";
  card.classList.add("done");
  const focused = holdsFocus(card);
  const headingId = card.getAttribute("aria-labelledby");
  const title = outcome.closedWithoutDecision ? "Closed: the run moved on" : outcomeTitle(outcome);
  const heading = el("h3", { id: headingId, tabindex: "-1" }, title);
  const parts = [
    heading,
    el("p", { class: "label", role: "status" }, card.dataset.tool, outcome.at ? [" · ", timeNode(outcome.at)] : []),
    ...outcomeDetails(outcome),
  ];
  if (note) {
    parts.push(el("p", { class: "feedback", role: "alert" }, note));
    card.dataset.note = "true";  // the transcript's line says what was decided, not that this card's answer was refused
  }
  card.replaceChildren(...parts);
  if (focused) heading.focus();
}

async function closeFromServer(card, note) {
  const result = await api("GET", `/v1/requests/${encodeURIComponent(card.dataset.requestId)}`);
  if (result.ok && result.data.status !== "open") closeCard(card, stateOutcome(result.data), note);
  return result;
}

// Send a decision from a card; the card closes with what was recorded (or with what someone else decided first).
// A refused answer leaves the card open and hands its problem (with `errors[].loc/msg`) to `onRefused`.
async function decideCard(card, request, body, ctx, onRefused) {
  const buttons = card.querySelectorAll("button");
  if (card.contains(document.activeElement)) card.dataset.deciding = "true";
  buttons.forEach((b) => { b.disabled = true; });
  try {
    await sendDecision(card, request, body, ctx, onRefused, buttons);
  } finally {
    delete card.dataset.deciding;
  }
}

async function sendDecision(card, request, body, ctx, onRefused, buttons) {
  const result = await api("POST", `/v1/requests/${encodeURIComponent(request.id)}/decision`, body, { "Sayso-Via": "web" });
  const waits = result.ok && result.data.quorum && (result.data.run?.requests || []).some((r) => r.id === request.id);
  if (waits) {
    voteRecorded(card, result.data, result.data.recorded === false);
  } else if (result.ok && result.data.recorded === false) {
    await closeFromServer(card, "Already decided: that decision had been taken already, nothing changed.");
  } else if (result.ok) {
    closeCard(card, {
      decision: body.kind, by: "person", principal: state.me, via: "web", at: new Date().toISOString(),
      scope: body.scope, reason: body.reason, message: body.message, value: body.value ?? body.content,
      schema: answerSchema(request), answers: answerRecord(request, body.answers),
      edited: !!body.edited_args && diffArgs(request.args, body.edited_args).length > 0,
      edits: body.edited_args ? diffArgs(request.args, body.edited_args) : null,
    });
  } else if (result.status === 404) {
    // Not a request this person may see (the server answers so for an id that does not exist, too): nothing
    // was recorded, and nothing says it closed; whoever may decide it still can.
    feedback(card, `Your answer was not taken: ${problemText(result)}. This request is not one you may decide.`);
    card.classList.add("done");
  } else if ([409, 410].includes(result.status)) {
    // Someone (another tab, person or process) got there first: say what happened instead.
    const detail = result.status === 409
      ? "Your answer was not taken: the request had been decided already, and the first decision wins."
      : `Already closed: ${problemText(result)}`;
    const found = await closeFromServer(card, detail);
    if (!found.ok || card.dataset.closed !== "true") {
      feedback(card, detail);
      card.classList.add("done");
    }
  } else {
    feedback(card, problemText(result));  // refused: the request stays open
    onRefused?.(result.data);
    buttons.forEach((b) => { b.disabled = false; });
    return;
  }
  ctx.onDecided?.(result.ok ? result.data : null);
}

function toggle(box, focus) {
  return (event) => {
    box.hidden = !box.hidden;
    event.currentTarget.setAttribute("aria-expanded", String(!box.hidden));
    if (!box.hidden) focus.focus();
  };
}

// A call's arguments, in a box that scrolls past a screenful (by keyboard too), so pages of them leave the card's
// buttons in reach.
function argumentsBlock(text) {
  return el("pre", { class: "arguments", role: "region", "aria-label": "Arguments", tabindex: "0" }, text);
}

function approvalCard(request, ctx) {
  const card = cardShell(request, `Approve ${request.tool_name}?`, ctx);
  if (request.hint) card.append(el("p", {}, request.hint));
  if (request.why) card.append(el("p", { class: "why" }, request.why));
  if (request.tool) {
    // What the tool's source (an MCP server) says about it.
    const about = [request.tool.title, request.tool.description].filter(Boolean).join(": ");
    if (about) card.append(el("p", { class: "label" }, `${request.tool.source || "tool"} · ${about}`));
    if (request.tool.destructive && !request.tool.read_only) card.append(el("p", { class: "error" }, "The tool's source says it may destroy data."));
  }
  card.append(argumentsBlock(JSON.stringify(shownArgs(request), null, 2)));
  if (request.payload !== null && request.payload !== undefined) card.append(payloadBlock(request.payload));
  // An approval that asks for feedback (`response_schema`) sends it as the approval's `payload`.
  const feedbackForm = request.response_schema ? schemaForm(request.response_schema) : null;
  if (feedbackForm) card.append(el("h4", {}, "Your feedback"), feedbackForm.node);
  const approve = (body) => {
    feedbackForm?.showErrors(null);
    if (feedbackForm && unreadable(card, feedbackForm)) return;
    decideCard(card, request, feedbackForm ? { ...body, payload: feedbackForm.read() } : body, ctx, feedbackForm?.showErrors);
  };
  const scopes = request.scopes || ["once"];
  const scopeName = nextId("scope");
  if (scopes.length > 1) {
    card.append(el("fieldset", {}, el("legend", {}, "Remember"),
      scopes.map((scope, i) => {
        const id = nextId("scope-opt");
        return el("div", {}, el("input", { type: "radio", name: scopeName, id, value: scope, checked: i === 0 }),
          el("label", { for: id }, SCOPE_LABELS[scope] || scope));
      }),
      request.subject ? el("p", { class: "hint" }, "If remembered, covers: ", el("strong", {}, request.subject.label)) : null));
  }
  const scope = () => card.querySelector(`input[name="${scopeName}"]:checked`)?.value || "once";

  const editId = nextId("edit");
  const editor = el("textarea", { id: editId, rows: 6, spellcheck: "false" }, JSON.stringify(shownArgs(request), null, 2));
  const preview = el("div", { class: "preview", "aria-live": "polite" });
  editor.addEventListener("input", () => {
    let edited;
    try { edited = parseJSON(editor.value); } catch { preview.replaceChildren(); return; }
    const changes = diffArgs(shownArgs(request), edited);
    preview.replaceChildren(...(changes.length ? [el("p", { class: "hint" }, "Changes:"), editList(changes)] : []));
  });
  const editBox = el("form", { class: "box", hidden: true, onsubmit: (event) => {
    event.preventDefault();
    let edited;
    try { edited = parseJSON(editor.value); } catch (err) {
      feedback(card, `The arguments are not valid JSON: ${err.message}`);
      return;
    }
    // The API reads `edited_args: null` as "no edit": `null` typed here would run the model's arguments unedited.
    if (edited === null || typeof edited !== "object" || Array.isArray(edited)) {
      feedback(card, 'The arguments must be a JSON object, such as {"name": "value"}.');
      return;
    }
    approve({ kind: "approve", scope: scope(), edited_args: edited });
  } }, el("label", { for: editId }, "Arguments (JSON)"), editor, preview,
    el("div", { class: "actions" }, el("button", { type: "submit", class: "primary" }, "Approve with these arguments")));

  const reasonId = nextId("reason");
  const reason = el("input", { id: reasonId, type: "text", autocomplete: "off", placeholder: "Why not? The agent reads this." });
  const rejectBox = el("form", { class: "box", hidden: true, onsubmit: (event) => {
    event.preventDefault();
    decideCard(card, request, { kind: "reject", reason: reason.value.trim() || null }, ctx);
  } }, el("label", { for: reasonId }, "Reason ", el("span", { class: "muted" }, "(optional)")),
    el("div", { class: "row" }, reason, el("button", { type: "submit", class: "danger" }, "Confirm rejection")));

  // A call that takes no edited arguments (`editable: false`, a remote agent's) is offered no edit.
  const editable = request.editable !== false;
  card.append(el("div", { class: "actions" },
    el("button", { type: "button", class: "primary", onclick: () => approve(plainApproval(request, scope())) }, "Approve"),
    editable ? el("button", { type: "button", "aria-expanded": "false", onclick: toggle(editBox, editor) }, "Edit and approve") : null,
    el("button", { type: "button", class: "danger", "aria-expanded": "false", onclick: toggle(rejectBox, reason) }, "Reject")),
  editBox, rejectBox);
  return card;
}

function questionCard(request, ctx) {
  const card = cardShell(request, "A question for you", ctx);
  const readers = request.questions.map((question) => {
    const name = nextId("q");
    const type = question.multiple ? "checkbox" : "radio";
    const otherId = nextId("other");
    const otherText = el("input", { type: "text", id: nextId("other-text"), "aria-label": "Other answer" });
    const other = el("input", { type, name, id: otherId, value: "__other__" });
    otherText.addEventListener("input", () => { if (otherText.value) other.checked = true; });
    card.append(el("fieldset", {}, el("legend", {}, question.question + (question.multiple ? " (pick any)" : "")),
      question.choices.map((choice) => {
        const id = nextId("choice");
        return el("div", {}, el("input", { type, name, id, value: choice }), el("label", { for: id }, choice));
      }),
      el("div", { class: "row" }, other, el("label", { for: otherId }, "Other"), otherText)));
    return () => [...card.querySelectorAll(`input[name="${name}"]:checked`)]
      .map((input) => (input.value === "__other__" ? otherText.value.trim() : input.value))
      .filter((answer) => answer);
  });
  card.append(el("div", { class: "actions" },
    el("button", { type: "button", class: "primary", onclick: () => decideCard(card, request, { kind: "answer", answers: readers.map((read) => read()) }, ctx) }, "Send answer"),
    el("button", { type: "button", onclick: () => decideCard(card, request, { kind: "skip", reason: "the person skipped the question" }, ctx) }, "Skip")));
  return card;
}

function clientToolCard(request, ctx) {
  const card = cardShell(request, `Run ${request.tool_name} here`, ctx);
  if (request.description) card.append(el("p", {}, request.description));
  card.append(argumentsBlock(JSON.stringify(request.args, null, 2)));
  const resultId = nextId("result");
  const result = el("textarea", { id: resultId, rows: 4, spellcheck: "false" }, "");
  const errorId = nextId("error");
  const error = el("input", { id: errorId, type: "text", autocomplete: "off" });
  card.append(el("label", { for: resultId }, "Result (JSON)"), result,
    el("div", { class: "actions" }, el("button", { type: "button", class: "primary", onclick: () => {
      let value;
      try { value = parseJSON(result.value); } catch (err) {
        feedback(card, `The result is not valid JSON: ${err.message}`);
        return;
      }
      decideCard(card, request, { kind: "client_result", value }, ctx);
    } }, "Send result")),
    el("label", { for: errorId }, "Error message ", el("span", { class: "muted" }, "(optional)")), error,
    el("div", { class: "actions" },
      el("button", { type: "button", class: "danger", onclick: () => decideCard(card, request, { kind: "client_error", message: error.value.trim() || "the client tool failed" }, ctx) }, "Send error"),
      el("button", { type: "button", onclick: () => decideCard(card, request, { kind: "skip" }, ctx) }, "Skip")));
  return card;
}

// An MCP server (or the agent's before-call hook) asks the person: a form built from the requested schema
// (forms.js; a refused field's problem shows next to it), or a page to visit ("Open", then "Done").
function elicitationCard(request, ctx) {
  const asker = request.server || "A check before this call";
  const card = cardShell(request, `${asker} asks (${request.tool_name})`, ctx);
  card.append(el("p", { class: "message" }, request.message));
  const refuse = () => [
    el("button", { type: "button", onclick: () => decideCard(card, request, { kind: "decline" }, ctx) }, "Decline"),
    el("button", { type: "button", onclick: () => decideCard(card, request, { kind: "cancel" }, ctx) }, "Cancel"),
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
      el("button", { type: "button", class: "primary", onclick: () => decideCard(card, request, { kind: "accept" }, ctx) }, "Done"),
      refuse()));
    return card;
  }
  const form = schemaForm(request.requested_schema || { type: "object", properties: {} });
  // The server's errors sit under the decision's `content`: `["content", "people"]` is the field `people`.
  const refused = (problem) => {
    const errors = (problem?.errors || []).map((e) => ({ ...e, loc: e.loc?.[0] === "content" ? e.loc.slice(1) : e.loc }));
    form.showErrors({ errors });
    if (errors.length) feedback(card, "Not accepted: correct the fields marked above.");
  };
  card.append(el("form", { onsubmit: (event) => {
    event.preventDefault();
    form.showErrors(null);
    if (unreadable(card, form)) return;
    decideCard(card, request, { kind: "accept", content: form.read() || {} }, ctx, refused);
  } }, form.node, el("div", { class: "actions" }, el("button", { type: "submit", class: "primary" }, "Submit"), refuse())));
  if (!request.durable) {
    card.append(el("p", { class: "muted" }, "The server waits for this answer on a call one sayso process holds open; if that process stops first, the call is made again where that is safe, else the form closes as cancelled."));
  }
  return card;
}

// A workflow node asking for input: its message, the data it shows, and a form built from its schema.
function inputCard(request, ctx) {
  // Titled from what is asked for (the schema's title), not the node's function name, which stays as a label.
  const asked = schemaTitle(resolveSchema(request.response_schema || {}, request.response_schema || {}));
  const card = cardShell(request, asked || (request.node ? `Input for ${humanize(request.node)}` : "Input needed"), ctx);
  if (asked && request.node) card.append(el("p", { class: "label" }, `step: ${humanize(request.node)}`));
  if (request.why) card.append(el("p", { class: "why" }, request.why));
  if (request.message) card.append(el("p", { class: "message" }, request.message));
  if (request.payload !== null && request.payload !== undefined) card.append(payloadBlock(request.payload));
  const form = schemaForm(request.response_schema);
  card.append(form.node);
  const refused = (problem) => {
    form.showErrors(problem);
    if (problem?.errors?.length) feedback(card, "Not accepted: correct the fields marked above.");
  };
  card.append(el("div", { class: "actions" },
    el("button", { type: "button", class: "primary", onclick: () => {
      form.showErrors(null);
      if (unreadable(card, form)) return;
      decideCard(card, request, { kind: "provide", value: form.read() }, ctx, refused);
    } }, "Send"),
    el("button", { type: "button", onclick: () => decideCard(card, request, { kind: "skip", reason: "the person skipped the input" }, ctx) }, "Skip")));
  return card;
}

function unsupportedCard(request, ctx) {
  const card = cardShell(request, `${request.kind} request`, ctx);
  card.append(el("p", { class: "muted" }, "This kind of request is answered through the API or the CLI, not this page yet."));
  return card;
}

const CARD_KINDS = {
  approval: approvalCard, question: questionCard, client_tool: clientToolCard, input: inputCard, elicitation: elicitationCard,
};

// A routed request this person sees but may not decide (their own run's, where the rule keeps its starter out):
// its card shows what is asked and who decides, without controls the server would only refuse.
function watchOnly(request) {
  return request.approvers && !state.localMode && !request.approvers.principals.some((p) => p.name === state.me);
}

function renderCard(request, ctx) {
  if (!answerSchemas.has(request.id)) answerSchemas.set(request.id, Promise.resolve(answerSchema(request)));
  const card = (CARD_KINDS[request.kind] || unsupportedCard)(request, ctx);
  if (watchOnly(request)) {
    card.querySelectorAll("form, fieldset, .actions, .schema-form, h4").forEach((node) => node.remove());
    card.append(el("p", { class: "muted" }, `Waiting for ${request.approvers.named.join(", ")}: you may not decide this request.`));
  }
  return card;
}

// Keep a list of cards in step with the requests still open: existing cards stay where they are (a reason
// being typed is not lost, nothing jumps under the pointer), new ones are added after them, and cards whose
// request stopped waiting close with what happened to it.
function reconcileCards(container, requests, ctx) {
  const open = new Set(requests.map((request) => request.id));
  const shown = new Map([...container.querySelectorAll("article.card")].map((card) => [card.dataset.requestId, card]));
  for (const [id, card] of shown) {
    if (!open.has(id) && !card.dataset.closed) closeFromServer(card);
  }
  for (const request of requests) {
    if (!shown.has(request.id)) container.append(renderCard(request, ctx));
  }
}

// Someone voted on an open request: every card of it says where the quorum stands now (a card's own vote too).
function showProgressOf(requestState) {
  const quorum = requestState.request.quorum;
  if (!quorum) return;
  for (const card of document.querySelectorAll(`article.card[data-request-id="${CSS.escape(requestState.request.id)}"]`)) {
    card.querySelector(".quorum")?.replaceChildren(`Approvals: ${quorum.text}`);
  }
}

function closeCardsOf(requestState) {
  for (const card of document.querySelectorAll(`article.card[data-request-id="${CSS.escape(requestState.request.id)}"]`)) {
    closeCard(card, stateOutcome(requestState));
  }
}
