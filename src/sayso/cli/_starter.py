"""What `sayso init` writes: a starter project that runs as is, with no API key.

A config, a tools module with one tool that needs approval (and one that reads), and a script
standing in for the model, so `sayso run`, `sayso chat` and `sayso serve` work on it at once and
a person sees a pause, decides it and watches the run carry on. Swapping the script for a real
model is one line of the config.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

CONFIG = """\
# A starter sayso project, written by `sayso init`. Run it with no API key:
#   sayso run sayso.yaml "refund A-100 25"     (pauses: the refund needs your approval)
#   sayso chat sayso.yaml                      (answer requests at the prompt)
#   sayso serve sayso.yaml                     (the web UI on http://127.0.0.1:8000/)
store: sqlite:///sayso.db          # relative to this file; SAYSO_STORE overrides it
models:
  # A script, not an LLM: no network, no key. For a real model, give the agent a model
  # string instead, for example `model: openai:gpt-4o-mini` (and set OPENAI_API_KEY).
  main: {scripted: script.yaml}
agents:
  desk:
    model: main
    description: Looks orders up and refunds them, with your approval.
    instructions: |
      You help with orders. Look an order up before refunding it, and ask the person
      (ask_user) when the amount to refund is missing. Refunds need the person's approval.
    tools:
      - desk_tools:find_order
      - desk_tools:refund
entry: desk
"""

TOOLS = '''\
"""The starter project's tools: one that reads, one that moves money and so waits for a person."""

from __future__ import annotations

from pathlib import Path

import sayso

ORDERS = {"A-100": 25.0, "A-101": 120.0}
"""The orders this shop knows, with what each cost."""

LEDGER = Path(__file__).with_name("refunds.txt")
"""Every refund made, one line each: an approved call runs once, so each shows once."""


@sayso.tool(read_only=True)
def find_order(order_id: str) -> str:
    """Look an order up.

    Args:
        order_id: the order's id, such as A-100.
    """
    if order_id not in ORDERS:
        return f"No order {order_id}."
    return f"Order {order_id} cost {ORDERS[order_id]:.2f}."


@sayso.tool(requires_approval=True, hint="Refunds move money.")
def refund(order_id: str, amount: float) -> str:
    """Refund part or all of an order.

    Args:
        order_id: the order's id.
        amount: how much to refund.
    """
    if order_id not in ORDERS:
        return f"No order {order_id}, so I refunded nothing."
    with LEDGER.open("a") as ledger:
        ledger.write(f"{order_id} {amount:.2f}\\n")
    return f"Refunded {amount:.2f} on order {order_id}."
'''

SCRIPT = r"""# The starter's scripted model: the first rule that matches answers (see docs/guides/scripted.md).
name: starter
rules:
  - user: '^\s*find\s+(?P<order>\S+)\s*$'
    call: find_order
    args: {order_id: "{order}"}
  - tool: find_order
    reply: "{result}"

  - user: '^\s*refund\s+(?P<order>\S+)\s+(?P<amount>[0-9]+(\.[0-9]+)?)\s*$'
    call: refund
    args: {order_id: "{order}", amount: "{amount|number}"}
  - user: '^\s*refund\s+(?P<order>\S+)\s*$'
    call: ask_user
    args:
      questions:
        - question: "How much should I refund on that order?"
          choices: ["10", "25"]
  - tool: ask_user
    user: '^\s*refund\s+(?P<order>\S+)'
    result: '"answer": \["(?P<amount>[0-9]+(\.[0-9]+)?)"'
    call: refund
    args: {order_id: "{order}", amount: "{amount|number}"}
  - tool: ask_user
    reply: "I need the amount as a number, so I refunded nothing."
  - tool: refund
    reply: "{result}"
fallback: "I am a script, not an LLM. I understand: find ORDER, refund ORDER AMOUNT, refund ORDER."
"""

FILES = {"sayso.yaml": CONFIG, "desk_tools.py": TOOLS, "script.yaml": SCRIPT}
"""The starter project, file name → text."""


def write_starter(folder: Path) -> list[Path]:
    """Write the starter project into `folder` (created when missing); returns the files written.

    Raises:
        FileExistsError: a file of the starter is already there; nothing was written.
        OSError: the folder cannot be made or written (`folder` is a file: NotADirectoryError).
    """
    if folder.exists() and not folder.is_dir():  # else mkdir's FileExistsError read as a starter file already there
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(folder))
    targets = [folder / name for name in FILES]
    taken = [t for t in targets if t.exists()]
    if taken:
        raise FileExistsError(", ".join(str(t) for t in taken))
    folder.mkdir(parents=True, exist_ok=True)
    for target in targets:
        target.write_text(FILES[target.name])
    return targets
