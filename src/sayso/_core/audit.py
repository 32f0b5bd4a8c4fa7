"""The audit chain: hashed records, anchored by a key and a checkpointed head, and its verification.

See docs/guides/operations.md#the-audit-log.

Each record carries the hash of the one before, so an edit, a deletion in the middle or a
reordering shows. A hash chain alone cannot show a rewrite of the whole table with recomputed
hashes, a record appended with a valid hash, or a cut tail; the anchor does:

- with an audit key (an HMAC secret from the environment), every record carries a MAC of its
  position and hash, so a record written or rewritten without the key shows;
- the store keeps the chain's head (last position, hash and a MAC of its own kind) beside the
  records, written in the same commit as each append, so a cut tail or a record appended behind
  sayso's back shows; with a key, nobody without it can move the head;
- the head may also be exported to a file, out of reach of whoever rewrites the database. A head
  exported to a file is signed as such, so once it was, the file missing is a problem, never a
  note: whoever cut the tail and rolled the database's head back cannot hide it by deleting the file.

A chain that was kept without a key and then gets one is vouched for once, by a signed
`audit_anchored` record naming the last unsigned record; after that every record must be signed.
Nothing here does I/O: the store hands over records and heads, the runtime hands over the key.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..exceptions import ConfigError
from .audit_events import ANCHORED_EVENT, AnchoredEvent, AuditEvent

GENESIS = "0" * 64
"""The `prev_hash` of the first record."""


HeadSigned = Literal["exported", "kept"]
"""How a head was signed: as exported to a head file too, or as kept in the store only."""

_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
"""One encoder for every canonical text: `json.dumps` with these options builds a new one per call."""


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no spaces: the same value always gives the same text."""
    return _CANONICAL.encode(value)


def chain_hash(prev_hash: str, seq: int, body: Mapping[str, Any]) -> str:
    """The hash of a record: its position, its content and the previous record's hash."""
    return _text_hash(prev_hash, seq, canonical_json(body))


def _text_hash(prev_hash: str, seq: int, text: str) -> str:
    """`chain_hash` of a body whose canonical JSON is `text`."""
    return hashlib.sha256(f"{prev_hash}|{seq}|{text}".encode()).hexdigest()


@dataclass(frozen=True)
class AuditKey:
    """The secret that anchors the chain: a record or head it did not sign is not sayso's."""

    secret: bytes
    exports_head: bool = False
    """Whether each head this key signs is also exported to a head file (`audit.head_file`): its MAC says so."""

    def sign_record(self, seq: int, record_hash: str) -> str:
        """The MAC of the record at `seq` with hash `record_hash`."""
        return self._mac(f"record|{seq}|{record_hash}")

    def sign_head(self, seq: int, head_hash: str, *, exported: bool | None = None) -> str:
        """The MAC of a head; of another kind than a record's, so no record's MAC passes for an older head.

        A head exported to a file (`exported`, by default `exports_head`) has a MAC of a kind of its own.
        """
        kind = "head+file" if (self.exports_head if exported is None else exported) else "head"
        return self._mac(f"{kind}|{seq}|{head_hash}")

    def signed_head(self, head: AuditHead) -> HeadSigned | None:
        """How this key signed `head`: as exported to a file, as kept in the store only; `None`: not signed by it."""
        if head.mac is None:
            return None
        if hmac.compare_digest(head.mac, self.sign_head(head.seq, head.hash, exported=True)):
            return "exported"
        if hmac.compare_digest(head.mac, self.sign_head(head.seq, head.hash, exported=False)):
            return "kept"
        return None

    @property
    def fingerprint(self) -> str:
        """A short, public name of the key (not the key): which key anchored a chain."""
        return self._mac("fingerprint")[:12]

    def _mac(self, text: str) -> str:
        return hmac.new(self.secret, text.encode(), hashlib.sha256).hexdigest()


@dataclass(frozen=True, kw_only=True)
class AuditRecord:
    """One line of the audit log."""

    seq: int
    body: Mapping[str, Any]
    """What happened, exactly as written (an `AuditEvent`; `AUDIT_EVENT_ADAPTER` reads it back as one): the
    hash covers these bytes, so records written by older versions keep their own shape."""
    prev_hash: str
    hash: str
    mac: str | None = None
    """The audit key's MAC of `seq` and `hash`; `None` for a record written without a key."""


@dataclass(frozen=True, kw_only=True)
class AuditHead:
    """The chain's last position and hash, checkpointed apart from the records (and, optionally, in a file)."""

    seq: int
    hash: str
    mac: str | None = None
    """The audit key's head MAC of `seq` and `hash`; `None` when written without a key."""

    def dump(self) -> str:
        """The head as the JSON of a head file."""
        return canonical_json({"seq": self.seq, "hash": self.hash, "mac": self.mac})

    @classmethod
    def load(cls, text: str) -> AuditHead:
        """A head from the JSON of a head file.

        Raises:
            ValueError: the text is not a head.
        """
        data = json.loads(text)
        if not isinstance(data, dict) or not isinstance(data.get("seq"), int) or not isinstance(data.get("hash"), str):
            raise ValueError("not an audit head: expected {seq, hash, mac}")
        mac = data.get("mac")
        return cls(seq=data["seq"], hash=data["hash"], mac=mac if isinstance(mac, str) else None)


