// sayso web UI, the stats page: GET /v1/stats, a bar chart per tool (plain SVG) and the numbers per tool, rule and approver.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const OUTCOMES = [["approved", "Approved", "ok"], ["rejected", "Rejected", "bad"], ["expired", "Timed out", "warn"],
  ["closed", "Closed unanswered", "faint"], ["open", "Open", "muted"]];

function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  for (const child of children) node.append(child);
  return node;
}

function seconds(value) {
  if (value === null || value === undefined) return "–";
  if (value >= 3600) return `${(value / 3600).toFixed(1)} h`;
  if (value >= 60) return `${(value / 60).toFixed(1)} min`;
  return `${Math.round(value)} s`;
}

function share(count, rate) {
  return rate === null || rate === undefined ? String(count) : `${count} (${Math.round(rate * 100)}%)`;
}

// One horizontal bar per tool, split by outcome; each bar's title says the numbers for screen readers too.
function statsChart(byTool) {
  const tools = Object.entries(byTool);
  const width = 560, label = 150, row = 26, top = 8;
  const height = top + row * Math.max(tools.length, 1) + 24;
  const most = Math.max(1, ...tools.map(([, r]) => r.requests));
  const chart = svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-labelledby": "stats-chart-title" },
    svg("title", { id: "stats-chart-title" }, "Approval requests per tool, by outcome"));
  tools.forEach(([tool, rates], i) => {
    const y = top + i * row;
    chart.append(svg("text", { x: label - 8, y: y + 15, "text-anchor": "end", class: "chart-label" }, tool));
    let x = label;
    for (const [key, name, tone] of OUTCOMES) {
      const w = ((width - label - 10) * rates[key]) / most;
      if (w <= 0) continue;
      chart.append(svg("rect", { x, y: y + 3, width: w, height: row - 8, class: `bar ${tone}`, "data-outcome": key },
        svg("title", {}, `${tool}: ${rates[key]} ${name.toLowerCase()}`)));
      x += w;
    }
  });
  let x = 8;
  for (const [, name, tone] of OUTCOMES) {
    chart.append(svg("rect", { x, y: height - 14, width: 10, height: 10, class: `bar ${tone}` }));
    chart.append(svg("text", { x: x + 14, y: height - 5, class: "chart-legend" }, name));
    x += 26 + 7 * name.length;  // the legend's names in one row, each as wide as it reads
  }
  return chart;
}

function statsTable(title, groups) {
  const rows = Object.entries(groups).map(([name, r]) => el("tr", {},
    el("th", { scope: "row" }, name), el("td", {}, String(r.requests)),
    el("td", {}, share(r.approved, r.approval_rate)), el("td", {}, share(r.rejected, r.rejection_rate)),
    el("td", {}, share(r.expired, r.expiry_rate)), el("td", {}, share(r.closed, r.closed_rate)),
    el("td", {}, share(r.open, r.open_rate)), el("td", {}, share(r.escalated, r.escalation_rate)),
    el("td", {}, seconds(r.decide_p50_seconds)), el("td", {}, seconds(r.decide_p90_seconds))));
  const id = nextId("stats-table");
  return el("div", { class: "scroll" }, el("table", { class: "grid", "aria-labelledby": id },
    el("caption", { id }, title),
    el("thead", {}, el("tr", {}, ...["", "Requests", "Approved", "Rejected", "Timed out", "Closed unanswered", "Open", "Escalated",
      "p50 to decide", "p90 to decide"]
      .map((h) => el("th", { scope: "col" }, h)))),
    el("tbody", {}, ...rows)));
}

async function loadStats() {
  const span = $("stats-window").value;
  const result = await api("GET", `/v1/stats?window=${encodeURIComponent(span)}`);
  const out = $("stats-result");
  if (!result.ok) {
    out.textContent = result.data?.detail || `Could not load the stats (HTTP ${result.status}).`;
    $("stats-chart").replaceChildren();
    $("stats-tables").replaceChildren();
    return;
  }
  const stats = result.data;
  const all = stats.overall;
  out.textContent = `${all.requests} approval request(s); median time to decide ${seconds(all.decide_p50_seconds)}, p90 ${seconds(all.decide_p90_seconds)}.`;
  $("stats-chart").replaceChildren(statsChart(stats.by_tool));
  $("stats-tables").replaceChildren(statsTable("Per tool", stats.by_tool), statsTable("Per rule", stats.by_rule),
    statsTable("Per approver", stats.by_approver));
}
