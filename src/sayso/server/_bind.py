"""The local-mode bind rule: a server without principals listens on a loopback name only (its start-up line says so).

The loopback names are the guard's (`LOOPBACK_NAMES`): a server binds to the names it answers to as
a `Host`, so `--host localhost` and `--host ::1` serve local mode as 127.0.0.1 does.
"""

from __future__ import annotations

from .._config.file import Config
from ..exceptions import ConfigError
from ._guard import LOOPBACK_NAMES

LOCAL_HOST = "127.0.0.1"
"""The address a server binds to when none is named."""


def bind_address(host: str) -> str:
    """`host` as a socket binds it: an IPv6 address without the brackets a URL puts round it (`[::1]` is ::1)."""
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


def url_host(host: str) -> str:
    """`host` as a URL or a gRPC target names it: an IPv6 address in brackets (`::1` is [::1]), any other as it is."""
    bare = bind_address(host)
    return f"[{bare}]" if ":" in bare else bare


def check_bind(config: Config, host: str) -> None:
    """Refuse to serve local development mode (no principals) anywhere but a loopback name.

    Raises:
        ConfigError: no principals are configured and `host` is not a loopback name.
    """
    if config.principals:
        return
    if url_host(host).lower() not in LOOPBACK_NAMES:
        names = ", ".join(sorted(bind_address(name) for name in LOOPBACK_NAMES))
        raise ConfigError(
            f"no principals are configured, so the server runs in local development mode and binds only to "
            f"loopback ({names}), not {host!r}; add 'principals:' with tokens to serve on other addresses"
        )