def seal(
    bodies: Sequence[AuditEvent], *, after: AuditHead | None, key: AuditKey | None
) -> tuple[list[tuple[AuditRecord, str]], AuditHead | None]:
    """The records that extend a chain whose head is `after`, each with its body's canonical JSON, and the new head.

    The text is what the record's hash covers and what the store writes as its body: encoded once.

    Raises:
        ConfigError: the chain is signed and no key was given (an unsigned record would break it), or a
            key was given for a chain kept without one that nobody vouched for yet: the step that wanted
            to append is refused (fail closed).
    """
    if not bodies:
        return [], after
    if key is None and after is not None and after.mac is not None:
        raise ConfigError(
            f"the audit chain is anchored by a key (signed through record {after.seq}) and this process has none; "
            "set the audit key (SAYSO_AUDIT_KEY) so its records can be signed"
        )
    if key is not None and after is not None and after.mac is None and not vouches_for(bodies[0], after):
        raise ConfigError(
            f"the audit log holds {after.seq} record(s) written without a key; vouch for them once with "
            "`sayso audit anchor` (Sayso.anchor_audit) before records are signed"
        )
    seq, prev = (after.seq, after.hash) if after else (0, GENESIS)
    records: list[tuple[AuditRecord, str]] = []
    for body in bodies:
        seq += 1
        text = canonical_json(body)
        digest = _text_hash(prev, seq, text)
        record = AuditRecord(
            seq=seq, body=body, prev_hash=prev, hash=digest, mac=key.sign_record(seq, digest) if key else None
        )
        records.append((record, text))
        prev = digest
    return records, AuditHead(seq=seq, hash=prev, mac=key.sign_head(seq, prev) if key else None)


def anchor_body(head: AuditHead, *, at: float) -> AnchoredEvent:
    """The signed record that vouches for the unsigned records up to `head` (written once, on purpose)."""
    return AnchoredEvent(event="audit_anchored", through_seq=head.seq, through_hash=head.hash, at=at)


def vouches_for(body: Mapping[str, Any], head: AuditHead) -> bool:
    """Whether `body` is the anchor record for the unsigned chain ending at `head`."""
    return (
        body.get("event") == ANCHORED_EVENT
        and body.get("through_seq") == head.seq
        and (body.get("through_hash") == head.hash)
    )


@dataclass(frozen=True, kw_only=True)
class AuditProblem:
    """The first place the chain breaks, and how."""

    seq: int
    problem: str


@dataclass(frozen=True, kw_only=True)
class AuditReport:
    """What verifying the audit log found."""

    records: int
    """How many records the log holds."""
    problem: AuditProblem | None
    """The first bad record, or `None` when nothing is wrong."""
    anchored: bool
    """Whether a key anchored what was checked; without one, a rewrite with recomputed hashes cannot be told apart."""
    note: str
    """What was checked, in one sentence a person reads (says plainly when the chain is unanchored)."""
    predates_key: bool = False
    """The key is set but nothing in the log was ever signed: it was kept before the key, and `sayso audit anchor`
    vouches for it (or its signatures were stripped with nothing left to show it). Not intact, yet no tampering
    to name either."""

    @property
    def intact(self) -> bool:
        """No problem was found."""
        return self.problem is None


UNANCHORED_NOTE = (
    "UNANCHORED: no audit key is configured, so only the hash links were checked; a rewrite of the whole table "
    "with recomputed hashes or a forged append cannot be detected. Set SAYSO_AUDIT_KEY to anchor the chain."
)


def verify_chain(
    records: Sequence[AuditRecord],
    *,
    key: AuditKey | None = None,
    head: AuditHead | None = None,
    exported: AuditHead | None = None,
) -> AuditProblem | None:
    """Check every record against its content, its predecessor, the key and the heads; `None` when intact.

    Args:
        records: the whole log, in `seq` order.
        key: the audit key; with it every record must be signed (or vouched for by an anchor record)
            and the head must carry its MAC.
        head: the head the store checkpointed beside the records.
        exported: a head exported to a file, checked against the records like the stored one.
    """
    problem = _links(records) or _signatures(records, key)
    if problem is None and records and key is not None and head is None:
        problem = AuditProblem(seq=records[-1].seq, problem="the chain's anchored head is missing")
    # The exported head first: it is out of reach of whoever rewrote the database, so where the two
    # disagree it names the first record really lost.
    for where, checked in (("exported", exported), ("checkpointed", head)):
        if problem is None and checked is not None:
            problem = _head_problem(records, checked, key, where=where)
    if problem is None and head is not None and records and records[-1].seq > head.seq:
        seq = head.seq + 1
        problem = AuditProblem(seq=seq, problem=f"record {seq} was appended behind sayso's back (after the head)")
    return problem


