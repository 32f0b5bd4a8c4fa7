// sayso web UI, the transcript: what was said, each call, the decision it waited on, its result, and failures.
"use strict";

const DECISION_MARKS = { approve: "✓", reject: "✗", skip: "⤼", expired: "⌛", answer: "✎", result: "↩", error: "!" };

function decisionLine(entry) {
  const record = entry.decision;
  const edited = !!record.edits?.length;
  const title = outcomeTitle({ ...record, edited });
  const mark = record.by === "permission" ? "↻" : edited ? "✎" : DECISION_MARKS[record.decision] || "•";
  return el("li", { class: `decision decision-${record.decision}${record.by === "permission" ? " granted" : ""}` },
    el("p", {}, el("span", { class: "mark", "aria-hidden": "true" }, mark), " ",
      el("strong", {}, title), " ", el("span", { class: "muted" }, entry.tool_name || ""),
      entry.at ? [" · ", timeNode(entry.at)] : []),
    ...outcomeDetails(record));
}

function entryNode(entry) {
  const when = entry.at ? timeNode(entry.at) : null;
  switch (entry.role) {
    case "user":
    case "assistant":
      return el("li", { class: entry.role }, entry.text, when ? el("span", { class: "when" }, when) : null);
    case "tool_call":
      return el("li", { class: "tool_call" }, `→ ${entry.tool_name}(${JSON.stringify(entry.args)})`);
    case "tool_result":
      return el("li", { class: "tool_result" }, `← ${entry.tool_name}: ${entry.text}`);
    case "decision":
      return decisionLine(entry);
    case "error":
      return el("li", { class: "failure", role: "alert" }, el("strong", {}, "The run failed"), when ? [" · ", when] : [],
        el("p", {}, entry.text));
    default:
      return el("li", {}, entry.text || "");
  }
}

function renderTranscript(entries) {
  $("transcript").replaceChildren(...entries.map(entryNode));
}
