// sayso web UI, the transcript: what was said, each call, the decision it waited on, its result, and failures.
"use strict";

const DECISION_MARKS = { approve: "✓", reject: "✗", skip: "⤼", expired: "⌛", answer: "✎", client_result: "↩", client_error: "!" };

// The schemas answered requests follow, by request id (read once each): a form's answer reads by its choices' titles.
const answerSchemas = new Map();

function schemaOfRequest(requestId) {
  if (!answerSchemas.has(requestId)) {
    answerSchemas.set(requestId, api("GET", `/v1/requests/${encodeURIComponent(requestId)}`)
      .then((result) => (result.ok ? answerSchema(result.data.request) : null)));
  }
  return answerSchemas.get(requestId);
}

function decisionLine(entry) {
  const record = entry.decision;
  const edited = !!record.edits?.length;
  // A vote before a decision that needed several approvals: "vote 1 of 2: Approved by bob (CLI)".
  const title = (record.quorum ? `${record.quorum[0].toUpperCase()}${record.quorum.slice(1)}: ` : "") + outcomeTitle({ ...record, edited });
  const mark = record.by === "permission" ? "↻" : edited ? "✎" : DECISION_MARKS[record.decision] || "•";
  const head = el("p", {}, el("span", { class: "mark", "aria-hidden": "true" }, mark), " ",
    el("strong", {}, title), " ", el("span", { class: "muted" }, entry.tool_name || ""),
    entry.at ? [" · ", timeNode(entry.at)] : []);
  const answer = { ...record, value: record.value ?? record.content };
  const line = el("li", { class: `decision decision-${record.decision}${record.by === "permission" ? " granted" : ""}` },
    head, ...outcomeDetails(answer));
  // A form's answer (a workflow input's, an elicitation's) names a picked choice by its title once its schema is read.
  if (["provide", "accept"].includes(record.decision) && answer.value != null && record.request_id) {
    schemaOfRequest(record.request_id).then((schema) => {
      if (schema) line.replaceChildren(head, ...outcomeDetails({ ...answer, schema }));
    });
  }
  return line;
}

function entryNode(entry) {
  const when = entry.at ? timeNode(entry.at) : null;
  switch (entry.role) {
    case "user":  // pending: sent, and the run is working on it (the server stores it when the run pauses or ends)
      return el("li", { class: entry.pending ? "user pending" : "user", title: entry.pending ? "Sent; the agent is working on it" : null },
        entry.text, when ? el("span", { class: "when" }, when) : null);
    case "assistant":  // the model writes Markdown: shown formatted, built as nodes (never as HTML)
      return el("li", { class: "assistant md" }, ...renderMarkdown(entry.text || ""), when ? el("span", { class: "when" }, when) : null);
    case "tool_call":
      return toolCallNode(entry);
    case "tool_result":
      return el("li", { class: "tool_result" }, el("details", {},
        el("summary", {}, el("span", { class: "tool-name" }, entry.tool_name), " returned ",
          el("span", { class: "muted" }, firstLine(entry.text))),
        el("pre", {}, entry.text || "")));
    case "decision":
      return decisionLine(entry);
    case "error":
      return el("li", { class: "failure", role: "alert" }, el("strong", {}, "The run failed"), when ? [" · ", when] : [],
        el("p", {}, entry.text));
    default:
      return el("li", {}, entry.text || "");
  }
}

// A call as a small card: the tool's name and each argument as a field.
function toolCallNode(entry) {
  const args = entry.args && typeof entry.args === "object" ? Object.entries(entry.args) : [];
  return el("li", { class: "tool_call", "aria-label": `Called ${entry.tool_name}` },
    el("span", { class: "tool-badge", "aria-hidden": "true" }, "⚙"), " ", el("span", { class: "tool-name" }, entry.tool_name),
    args.length
      ? el("dl", { class: "tool-args" }, args.flatMap(([key, value]) => [el("dt", {}, key), el("dd", {}, show(value))]))
      : el("span", { class: "muted" }, " (no arguments)"));
}

function firstLine(text) {
  const [line, ...more] = String(text || "").split("\n");
  // Cut short, the line says so: a list's first entry alone would read as the whole of it.
  return line.length > 80 ? `${line.slice(0, 80)}…` : more.some((rest) => rest.trim()) ? `${line} …` : line;
}

function renderTranscript(entries) {
  $("transcript").replaceChildren(...entries.map(entryNode));
}
