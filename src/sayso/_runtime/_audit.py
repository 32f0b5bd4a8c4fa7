"""The anchored audit log: the key the store signs with, the exported head file, and verification.

The store appends and signs (in the same commit as the change a record reports); this module
gives it the key from the configuration, writes each committed head to the head file when one
is configured, vouches once for records written before the chain had a key, and verifies the
log against the key, the store's checkpointed head and the exported one.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

from .._core.audit import AuditHead, AuditKey, AuditReport, anchor_body, verify_report
from ..exceptions import ConfigError

if TYPE_CHECKING:
    from .._config.file import Config
    from .._store import InboxPort
    from ._kernel import Kernel

logger = logging.getLogger("sayso.audit")


class HeadFile:
    """The chain's head exported to a file after each append: it only moves forward, across processes."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> AuditHead | None:
        """The exported head, or `None` when nothing was exported yet.

        Raises:
            ConfigError: the file cannot be read (a folder, no permission): what to fix is the configuration.
            ValueError: the file holds no head (edited or corrupted), which `verify` reports as tampering.
        """
        try:
            text = self.path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise ConfigError(f"the audit head file {str(self.path)!r} cannot be read: {exc.strerror or exc}") from exc
        return AuditHead.load(text.decode())

    def write(self, head: AuditHead) -> None:
        """Export `head` unless the file already holds a later one (another process appended since)."""
        import fcntl

        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_name(self.path.name + ".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                current = AuditHead.load(self.path.read_text())
            except (OSError, ValueError):
                current = None
            if current is not None and current.seq >= head.seq:
                return
            temporary = self.path.with_name(self.path.name + f".{os.getpid()}.tmp")
            with open(temporary, "w") as out:
                out.write(head.dump())
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, self.path)


def head_file(config: Config) -> HeadFile | None:
    """The configured head file, relative to the config's folder."""
    if config.audit.head_file is None:
        return None
    path = Path(config.audit.head_file)
    return HeadFile(path if path.is_absolute() else config.base_dir / path)


def audit_key(config: Config) -> AuditKey | None:
    """The configured audit key (from the environment), or `None` for an unanchored chain."""
    secret = config.audit.key()
    return AuditKey(secret, exports_head=config.audit.head_file is not None) if secret is not None else None


def use_key(k: Kernel) -> None:
    """Hand the store the audit key and the head file's writer."""
    exported = head_file(k.config)

    def on_head(head: AuditHead) -> None:
        if exported is None:
            return
        try:
            exported.write(head)
        except OSError:
            # The change is committed and its head checkpointed in the store; a head file that could
            # not be written only weakens the next verify, so it is logged, never a failed step.
            logger.exception("could not export the audit head to %s", exported.path)

    k.store.use_audit_key(audit_key(k.config), on_head=on_head)


async def warn_unusable(store: InboxPort, key: AuditKey | None, config: Config) -> None:
    """Say at start when the audit log cannot be appended to as configured (so every decision would be refused).

    `key` is the one the store signs with (`use_key` handed it `audit_key(config)`).
    """
    head = await store.audit_head()
    if head is None:
        return
    if key is None and head.mac is not None:
        logger.warning(
            "the audit log is anchored by a key but %s is not set: every step that appends to it is refused",
            config.audit.key_env,
        )
    elif key is not None and head.mac is None:
        logger.warning(
            "the audit log holds %d record(s) written without a key; run `sayso audit anchor` once to vouch for "
            "them: until then every step that appends to it is refused",
            head.seq,
        )


async def anchor(k: Kernel) -> AuditHead | None:
    """Vouch for the records written before the chain had a key, with one signed `audit_anchored` record.

    Returns the head it vouched for (`None` when there was nothing to vouch for: an empty or signed chain).

    Raises:
        ConfigError: no audit key is configured.
    """
    if k.store.audit_key is None:
        raise ConfigError(f"no audit key is configured: set {k.config.audit.key_env} to anchor the audit log")
    head = await k.store.audit_head()
    if head is None or head.mac is not None:
        return None
    # Vouch only for a log that was never signed and whose links hold: signatures stripped from a signed
    # log (a rewrite) or a broken chain would otherwise be blessed as written before the key.
    found = (await report(k, unsigned=True)).problem
    if found is not None:
        raise ConfigError(
            f"the audit log does not verify (record {found.seq}: {found.problem}); anchoring would vouch for "
            "it as it stands: restore it from a backup first"
        )
    await k.store.append_audit([anchor_body(head, at=k.clock())])
    return head


async def report(k: Kernel, *, unsigned: bool = False) -> AuditReport:
    """Verify the log against the key, the store's checkpointed head and the exported head.

    `unsigned`: as a log written without a key, whatever key is set (what `anchor` may vouch for).
    """
    exported_file = head_file(k.config)
    records = await k.store.audit_records()
    head = await k.store.audit_head()
    exported: AuditHead | None = None
    garbled = False
    if exported_file is not None:
        try:
            exported = exported_file.read()
        except ConfigError:  # a ValueError too, but one the operator fixes: the file cannot be read at all
            raise
        except ValueError:
            garbled = True
    return verify_report(
        records,
        key=None if unsigned else k.store.audit_key,
        head=head,
        exported=exported,
        head_file=str(exported_file.path) if exported_file is not None else None,
        head_file_garbled=garbled,
    )
