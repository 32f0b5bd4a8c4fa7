"""Models as the config names them, turned into pydantic-ai `Model`s when the agents are built.

A model string (`openai:gpt-4o-mini`) or a provider entry is resolved at load, not at the
first run: an unknown name, a provider package that is not installed or an API key that is not
set is a `ConfigError` saying what to install or set, instead of a run that fails later with
pydantic-ai's internals in its error.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

from pydantic_ai.exceptions import ModelConnectionError, UserError
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import (
    Model,
    ModelRequestParameters,
    StreamedResponse,
    infer_model,
    known_model_names,
    parse_model_id,
)
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.providers import infer_provider_class
from pydantic_ai.settings import ModelSettings

from .._config.file import Config, ProviderModelConfig, ScriptedModelConfig
from ..exceptions import ConfigError
from .scripted import ScriptedModel

EXTRA_OF_PROVIDER = {
    "openai": "openai",
    "openai-chat": "openai",
    "openai-responses": "openai",
    "azure": "openai",
    "deepseek": "openai",
    "openrouter": "openai",
    "ollama": "openai",
    "anthropic": "anthropic",
    "google": "google",
    "google-gla": "google",
    "google-vertex": "google",
    "google-cloud": "google",
}
"""The sayso extra that installs each provider's package (`pip install 'sayso[openai]'`)."""

KEY_ENVS_OF_PROVIDER = {
    "openai": ("OPENAI_API_KEY", "OPENAI_BASE_URL"),
    "openai-chat": ("OPENAI_API_KEY", "OPENAI_BASE_URL"),
    "openai-responses": ("OPENAI_API_KEY", "OPENAI_BASE_URL"),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "google": ("GOOGLE_API_KEY", "GEMINI_API_KEY"),
    "google-gla": ("GOOGLE_API_KEY", "GEMINI_API_KEY"),
}
"""The variables a provider reads its key from (any one will do; the first is the one to set).

OpenAI's clients go keyless when `OPENAI_BASE_URL` points at a local server, so that one counts too.
"""


def models_in_use(config: Config) -> set[str]:
    """The `models:` entries an agent may run on, the only ones built at load.

    Those named by an agent's `model:`, and every one when an agent names none (it takes the only
    entry, or is refused naming them all). The others are never built: `sayso check` warns that no
    agent uses them, and a key they would need is not asked for.
    """
    named = {spec.model for spec in config.agents.values() if isinstance(spec.model, str)}
    if any(spec.model is None for spec in config.agents.values()):
        return set(config.models)
    return {name for name in config.models if name in named}


def build_models(config: Config) -> dict[str, Model | str]:
    """The named models the agents use: scripts and provider entries are built now, model strings stay strings.

    Model strings are resolved by `resolve_model` once a run-time override (`Sayso(models=...)`)
    has had its say, so a test can replace a hosted model without its key.
    """
    built: dict[str, Model | str] = {}
    used = models_in_use(config)
    for name, entry in config.models.items():
        if name not in used:
            continue
        try:
            built[name] = build_model(entry, config)
        except ConfigError as exc:
            place = f"{config.source}:{config.line_of(('models', name)) or 1}: " if config.source else ""
            raise ConfigError(f"{place}models.{name}: {exc}") from exc
    return built


def build_model(entry: str | ScriptedModelConfig | ProviderModelConfig, config: Config) -> Model | str:
    """One `models:` entry as a model (a string is left for `resolve_model`)."""
    if isinstance(entry, ScriptedModelConfig):
        return ScriptedModel.from_file(config.base_dir / entry.scripted)
    if isinstance(entry, ProviderModelConfig):
        return provider_model(entry)
    return entry


def resolve_model(ref: object, models: Mapping[str, Model | str], *, agent: str, known: Sequence[str] = ()) -> Model:
    """The model an agent's `model:` names: a `models:` entry, a pydantic-ai model string or a `Model`.

    `known`: every `models:` name, built or not, for a misspelled name's did-you-mean.

    Raises:
        ConfigError: the name is unknown, or its provider's package or API key is missing.
    """
    if isinstance(ref, Model):
        return ref
    if ref is None:
        if len(models) == 1:
            return resolve_model(next(iter(models.values())), models, agent=agent)
        names = ", ".join(models) or "none"
        raise ConfigError(
            f"agent {agent!r} names no model, and the config has {len(models)} to choose from ({names}); "
            "set its 'model:'"
        )
    if not isinstance(ref, str):
        raise ConfigError(f"agent {agent!r}: model must be a name or a pydantic-ai model string, not {ref!r}")
    named = models.get(ref)
    if isinstance(named, Model):
        return named
    return model_from_string(named or ref, known_names=list(dict.fromkeys([*models, *known])))


