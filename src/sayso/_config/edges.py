"""The sections of `sayso.yaml` that configure the edges: webhooks, the audit key, size limits, A2A, AG-UI, MCP.

Re-exported by `_config`, where the whole `Config` is assembled.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from typing import Literal, TypeAlias

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    model_validator,
)

from .._core.limits import Limits
from .._core.retries import DEFAULT_ATTEMPTS
from .._core.signing import secret_problem
from ..exceptions import ConfigError
from .env import env_secret


class _Strict(BaseModel):
    # Field docstrings are read by docs/hooks/config_reference.py, not at load (that cost every command ~0.1 s).
    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)


WebhookEvent: TypeAlias = Literal["request.opened", "request.decided", "request.expired", "request.voted"]
"""Every event a webhook may subscribe to."""

DEFAULT_WEBHOOK_EVENTS: tuple[WebhookEvent, ...] = ("request.opened", "request.decided", "request.expired")
"""What a webhook gets unless its `events` say: each request's opening and outcome. `request.voted` (each vote
toward a quorum) is asked for by name, so a receiver written for outcomes never reads a vote as one."""


class WebhookConfig(_Strict):
    """One entry of the `webhooks:` list: where `sayso serve` sends signed request events."""

    url: str = Field(pattern=r"^https?://")
    """Where events are POSTed."""
    name: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    """What rules call it in `notify: [webhook:NAME]`: it is then also sent `request.notify` for their requests."""
    secret: str | None = None
    """The signing secret; prefer `secret_env` so it stays out of the file."""
    secret_env: str | None = None
    """Name of an environment variable holding the signing secret."""
    events: list[WebhookEvent] = list(DEFAULT_WEBHOOK_EVENTS)
    """Which events to send: `request.opened`, `request.decided`, `request.expired` (the default), and
    `request.voted` (each vote on a request that needs several approvals; sent only when listed)."""
    max_attempts: int = Field(default=DEFAULT_ATTEMPTS, ge=1, le=100)
    """Attempts per event, the first included; the last failed one is logged and given up on."""
    backoff_seconds: float = Field(default=1.0, gt=0)
    """Wait before the second attempt; each later wait doubles, up to an hour."""
    timeout_seconds: float = Field(default=10.0, gt=0)
    """Time allowed for one attempt."""

    @model_validator(mode="after")
    def _has_secret(self) -> WebhookConfig:
        if not self.secret and not self.secret_env:
            raise ValueError("a webhook needs 'secret' or 'secret_env' to sign its deliveries")
        if self.secret and (problem := secret_problem(self.secret)) is not None:
            raise ValueError(f"webhook {self.url!r}: {problem}")
        return self

    def signing_secret(self) -> str:
        """The secret, read from the environment when `secret_env` is set.

        Raises:
            ConfigError: `secret_env` names an unset environment variable, or a secret nothing can be signed with.
        """
        where = f"webhook {self.url!r}"
        secret = env_secret(self.secret_env, where) if self.secret_env else self.secret or ""
        if (problem := secret_problem(secret)) is not None:
            raise ConfigError(f"{where}: {problem}")
        return secret


AUDIT_KEY_ENV = "SAYSO_AUDIT_KEY"
"""The environment variable that holds the audit key unless `audit.key_env` names another."""


class AuditConfig(_Strict):
    """The `audit` block: what anchors the hash-chained audit log."""

    key_env: str = AUDIT_KEY_ENV
    """Environment variable holding the secret (at least 16 characters) that signs every audit record and the
    chain's head, so a rewrite, a forged append or a cut tail is detected; unset: the chain is unanchored and
    `sayso audit verify` says so."""
    require_key: bool = False
    """Refuse to start without the key (for deployments whose audit log must be anchored)."""
    head_file: str | None = None
    """A file (relative to the config) the chain's head is exported to after every append, out of reach of
    whoever rewrites the database; `sayso audit verify` checks the log still reaches it. Delete it only
    together with the store."""

    def key(self) -> bytes | None:
        """The audit key from the environment, or `None` when it is not set.

        Raises:
            ConfigError: the key is required and missing, or too short to be a secret.
        """
        secret = os.environ.get(self.key_env, "")
        if not secret:
            if self.require_key:
                raise ConfigError(f"audit.require_key is set but the environment variable {self.key_env} is empty")
            return None
        if len(secret) < 16:
            raise ConfigError(f"the audit key in {self.key_env} is too short: use at least 16 random characters")
        return secret.encode()


MCP_STATE_KEY_ENV = "SAYSO_MCP_STATE_KEY"
"""The environment variable that holds `/mcp`'s request-state key unless `mcp.state_key_env` names another."""


