#!/usr/bin/env python3
"""What pydantic-ai alone costs a fresh process that resumes a paused run: the floor of `sayso decide`.

  bench/bare_resume.py pause DB     # untimed: run the anchor's agent until it asks for approval
  bench/bare_resume.py resume DB    # timed by bench/cli_start.py: a fresh process approves and finishes

`resume` does in a new process what any resume needs from pydantic-ai and nothing else: import
pydantic-ai and the anchor's `FunctionModel`, read the paused history from SQLite, decode it
through `ModelMessagesTypeAdapter`, run the agent on it with the approval, append the new
messages and commit. No store, policy, audit or CLI. bench/cli_start.py reports it as a ratio to
`import pydantic_ai`, beside `sayso decide`'s: the part of `decide`'s ratio pydantic-ai sets.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "anchors"))

from pydantic_ai import DeferredToolRequests, DeferredToolResults
from pydantic_ai.messages import ModelMessagesTypeAdapter
from pydanticai_cycle import build_agent, user_request

SCHEMA = "CREATE TABLE IF NOT EXISTS paused (seq INTEGER PRIMARY KEY, messages BLOB NOT NULL, call_id TEXT)"


async def pause(db: str) -> None:
    """Run the anchor's agent on a new request until it defers its call; store the history and the call's id."""
    result = await build_agent().run(user_request(0))
    assert isinstance(result.output, DeferredToolRequests)
    with sqlite3.connect(db) as conn:
        conn.execute(SCHEMA)
        conn.execute(
            "INSERT INTO paused (messages, call_id) VALUES (?, ?)",
            (ModelMessagesTypeAdapter.dump_json(result.all_messages()), result.output.approvals[0].tool_call_id),
        )


async def resume(db: str) -> None:
    """Approve the paused call and run the agent to its answer, appending what it added.

    The paused row stays, so every timed round resumes the same pause.
    """
    conn = sqlite3.connect(db)
    raw, call_id = conn.execute(
        "SELECT messages, call_id FROM paused WHERE call_id IS NOT NULL ORDER BY seq DESC LIMIT 1"
    ).fetchone()
    history = ModelMessagesTypeAdapter.validate_json(raw)
    result = await build_agent().run(
        message_history=history, deferred_tool_results=DeferredToolResults(approvals={call_id: True})
    )
    assert isinstance(result.output, str)
    with conn:
        conn.execute(
            "INSERT INTO paused (messages) VALUES (?)", (ModelMessagesTypeAdapter.dump_json(result.new_messages()),)
        )
    conn.close()


if __name__ == "__main__":
    verb, path = sys.argv[1], sys.argv[2]
    asyncio.run(pause(path) if verb == "pause" else resume(path))