def verify_report(
    records: Sequence[AuditRecord],
    *,
    key: AuditKey | None,
    head: AuditHead | None,
    exported: AuditHead | None = None,
    head_file: str | None = None,
    head_file_garbled: bool = False,
) -> AuditReport:
    """Verify the log and say what was checked: the report `sayso audit verify` and the REST API show.

    `head_file_garbled`: the head file holds something that is no head; only sayso writes it, so it was
    edited or corrupted, and the log is not vouched for.
    """
    if key is not None and _written_without_a_key(records, head, exported, garbled=head_file_garbled):
        return AuditReport(
            records=len(records),
            problem=AuditProblem(
                seq=1,
                problem=f"the log's {len(records)} record(s) were written before the audit key was set (or had "
                "every signature stripped); run `sayso audit anchor` once to vouch for them, if you trust the log "
                "as it stands",
            ),
            anchored=False,
            note=f"NOT YET ANCHORED: audit key {key.fingerprint} is set but signed none of the log; only the hash "
            "links were checked",
            predates_key=True,
        )
    problem = verify_chain(records, key=key, head=head, exported=exported)
    if problem is None and head_file and exported is None and not head_file_garbled:
        problem = _lost_head_file(head_file, head, key)
    if problem is None and head_file_garbled:
        problem = AuditProblem(
            seq=head.seq if head else (records[-1].seq if records else 0),
            problem=f"the head file {head_file} holds no audit head: it was edited or corrupted",
        )
    if problem is None and key is None and (any(r.mac for r in records) or (head is not None and head.mac)):
        problem = AuditProblem(
            seq=next((r.seq for r in records if r.mac), head.seq if head else 0),
            problem="the chain is signed but no audit key is configured to check it; set SAYSO_AUDIT_KEY",
        )
    if key is None:
        note = UNANCHORED_NOTE
    else:
        note = f"anchored by audit key {key.fingerprint}: every record's signature and the checkpointed head checked"
        if not head_file:
            note += " (no head file is exported)"
        elif exported is None and records and not head_file_garbled:
            # No head was exported to it yet (the file was configured since): nothing to check against.
            note += f"; the head file {head_file} is missing and no head was exported to it yet (the next record does)"
        else:
            note += f", and the head exported to {head_file}"
    return AuditReport(records=len(records), problem=problem, anchored=key is not None, note=note)


def _written_without_a_key(
    records: Sequence[AuditRecord], head: AuditHead | None, exported: AuditHead | None, *, garbled: bool
) -> bool:
    """Whether the log, its links intact, shows no sign of a key at all: no record, head or exported head signed."""
    if not records or garbled or _links(records) is not None:
        return False
    heads = [h for h in (head, exported) if h is not None]
    return all(r.mac is None for r in records) and all(h.mac is None for h in heads)


def _lost_head_file(head_file: str, head: AuditHead | None, key: AuditKey | None) -> AuditProblem | None:
    """A missing head file the chain's head was exported to: deleted (hiding a cut tail), or never written."""
    if key is None or head is None or key.signed_head(head) != "exported":
        return None
    return AuditProblem(
        seq=head.seq + 1,
        problem=f"the head file {head_file} is missing, yet the chain's head (record {head.seq}) was exported to "
        f"it: it was deleted, and records after {head.seq} may have been cut, or it could not be written "
        "(the log says why)",
    )


def _links(records: Sequence[AuditRecord]) -> AuditProblem | None:
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


def _signatures(records: Sequence[AuditRecord], key: AuditKey | None) -> AuditProblem | None:
    """With a key: every record signed, except an unsigned prefix that a signed anchor record vouches for."""
    if key is None:
        return None
    signed_from: int | None = None
    for record in records:
        if record.mac is None:
            if signed_from is not None:
                return AuditProblem(seq=record.seq, problem=f"record {record.seq} is not signed by the audit key")
            continue
        if not hmac.compare_digest(record.mac, key.sign_record(record.seq, record.hash)):
            return AuditProblem(
                seq=record.seq, problem=f"record {record.seq} is not signed by the audit key (rewritten or forged)"
            )
        if signed_from is None:
            signed_from = record.seq
            vouched = record.body.get("event") == ANCHORED_EVENT and record.body.get("through_seq") == record.seq - 1
            if record.seq > 1 and not vouched:
                return AuditProblem(seq=1, problem="record 1 is not signed by the audit key")
    if records and signed_from is None:
        return AuditProblem(seq=1, problem="record 1 is not signed by the audit key")
    return None


def _head_problem(
    records: Sequence[AuditRecord], head: AuditHead, key: AuditKey | None, *, where: str
) -> AuditProblem | None:
    if key is not None and key.signed_head(head) is None:
        return AuditProblem(
            seq=head.seq, problem=f"the {where} head (record {head.seq}) is not signed by the audit key"
        )
    last = records[-1].seq if records else 0
    if head.seq > last:
        seq = last + 1
        cut = f"records {seq}..{head.seq} are" if head.seq > seq else f"record {seq} is"
        return AuditProblem(seq=seq, problem=f"{cut} missing: the log was cut after record {last} ({where} head)")
    if head.seq > 0 and records[head.seq - 1].hash != head.hash:
        return AuditProblem(seq=head.seq, problem=f"record {head.seq} differs from the {where} head")
    return None
