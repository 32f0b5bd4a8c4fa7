"""Lease holders' names: which runtime (host, pid, nonce, PID namespace) holds a run, and whether it is a gone process.

A runtime names itself with `new_holder` when it starts; the store writes that name as a run's
lease holder. A holder of this host and this PID namespace whose process no longer exists has let
go at once, before its lease lapses: the decide verb reads that as a fact beside the run (the
core's rule takes it as data), and the runtime's sweeps take such runs over. Replicas may share a
hostname without sharing a PID namespace (Docker's `--network host`, Kubernetes' `hostNetwork`):
a pid is read only in the namespace it was named in, and a holder whose namespace is not known to
be this one (another's, or a name without one, written by an older sayso) is dead only once its
lease lapses.
"""

from __future__ import annotations

import functools
import os
import secrets
import socket
import sys


@functools.cache
def _pid_namespace() -> str | None:
    """This process's PID namespace, read once: Linux's namespace inode; `darwin` (which has none); else unknown."""
    try:
        link = os.readlink("/proc/self/ns/pid")  # "pid:[4026531836]"
    except OSError:
        return "darwin" if sys.platform == "darwin" else None
    inode = link.rpartition("[")[2].rstrip("]")
    return inode if inode.isdigit() else None


def new_holder() -> str:
    """This runtime's name as a lease holder: `host:pid:nonce`, then `:namespace` when this process's is known.

    Host, pid and PID namespace let a dead holder of this host be recognised; the nonce tells apart
    runtimes of one process.
    """
    name = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
    namespace = _pid_namespace()
    return name if namespace is None else f"{name}:{namespace}"


def holder_is_dead(holder: str | None) -> bool:
    """Whether a lease holder of this host and this PID namespace is a process that no longer exists.

    `None` (no holder), another host's, one of another PID namespace, or one naming no namespace: no
    (its lease tells).
    """
    if holder is None:
        return False
    host, pid_text, _nonce, namespace, *_ = [*holder.split(":", 3), "", "", ""]
    here = _pid_namespace()
    if host != socket.gethostname() or not pid_text.isdigit() or here is None or namespace != here:
        return False
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False
