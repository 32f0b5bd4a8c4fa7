"""The `channels:` section of `sayso.yaml`: email over SMTP and Slack, where approvers are told of requests.

Re-exported by `_config.file`. A rule names where its requests go (`notify: [email:sre@example.com,
slack:#ops, webhook:billing]`); these models say how each channel is reached. Secrets are always
names of environment variables, read when `sayso serve` starts, never written in the file.
"""

from __future__ import annotations

import hashlib
import hmac
import os

from pydantic import BaseModel, ConfigDict, Field

from .._core.retries import DEFAULT_ATTEMPTS
from ..exceptions import ConfigError
from .env import env_secret

LINK_KEY_ENV = "SAYSO_LINK_KEY"
"""The environment variable holding the key that signs email links, unless `channels.link_key_env` names another."""

SLACK_API = "https://slack.com/api/"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True, populate_by_name=True)


class _Retries(_Strict):
    max_attempts: int = Field(default=DEFAULT_ATTEMPTS, ge=1, le=100)
    """Attempts per notice, the first included; the last failed one is logged and given up on."""
    backoff_seconds: float = Field(default=5.0, gt=0)
    """Wait before the second attempt; each later wait doubles, up to an hour."""
    timeout_seconds: float = Field(default=15.0, gt=0)
    """Time allowed for one attempt."""


class EmailChannelConfig(_Retries):
    """`channels.email`: the SMTP server requests are mailed through, with one-click links back to sayso."""

    smtp_host: str = Field(min_length=1)
    """The SMTP server's host name."""
    smtp_port: int = Field(default=587, ge=1, le=65_535)
    """Its port: 587 (submission, with `starttls`), 465 (`tls`) or 25."""
    sender: str = Field(alias="from", min_length=3)
    """The `From:` address, such as `sayso <approvals@example.com>`."""
    username_env: str | None = None
    """Environment variable holding the SMTP user name; unset: no login."""
    password_env: str | None = None
    """Environment variable holding the SMTP password."""
    starttls: bool = False
    """Upgrade the connection with STARTTLS before sending (port 587)."""
    tls: bool = False
    """Connect over TLS from the start (port 465)."""
    users: dict[str, str] = {}
    """Address → principal: whom a link mailed to an address decides as (with `principals:` configured, every
    address a rule mails must be here; without, links decide as `local`)."""
    link_ttl_seconds: float = Field(default=7 * 86_400, gt=0)
    """How long a mailed link works at most; a request that expires sooner takes its links with it."""

    def login(self) -> tuple[str, str] | None:
        """The SMTP user name and password from the environment, or `None` when no login is configured.

        Raises:
            ConfigError: a configured variable is not set.
        """
        if self.username_env is None:
            return None
        user = env_secret(self.username_env, "channels.email")
        return user, env_secret(self.password_env, "channels.email") if self.password_env else ""


class SlackChannelConfig(_Retries):
    """`channels.slack`: a Slack app's bot posts requests with buttons; Slack posts the clicks back to sayso."""

    bot_token_env: str = Field(min_length=1)
    """Environment variable holding the bot's token (`xoxb-...`)."""
    signing_secret_env: str = Field(min_length=1)
    """Environment variable holding the app's signing secret, which every interaction payload is checked with."""
    base_url: str = Field(default=SLACK_API, pattern=r"^https?://")
    """Slack's Web API (a stand-in's in tests)."""
    users: dict[str, str] = {}
    """Slack user id → principal (`U024BE7LH: bob`): whom a click decides as; a user not listed is refused."""

    def bot_token(self) -> str:
        """The bot token from the environment.

        Raises:
            ConfigError: the variable is not set.
        """
        return env_secret(self.bot_token_env, "channels.slack.bot_token_env")

    def signing_secret(self) -> str:
        """The signing secret from the environment.

        Raises:
            ConfigError: the variable is not set.
        """
        return env_secret(self.signing_secret_env, "channels.slack.signing_secret_env")


class ChannelsConfig(_Strict):
    """The `channels` block: how notices of requests reach approvers where they are (docs/guides/channels.md)."""

    public_url: str | None = Field(default=None, pattern=r"^https?://")
    """The address people reach this server at (`https://sayso.example.com`): mailed links and Slack's
    messages point there. Needed by `email`."""
    link_key_env: str = LINK_KEY_ENV
    """Environment variable holding the secret (at least 16 characters) that signs mailed links, the same on
    every replica; unset: a key derived from the audit key (`audit.key_env`); neither: email is refused."""
    email: EmailChannelConfig | None = None
    """Email over SMTP (`notify: [email:ADDRESS]`)."""
    slack: SlackChannelConfig | None = None
    """Slack messages with Approve / Reject / Edit buttons (`notify: [slack:#CHANNEL]`)."""

    def link_key(self, audit_key: bytes | None) -> bytes:
        """The 32-byte key mailed links are signed with, derived alike on every replica.

        Raises:
            ConfigError: neither `link_key_env` nor the audit key is set, or the secret is too short.
        """
        secret = os.environ.get(self.link_key_env, "")
        if secret and len(secret) < 16:
            raise ConfigError(f"the link key in {self.link_key_env} is too short: use at least 16 random characters")
        material = secret.encode() if secret else audit_key
        if material is None:
            raise ConfigError(
                f"mailed links need a key: set {self.link_key_env} (or the audit key) to at least 16 random characters"
            )
        return hmac.new(material, b"sayso/channels/links", hashlib.sha256).digest()