class McpServeConfig(_Strict):
    """The `mcp` block: how `/mcp` serves the agents to MCP clients."""

    state_key_env: str = MCP_STATE_KEY_ENV
    """Environment variable holding the secret (at least 16 characters) that seals the `requestState` a paused
    call hands its MCP client, so any replica, or this one after a restart, reads the answers' leg; unset: a
    key derived from the audit key (`audit.key_env`); neither set: a key of this process only, and a pause
    can then be answered over `/mcp` only before it restarts, and only on this replica."""

    def state_key(self, audit_key: bytes | None) -> bytes | None:
        """The 32-byte key every replica derives alike, or `None` when no shared secret is configured.

        Raises:
            ConfigError: the secret in `state_key_env` is too short to be one.
        """
        secret = os.environ.get(self.state_key_env, "")
        if secret and len(secret) < 16:
            raise ConfigError(
                f"the MCP state key in {self.state_key_env} is too short: use at least 16 random characters"
            )
        material = secret.encode() if secret else audit_key
        if material is None:
            return None
        return hmac.new(material, b"sayso/mcp/request-state", hashlib.sha256).digest()


class LimitsConfig(_Strict):
    """The `limits` block: how much one call may send, on every interface (REST, A2A, AG-UI, the CLI, Python).

    Anything over a limit is refused before it is stored: `413` on HTTP (`TooLarge` in Python).
    """

    request_bytes: int = Field(default=1_000_000, ge=1_000)
    """The largest HTTP request body any endpoint reads."""
    message_chars: int = Field(default=100_000, ge=1)
    """The longest user message a run accepts."""
    argument_bytes: int = Field(default=100_000, ge=100)
    """The largest edited tool arguments (as JSON) an approval accepts."""
    answer_bytes: int = Field(default=100_000, ge=100)
    """The largest answer (question answers, a client tool's result or error, a form's content, as JSON)."""
    json_depth: int = Field(default=64, ge=4, le=1_000)
    """How deeply a JSON body may nest."""

    def to_limits(self) -> Limits:
        """The sizes the runtime checks inside its verbs."""
        return Limits(
            message_chars=self.message_chars, argument_bytes=self.argument_bytes, answer_bytes=self.answer_bytes
        )


class A2AConfig(_Strict):
    """The `a2a` block: how agents speak A2A."""

    kagent_compat: bool = False
    """Also speak kagent 0.x's DataPart format (`adk_request_confirmation`, `decision_type`, and ADK's
    FunctionResponse `{confirmed, payload}`) to clients that do not request the HITL v1 extension."""
    legacy_only: bool = False
    """Speak only kagent 0.x, for callers that predate v1: an A2A 0.3 card without the HITL extension,
    and DataPart pauses even to a caller that asks for v1. Implies `kagent_compat`."""
    namespace: str = Field(default="kagent", pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    """The namespace kagent's addresses name: every entry is also served at `/agents/{namespace}/{name}`
    (kagent's URL layout, beside `/a2a/{name}`) and named `{namespace}/{name}` in a gRPC call's `tenant`."""
    push_secret_env: str | None = None
    """Environment variable holding the secret that signs push notifications (as webhooks are signed);
    unset: each push config's own `token` signs its deliveries, and a config without one is refused."""
    push_private_urls: bool = False
    """Let push notifications go to loopback and private addresses (local development and tests); by
    default only public addresses are reached, so a client cannot make the server call inward."""


class RuntimeConfig(_Strict):
    """The `runtime` block: what a run tells the host beside its events."""

    persist_session_state: bool = True
    """Publish a run's open requests and its pause on the AG-UI state channel (`STATE_SNAPSHOT`, under
    `kaboo_sessions`: `approvals` and `paused`), as kaboo does; the host's own state keys are kept. The
    pause itself lives in sayso's store, so `paused` is a reference any process resolves. Off: no
    snapshot is sent (for a host whose state must hold nothing but its own)."""


class AgUiConfig(_Strict):
    """The `ag_ui` block: how agents speak AG-UI."""

    kaboo_compat: bool = False
    """Speak to kaboo's clients unchanged: interrupt reasons `kaboo:approval`, questions as kaboo's
    `ask_user` browser tool, remembered approvals kept by the host (`forwardedProps.kaboo_grants`,
    none stored by sayso, wider scopes offered only to a host that sends them), and `system_prompt`
    in agent config."""
