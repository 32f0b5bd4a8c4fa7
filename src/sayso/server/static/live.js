// sayso web UI, live updates: follows GET /v1/events (server-sent events, read with fetch so the bearer token
// goes along) and reconnects when a stream ends. `ready` means: read the current state now, nothing after is missed.
"use strict";

const live = { controller: null, threadId: undefined, handlers: {}, retry: 1000, connected: false };

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
    if (data) handle(name, parseJSON(data));
  }
  return buffer;
}

async function follow(threadId, controller) {
  const query = threadId ? `?thread_id=${encodeURIComponent(threadId)}` : "";
  const response = await fetch(`/v1/events${query}`, {
    headers: authHeaders({ Accept: "text/event-stream" }), signal: controller.signal, cache: "no-store",
  });
  if (response.status === 401) { $("signin").hidden = false; return false; }
  if (!response.ok) return false;
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return true;
    buffer = parseEvents(buffer + value, (name, data) => {
      if (name === "ready") { live.connected = true; live.retry = 1000; document.body.dataset.live = "on"; }
      live.handlers[name]?.(data);
    });
  }
}

// Follow what changes for this page, with `threadId` as the thread shown (or none); reconnects until replaced.
function watchLive(threadId) {
  if (live.controller && live.threadId === threadId) return;
  live.controller?.abort();
  const controller = new AbortController();
  live.controller = controller;
  live.threadId = threadId;
  (async () => {
    while (!controller.signal.aborted) {
      let clean = false;
      try { clean = await follow(threadId, controller); } catch { clean = false; }
      if (controller.signal.aborted) return;
      document.body.dataset.live = "off";
      if (!clean) live.retry = Math.min(live.retry * 2, 15_000);
      await new Promise((resolve) => setTimeout(resolve, clean ? 200 : live.retry));
    }
  })();
}

function onLive(handlers) { Object.assign(live.handlers, handlers); }
