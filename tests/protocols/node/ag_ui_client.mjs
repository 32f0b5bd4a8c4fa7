// Drives a sayso AG-UI endpoint with @ag-ui/client's HttpAgent: a run that pauses on an
// approval, then a resume that approves it. Prints one JSON line per run with what it saw.
import { HttpAgent } from "@ag-ui/client";

const [url, threadId] = process.argv.slice(2);
const agent = new HttpAgent({ url, threadId });
agent.addMessage({ id: "m-1", role: "user", content: "delete notes" });

async function run(params) {
  const seen = { events: [], outcome: null };
  await agent.runAgent(params, {
    onEvent: ({ event }) => {
      seen.events.push(event.type);
      if (event.type === "RUN_FINISHED") seen.outcome = event.outcome ?? null;
    },
  });
  return seen;
}

const first = await run({});
console.log(JSON.stringify(first));
const interrupt = first.outcome.interrupts[0];
const second = await run({
  resume: [{ interruptId: interrupt.id, status: "resolved", payload: { status: "approved" } }],
});
console.log(JSON.stringify({ ...second, messages: agent.messages.length }));
