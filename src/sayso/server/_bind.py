"""The local-mode bind rule: a server without principals listens on 127.0.0.1 only (its start-up line says so)."""

from __future__ import annotations

from .._config.file import Config
from ..exceptions import ConfigError

LOCAL_HOST = "127.0.0.1"
"""The only address a server without principals binds to."""


def check_bind(config: Config, host: str) -> None:
    """Refuse to serve local development mode (no principals) anywhere but 127.0.0.1.

    Raises:
        ConfigError: no principals are configured and `host` is not 127.0.0.1.
    """
    if config.principals:
        return
    if host != LOCAL_HOST:
        raise ConfigError(
            f"no principals are configured, so the server runs in local development mode and binds only to "
            f"{LOCAL_HOST}, not {host!r}; add 'principals:' with tokens to serve on other addresses"
        )
