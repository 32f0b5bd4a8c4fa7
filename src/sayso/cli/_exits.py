"""The exit codes every `sayso` command follows (the table in docs/guides/cli.md), and which error gets which.

One table, so a script can tell "the run failed" from "my decision was refused" from "I typed a
wrong id" without reading the message.
"""

from __future__ import annotations

from ..exceptions import (
    CallerError,
    ConfigError,
    DecisionRefused,
    NotAllowed,
    NotFound,
    RunConflict,
    SaysoError,
    SchemaMismatch,
    StoreError,
)

DONE = 0
"""Done: the run completed or paused for a person, the decision was recorded, the check found no errors."""
FAILED = 1
"""The work failed: the run failed, the audit log was tampered with."""
WRONG = 2
"""What was typed or configured is wrong: an unknown option, action or agent, bad JSON, a config with errors."""
NOT_FOUND = 3
"""No such request, run, thread or grant."""
REFUSED = 4
"""The decision or command was not taken (it does not fit, another came first, it expired, it is not yours to
take, or the run is not in a state for it): nothing failed, and nothing changed."""
CANNOT_SERVE = 5
"""What sayso works with is out of reach: `sayso serve` could not start (the port is in use, the address is not
allowed, the store cannot be opened), or the store or the Temporal cluster did not answer (a `StoreError`: try
again; its message says what was done)."""
INTERRUPTED = 130
"""Ctrl-C stopped the command (as shells count SIGINT: 128 + 2); a run it was working on is said, with the way on."""


def exit_code(exc: SaysoError) -> int:
    """The exit code for an error a command stopped on."""
    if isinstance(exc, NotFound):
        return NOT_FOUND
    if isinstance(exc, DecisionRefused | NotAllowed | SchemaMismatch | RunConflict):
        return REFUSED
    if isinstance(exc, ConfigError | CallerError):
        return WRONG
    if isinstance(exc, StoreError):
        return CANNOT_SERVE
    return FAILED
