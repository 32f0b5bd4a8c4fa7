"""Lease holders' names: which runtime (host, pid, nonce) holds a run, and whether it is a gone process of this host.

A runtime names itself with `new_holder` when it starts; the store writes that name as a run's
lease holder. A holder on this host whose process no longer exists has let go at once, before its
lease lapses: the decide verb reads that as a fact beside the run (the core's rule takes it as
data), and the runtime's sweeps take such runs over.
"""

from __future__ import annotations

import os
import secrets
import socket


def new_holder() -> str:
    """This runtime's name as a lease holder: host and pid (so a dead holder on this host is recognised) and a nonce."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


def holder_is_dead(holder: str | None) -> bool:
    """Whether a lease holder on this host is a process that no longer exists (`None`, no holder: no)."""
    if holder is None:
        return False
    host, _, rest = holder.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False