def model_from_string(model: str, *, known_names: Sequence[str] = ()) -> Model:
    """A pydantic-ai model string (`openai:gpt-4o-mini`) as a model, or a `ConfigError` saying how to fix it."""
    provider, _ = parse_model_id(model)
    if model != "test" and not _known_provider(provider):
        names = f"a name under 'models:' ({', '.join(known_names)}) or " if known_names else ""
        close = (
            difflib.get_close_matches(model, known_names, n=1) or _close_provider(model) or _close_model_string(model)
        )
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ConfigError(
            f"unknown model {model!r}: {hint}use {names}a pydantic-ai model string such as 'openai:gpt-4o-mini'"
        )
    try:
        return infer_model(model)
    except ImportError as exc:
        raise ConfigError(f"model {model!r} needs a package that is not installed: {_install_hint(provider)}") from exc
    except UserError as exc:
        keys = KEY_ENVS_OF_PROVIDER.get(provider or "", ())
        if keys and not any(os.environ.get(k) for k in keys):
            raise ConfigError(f"model {model!r} needs an API key: set the environment variable {keys[0]!r}") from exc
        raise ConfigError(f"model {model!r} cannot be used: {exc}") from exc


def _close_provider(model: str) -> list[str]:
    """`model` with a misspelt provider corrected (`opnai:gpt-4o` → `openai:gpt-4o`)."""
    provider, name = parse_model_id(model)
    close = difflib.get_close_matches(provider, list(EXTRA_OF_PROVIDER), n=1, cutoff=0.7) if provider else []
    return [f"{close[0]}:{name}"] if close else []


def _close_model_string(model: str) -> list[str]:
    """pydantic-ai's best-known model string close to `model` (`gpt-4o-mini` → `openai:gpt-4o-mini`)."""
    known = known_model_names()
    by_name = {k.split(":", 1)[1]: k for k in known if ":" in k and not k.startswith("gateway/")}
    close = difflib.get_close_matches(parse_model_id(model)[1], list(by_name), n=1, cutoff=0.8)
    return [by_name[close[0]]] if close else []


def _known_provider(provider: str | None) -> bool:
    if provider is None:
        return False
    try:
        infer_provider_class(provider)
    except ValueError:
        return False
    except ImportError:
        return True  # a real provider whose package is missing: `infer_model` says which one
    return True


def provider_model(entry: ProviderModelConfig) -> Model:
    """The model of a `{provider: ..., name: ...}` entry; OpenAI's chat completions API for `provider: openai`.

    Raises:
        ConfigError: the provider's package is not installed, or its key's variable is not set.
    """
    key = _api_key(entry)
    model: Model
    try:
        if entry.provider == "openai":
            from pydantic_ai.models.openai import OpenAIChatModel
            from pydantic_ai.providers.openai import OpenAIProvider

            model = OpenAIChatModel(entry.name, provider=OpenAIProvider(base_url=entry.base_url, api_key=key))
        elif entry.provider == "anthropic":
            from pydantic_ai.models.anthropic import AnthropicModel
            from pydantic_ai.providers.anthropic import AnthropicProvider

            model = AnthropicModel(entry.name, provider=AnthropicProvider(api_key=key, base_url=entry.base_url))
        else:
            from pydantic_ai.models.google import GoogleModel
            from pydantic_ai.providers.google import GoogleProvider

            model = GoogleModel(entry.name, provider=GoogleProvider(api_key=key, base_url=entry.base_url))
        return model if entry.base_url is None else NamesServer(model, entry.base_url)
    except ImportError as exc:
        raise ConfigError(
            f"provider {entry.provider!r} needs a package that is not installed: {_install_hint(entry.provider)}"
        ) from exc


def _api_key(entry: ProviderModelConfig) -> str | None:
    """The entry's API key; `None` lets the provider read its usual variable (or go keyless at a local `base_url`)."""
    if entry.api_key_env is not None:
        key = os.environ.get(entry.api_key_env)
        if not key:
            raise ConfigError(
                f"model {entry.name!r} reads its API key from the environment variable {entry.api_key_env!r}, "
                f"which is not set; set it (export {entry.api_key_env}=...) or change 'api_key_env'"
            )
        return key
    usual = KEY_ENVS_OF_PROVIDER[entry.provider]
    if entry.base_url is None and not any(os.environ.get(k) for k in usual):
        raise ConfigError(
            f"model {entry.name!r} ({entry.provider}) needs an API key: set the environment variable {usual[0]!r} "
            "(or name another with 'api_key_env')"
        )
    return None


def _install_hint(provider: str | None) -> str:
    extra = EXTRA_OF_PROVIDER.get(provider or "")
    if extra is not None:
        return f"pip install 'sayso[{extra}]'"
    return f"pip install 'pydantic-ai-slim[{provider}]' (the provider's package)"


class NamesServer(WrapperModel):
    """A model at a configured `base_url` whose connection errors name that server.

    pydantic-ai says "Connection error." and no more; a person who wrote the URL needs to read
    which address was refused, to spot the wrong port or the server that is not running.
    """

    def __init__(self, wrapped: Model, base_url: str) -> None:
        super().__init__(wrapped)
        self.server = base_url

    def _named(self, exc: ModelConnectionError) -> ModelConnectionError:
        return ModelConnectionError(
            exc.model_name, f"cannot reach the model server at {self.server}: {exc.message}", phase=exc.phase
        )

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        try:
            return await super().request(messages, model_settings, model_request_parameters)
        except ModelConnectionError as exc:
            raise self._named(exc) from exc.__cause__

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: Any = None,
    ) -> AsyncIterator[StreamedResponse]:
        try:
            async with super().request_stream(
                messages, model_settings, model_request_parameters, run_context
            ) as response:
                yield response
        except ModelConnectionError as exc:
            raise self._named(exc) from exc.__cause__
