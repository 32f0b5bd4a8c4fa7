"""`sayso serve`: load the config, enforce the local-mode bind rule, and run uvicorn."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import uvicorn
import yaml
from pydantic import TypeAdapter, ValidationError

from .._config import Config, load_config
from .._runtime import Sayso
from ..exceptions import ConfigError
from ._app import create_app
from ._webhooks import WebhookConfig

logger = logging.getLogger("sayso.server")

LOCAL_HOST = "127.0.0.1"
"""The only address a server without principals binds to."""

GRACEFUL_SHUTDOWN_SECONDS = 30
"""How long in-flight requests get to finish after SIGTERM or Ctrl-C."""

_WEBHOOKS: TypeAdapter[list[WebhookConfig]] = TypeAdapter(list[WebhookConfig])


def load_server_config(path: str | Path) -> tuple[Config, list[WebhookConfig]]:
    """Read `sayso.yaml` and its `webhooks:` list.

    `Config` has no `webhooks` field yet, so the list is taken out of the raw file here and
    the rest is validated as `load_config` does.

    Raises:
        ConfigError: the file cannot be read or is invalid.
    """
    file = Path(path)
    if "webhooks" in Config.model_fields:
        config = load_config(file)
        hooks = getattr(config, "webhooks", None) or []
        return config, _WEBHOOKS.validate_python(hooks, from_attributes=True)
    try:
        raw: Any = yaml.safe_load(file.read_text())
    except OSError as exc:
        raise ConfigError(f"cannot read config {str(file)!r}: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"config {str(file)!r} is not valid YAML: {exc}") from exc
    if not isinstance(raw, dict) or "webhooks" not in raw:
        return load_config(file), []
    rest = {k: v for k, v in raw.items() if k != "webhooks"}
    try:
        hooks = _WEBHOOKS.validate_python(raw["webhooks"] or [])
        config = Config.model_validate({**rest, "base_dir": file.resolve().parent})
    except ValidationError as exc:
        raise ConfigError(f"config {str(file)!r} is invalid:\n{exc}") from exc
    return config, hooks


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


def serve(config_path: str, host: str = LOCAL_HOST, port: int = 8000) -> None:
    """Serve the REST API and web UI for a config until interrupted (`sayso serve CONFIG`).

    Args:
        config_path: the `sayso.yaml` to serve.
        host: the address to bind; only 127.0.0.1 without principals.
        port: the TCP port.

    Raises:
        ConfigError: the config is invalid, or local development mode was asked to bind elsewhere.
    """
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format="%(levelname)s:     %(name)s: %(message)s")
    config, hooks = load_server_config(config_path)
    check_bind(config, host)
    app = create_app(Sayso(config), webhooks=hooks)
    logger.info("sayso serves %s on http://%s:%d (UI at /, API docs at /docs)", config_path, host, port)
    uvicorn.run(app, host=host, port=port, timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS, log_level="info")
