// sayso web UI, Markdown in the agent's answers: a small, safe subset built as DOM nodes, never as HTML.
// Text is only ever set as text, so whatever the model writes (tags, scripts, attributes) shows as written.
// Blocks: paragraphs (single line breaks kept), # headings, - / * / 1. lists, ``` code blocks, > quotes.
// Inline: `code`, **bold**, *italic* / _italic_, [links](https://…) (http, https and mailto only).
"use strict";

const INLINE = /(`[^`\n]+`)|(\*\*[^*\n]+\*\*)|(\*[^*\s][^*\n]*\*|_[^_\s][^_\n]*_)|(\[[^\]\n]+\]\([^)\s]+\))/;

function inlineNodes(text) {
  const nodes = [];
  let rest = text;
  while (rest) {
    const found = INLINE.exec(rest);
    if (!found) { nodes.push(document.createTextNode(rest)); break; }
    if (found.index) nodes.push(document.createTextNode(rest.slice(0, found.index)));
    const token = found[0];
    if (found[1]) nodes.push(el("code", {}, token.slice(1, -1)));
    else if (found[2]) nodes.push(el("strong", {}, ...inlineNodes(token.slice(2, -2))));
    else if (found[3]) nodes.push(el("em", {}, ...inlineNodes(token.slice(1, -1))));
    else {
      const [, label, href] = /^\[([^\]]+)\]\(([^)]+)\)$/.exec(token);
      nodes.push(/^(https?:|mailto:)/i.test(href)
        ? el("a", { href, rel: "noopener noreferrer nofollow", target: "_blank" }, ...inlineNodes(label))
        : document.createTextNode(token));
    }
    rest = rest.slice(found.index + token.length);
  }
  return nodes;
}

function withBreaks(lines) {
  return lines.flatMap((line, i) => (i ? [el("br"), ...inlineNodes(line)] : inlineNodes(line)));
}

const LIST_ITEM = /^\s*(?:([-*+])|(\d+)[.)])\s+(.*)$/;

// The blocks of `text` as DOM nodes, for an element of class `md`.
function renderMarkdown(text) {
  const lines = String(text).replace(/\r\n?/g, "\n").split("\n");
  const blocks = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (!line.trim()) { i++; continue; }
    if (/^\s*```/.test(line)) {
      const code = [];
      for (i++; i < lines.length && !/^\s*```/.test(lines[i]); i++) code.push(lines[i]);
      i++;
      blocks.push(el("pre", {}, el("code", {}, code.join("\n"))));
      continue;
    }
    const heading = /^(#{1,4})\s+(.*)$/.exec(line);
    if (heading) {
      blocks.push(el(`h${Math.min(heading[1].length + 3, 6)}`, {}, ...inlineNodes(heading[2])));
      i++;
      continue;
    }
    const item = LIST_ITEM.exec(line);
    if (item) {
      const ordered = !!item[2];
      const list = el(ordered ? "ol" : "ul", ordered && item[2] !== "1" ? { start: item[2] } : {});
      while (i < lines.length) {
        const next = LIST_ITEM.exec(lines[i]);
        if (!next || !!next[2] !== ordered) break;
        list.append(el("li", {}, ...inlineNodes(next[3])));
        i++;
      }
      blocks.push(list);
      continue;
    }
    if (/^\s*>/.test(line)) {
      const quoted = [];
      for (; i < lines.length && /^\s*>/.test(lines[i]); i++) quoted.push(lines[i].replace(/^\s*>\s?/, ""));
      blocks.push(el("blockquote", {}, ...withBreaks(quoted)));
      continue;
    }
    const para = [line];  // the first line always: whatever it is, it is consumed here
    for (i++; i < lines.length && lines[i].trim() && !LIST_ITEM.exec(lines[i]) && !/^(\s*```|#{1,4}\s|\s*>)/.test(lines[i]); i++) {
      para.push(lines[i]);
    }
    blocks.push(el("p", {}, ...withBreaks(para)));
  }
  return blocks;
}
