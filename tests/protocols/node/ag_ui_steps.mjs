// Drives a sayso AG-UI endpoint with @ag-ui/client's HttpAgent through a list of steps, as a kaboo
// app would: say something, answer the interrupts of the last run, answer its pending browser tool
// calls with tool messages, and send forwardedProps / tools / context with each run. A step may drop its
// run once it started (`abortOnStart`, as a closed tab or a lost network does) and wait for a line on
// stdin before it runs (`gate`), so the test decides when it goes on.
// Usage: node ag_ui_steps.mjs URL THREAD_ID STEPS_JSON; prints one JSON line per step.
import { randomUUID } from "node:crypto";
import { createInterface } from "node:readline";
import { HttpAgent } from "@ag-ui/client";

const [url, threadId, stepsJson] = process.argv.slice(2);
const agent = new HttpAgent({ url, threadId });
let last = null; // the latest run that ended with an outcome (a refused run leaves the pause as it was)
let stdin = null;

for (const step of JSON.parse(stepsJson)) {
  if (step.gate) {
    stdin = stdin ?? createInterface({ input: process.stdin })[Symbol.asyncIterator]();
    await stdin.next();
  }
  if (step.say) agent.addMessage({ id: randomUUID(), role: "user", content: step.say });
  const params = { tools: step.tools ?? [], context: step.context ?? [] };
  if (step.forwardedProps !== undefined) params.forwardedProps = step.forwardedProps;
  if (step.resume) {
    params.resume = (last.outcome?.interrupts ?? []).map((i) => ({ interruptId: i.id, ...step.resume }));
  }
  for (const [name, content] of Object.entries(step.answerCalls ?? {})) {
    for (const call of last.calls.filter((c) => c.name === name && last.pending.includes(c.id))) {
      agent.addMessage({ id: randomUUID(), role: "tool", toolCallId: call.id, content: JSON.stringify(content) });
    }
  }
  const seen = { events: [], outcome: null, metadata: null, calls: [], results: [], error: null, pending: [] };
  try {
    await agent.runAgent(params, {
      onEvent: ({ event }) => {
        seen.events.push(event.type);
        if (step.abortOnStart && event.type === "RUN_STARTED") agent.abortRun();
        if (event.type === "TOOL_CALL_START") {
          seen.calls.push({
            id: event.toolCallId,
            name: event.toolCallName,
            subagentRunId: event.subagentRunId ?? null,
            metadata: event.metadata ?? null,
            args: "",
          });
        }
        if (event.type === "TOOL_CALL_ARGS") {
          const call = seen.calls.find((c) => c.id === event.toolCallId);
          if (call) call.args += event.delta;
        }
        if (event.type === "TOOL_CALL_RESULT") {
          seen.results.push({ toolCallId: event.toolCallId, content: event.content, metadata: event.metadata ?? null });
        }
        if (event.type === "RUN_FINISHED") {
          seen.outcome = event.outcome ?? null;
          seen.metadata = event.metadata ?? null;
          seen.result = event.result ?? null;
        }
        if (event.type === "RUN_ERROR") seen.error = { message: event.message, code: event.code ?? null };
      },
    });
  } catch (err) {
    seen.error = seen.error ?? { message: String(err), code: null };
  }
  seen.pending = seen.outcome?.pendingToolCallIds ?? seen.metadata?.pendingToolCallIds ?? [];
  // What the chat shows: the agent's message list after the run.
  seen.messages = agent.messages.map((m) => ({
    role: m.role,
    content: m.content ?? null,
    toolCalls: (m.toolCalls ?? []).map((c) => c.function.name),
  }));
  console.log(JSON.stringify(seen));
  if (seen.outcome) last = seen;
}
if (stdin) {
  await stdin.return();
  process.stdin.destroy();
}
