"""Which store URLs sayso takes: the one rule `sayso check` and every store opening apply.

A SQLite URL names a file: `sqlite:///sayso.db` (relative to the config's folder) or
`sqlite:////var/lib/sayso/sayso.db` (absolute). An in-memory or file-less one (`sqlite://`,
`sqlite:///:memory:`) is refused: each connection would get its own empty database, and no run
would outlive the process. A PostgreSQL URL is `postgresql://…`, `postgres://…` or
`postgresql+asyncpg://…`. Whether a SQLite file's folder exists is the caller's to look at (this
module does no I/O); `no_folder` words the problem when it does not.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..exceptions import ConfigError

EXAMPLE = "sqlite:///sayso.db"
"""The URL a refusal suggests: a file next to the config."""

_POSTGRES_SCHEMES = ("postgresql", "postgres", "postgresql+asyncpg")
_USE = f"use {EXAMPLE} (a file next to the config), sqlite:////absolute/path/sayso.db or postgresql://user@host/db"


@dataclass(frozen=True)
class StoreUrl:
    """A store URL sayso takes, read: its backend and where it points."""

    url: str
    """The URL as configured."""
    backend: Literal["sqlite", "postgresql"]
    path: Path | None = None
    """The SQLite file (taken from the config's folder when the URL's path is relative); `None` on PostgreSQL."""

    @property
    def driver_url(self) -> str:
        """The URL SQLAlchemy opens: on the async SQLite driver (aiosqlite), or asyncpg."""
        if self.path is not None:
            return f"sqlite+aiosqlite:///{self.path}"
        return "postgresql+asyncpg://" + self.url.split("://", 1)[1]

    @property
    def shown(self) -> str:
        """The URL as sayso prints it: a SQLite file's absolute path, a PostgreSQL password left out."""
        if self.path is not None:
            return f"sqlite:///{self.path}" if self.path.is_absolute() else self.url
        return shown_url(self.url)


@dataclass(frozen=True)
class StoreUrlProblem:
    """Why a store URL is refused, and what to write instead."""

    message: str
    fix: str

    def error(self) -> ConfigError:
        """The problem as the error an opening store raises."""
        return ConfigError(f"{self.message}; {self.fix}")


def read_store_url(url: str, *, base_dir: Path | None = None) -> StoreUrl | StoreUrlProblem:
    """The store `url` names, or why sayso refuses it; a relative SQLite path is taken from `base_dir`."""
    scheme, colon, rest = url.partition(":")
    if scheme == "sqlite":
        return _sqlite(url, rest, base_dir)
    if scheme in _POSTGRES_SCHEMES and colon and rest.startswith("//") and len(rest) > 2:
        return StoreUrl(url, "postgresql")
    if scheme in _POSTGRES_SCHEMES:
        return StoreUrlProblem(f"the store {shown_url(url)!r} is not a PostgreSQL URL", "use postgresql://user@host/db")
    return StoreUrlProblem(
        f"the store {shown_url(url)!r}: sayso stores runs in SQLite or PostgreSQL, and {scheme!r} is neither", _USE
    )


def store_url(url: str, *, base_dir: Path | None = None) -> StoreUrl:
    """`read_store_url`, for a store being opened.

    Raises:
        ConfigError: sayso does not take `url`, naming it and what to write instead.
    """
    read = read_store_url(url, base_dir=base_dir)
    if isinstance(read, StoreUrlProblem):
        raise read.error()
    return read


def _sqlite(url: str, rest: str, base_dir: Path | None) -> StoreUrl | StoreUrlProblem:
    slashes, _, path = rest.partition("///")
    if slashes or not rest.startswith("///"):
        if rest in ("", "//"):
            return _no_file(url)
        return StoreUrlProblem(
            f"the SQLite store {url!r} is not written as sayso reads it",
            f"put three slashes before a relative path ({EXAMPLE}), four before an absolute one "
            "(sqlite:////var/lib/sayso/sayso.db)",
        )
    if "?" in path:
        return StoreUrlProblem(
            f"the SQLite store {url!r} has options after '?', which sayso does not take",
            f"name the file alone: {EXAMPLE}",
        )
    if path in ("", ":memory:") or path.endswith("/"):
        return _no_file(url)
    file = Path(path)
    if base_dir is not None and not file.is_absolute():
        file = Path(os.path.normpath(base_dir / file))
    return StoreUrl(url, "sqlite", file)


def _no_file(url: str) -> StoreUrlProblem:
    return StoreUrlProblem(
        f"the SQLite store {url!r} names no file: an in-memory database keeps nothing, and each connection "
        "would see its own empty one",
        f"name a file, as in {EXAMPLE} (next to the config) or sqlite:////var/lib/sayso/sayso.db",
    )


def no_folder(store: StoreUrl) -> StoreUrlProblem:
    """The problem of a SQLite file whose folder does not exist (sayso creates the file, never its folder)."""
    assert store.path is not None
    folder = store.path.parent
    return StoreUrlProblem(
        f"the folder {str(folder)!r} of the SQLite store {store.url!r} does not exist",
        f"create it (mkdir -p {folder}) or point the store at a file in a folder that exists",
    )


def shown_url(url: str) -> str:
    """A store URL as printed: its password, if any, left out."""
    scheme, sep, rest = url.partition("://")
    if not sep or "@" not in rest.split("/", 1)[0]:
        return url
    auth, _, host = rest.partition("@")
    user = auth.split(":", 1)[0]
    return f"{scheme}://{user}@{host}" if user else f"{scheme}://{host}"
