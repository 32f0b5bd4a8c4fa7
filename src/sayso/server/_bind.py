"""The local-mode bind rule: a server without principals listens on 127.0.0.1 only, and says so loudly."""

from __future__ import annotations

import logging

from .._config.file import Config
from ..exceptions import ConfigError

logger = logging.getLogger("sayso.server")

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
    logger.warning(
        "\n%s\n  LOCAL DEVELOPMENT MODE: no principals are configured.\n"
        "  Anyone who can reach %s may run agents and decide every request, as 'local'.\n"
        "  Add 'principals:' with bearer tokens to sayso.yaml before sharing this server.\n%s",
        "!" * 78,
        LOCAL_HOST,
        "!" * 78,
    )
