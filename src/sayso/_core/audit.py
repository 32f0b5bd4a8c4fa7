"""The audit chain (§7): each record carries the hash of the one before, so edits, deletions and reordering show."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

GENESIS = "0" * 64
"""The `prev_hash` of the first record."""


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no spaces: the same value always gives the same text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def chain_hash(prev_hash: str, seq: int, body: dict[str, Any]) -> str:
    """The hash of a record: its position, its content and the previous record's hash."""
    return hashlib.sha256(f"{prev_hash}|{seq}|{canonical_json(body)}".encode()).hexdigest()


@dataclass(frozen=True, kw_only=True)
class AuditRecord:
    """One line of the audit log."""

    seq: int
    body: dict[str, Any]
    """What happened: event, request, tool, who, decision, scope, reason, arguments and times."""
    prev_hash: str
    hash: str


@dataclass(frozen=True, kw_only=True)
class AuditProblem:
    """The first place the chain breaks, and how."""

    seq: int
    problem: str


def verify_chain(records: Sequence[AuditRecord]) -> AuditProblem | None:
    """Check every record against its content and predecessor; `None` when the chain is intact."""
    prev = GENESIS
    expected_seq = 1
    for record in records:
        if record.seq != expected_seq:
            what = "missing" if record.seq > expected_seq else "out of order"
            return AuditProblem(seq=expected_seq, problem=f"record {expected_seq} is {what} (found {record.seq} next)")
        if record.prev_hash != prev:
            return AuditProblem(seq=record.seq, problem=f"record {record.seq} does not follow record {record.seq - 1}")
        if chain_hash(record.prev_hash, record.seq, record.body) != record.hash:
            return AuditProblem(seq=record.seq, problem=f"record {record.seq} was altered after it was written")
        prev = record.hash
        expected_seq += 1
    return None
