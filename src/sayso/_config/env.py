"""Secrets a config names by environment variable: one rule for reading them and for saying which are not set.

A secret is never written in the file, only the name of the variable holding it. Whatever reads one
at start (`sayso serve`'s channels and webhooks) refuses an unset variable with the same words, and
`sayso check` warns of it in those words before a server is started without it.
"""

from __future__ import annotations

import os

from ..exceptions import ConfigError


def unset_message(env: str) -> str:
    """What is said of a variable that a config names and the environment lacks."""
    return f"the environment variable {env} is not set"


def env_secret(env: str, where: str) -> str:
    """The value of `env`, which the config entry at `where` names.

    Raises:
        ConfigError: the variable is not set (or empty).
    """
    value = os.environ.get(env, "")
    if not value:
        raise ConfigError(f"{where}: {unset_message(env)}")
    return value
