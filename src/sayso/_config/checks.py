"""The checks a config must pass before any agent runs, shared by loading and `sayso check`.

A schema error is caught by `load_config`; what is checked here needs the agents' code and
models: that each approval rule names a tool the agent has (a typo would leave a gated tool
ungated, so it is an error: fail closed), that each model can be reached, that no two tools
share a name. Every problem names the file, the line and the fix.
"""

from __future__ import annotations

import difflib
import importlib.util
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeAlias

from pydantic.json_schema import JsonSchemaValue
from pydantic_ai.models import Model

from .._core.policy import reference_problems
from .._core.store_urls import StoreUrlProblem, no_folder, read_store_url
from .._engine.imports import ModuleFailed, import_spec
from .._engine.models import build_model, models_in_use, resolve_model
from .._engine.tools import BUILTIN_TOOLS, as_tool
from ..exceptions import ConfigError
from ..workflows import WorkflowConfig, build_workflow
from .checks_channels import check_channels
from .file import AgentConfig, Config, shared_token_message, shared_tokens
from .lines import config_path
from .routing import starter_left_out

logger = logging.getLogger("sayso.config")

Severity: TypeAlias = Literal["error", "warning", "note"]
"""An error stops the config from loading; a warning and a note are printed and the config loads."""

_GLOB_CHARS = frozenset("*?[")
SHARED_TOKEN_FIX = "give each principal its own token"


@dataclass(frozen=True, kw_only=True)
class ConfigProblem:
    """One thing wrong with (or worth knowing about) a config, with where it is written and how to fix it."""

    severity: Severity
    where: str
    """The entry, as a dotted path: `agents.files.interrupt.tools[0]`."""
    message: str
    """What is wrong."""
    fix: str
    """What to change; empty when the message already says it (`set the environment variable ...`)."""
    file: Path | None = None
    """The config file; `None` for a config built in Python."""
    line: int | None = None
    """The line of `file` the entry is on."""

    def __str__(self) -> str:
        place = f"{self.file}:{self.line or 1}: " if self.file is not None else ""
        fix = f". Fix: {self.fix}" if self.fix else ""
        return f"{place}{self.severity}: {self.where}: {self.message}{fix}"


def check_config(config: Config, *, models: Mapping[str, Model | str] | None = None) -> list[ConfigProblem]:
    """Every problem of `config`, errors and warnings alike, in the order they are written.

    Args:
        config: the loaded config.
        models: the named models, overrides included, when the caller built them already
            (`Sayso(models=...)`); built from the config otherwise.
    """
    problems = _Problems(config)
    named = dict(models) if models is not None else _build_models(config, problems)
    used: set[str] = set()
    for name, spec in config.agents.items():
        # What the agents name, from the file: a model that failed to build is used all the same
        # (its error is said above), not "used by no agent".
        if isinstance(spec.model, str) and spec.model in config.models:
            used.add(spec.model)
        elif spec.model is None and len(config.models) == 1:
            used.update(config.models)
        _check_agent(name, spec, config, named, problems)
    for name in config.models:
        if name not in used:
            problems.add(
                "warning",
                ("models", name),
                f"no agent uses the model {name!r}, so it was not checked",
                "name it in an agent's 'model:' or remove it",
            )
    _check_workflows(config, problems)
    _check_principals(config, problems)
    check_channels(config, problems.add)
    _check_store(config, problems)
    return sorted(problems.found, key=lambda p: (p.line or 0, p.where))


def raise_on_errors(problems: Sequence[ConfigProblem]) -> None:
    """Log the warnings (and the notes, at info level); raise one `ConfigError` listing every error.

    Raises:
        ConfigError: at least one problem is an error.
    """
    errors = [p for p in problems if p.severity == "error"]
    if errors:
        shown = "\n".join(f"  {p}" for p in errors)
        raise ConfigError(f"the config has {len(errors)} error(s):\n{shown}")
    for problem in problems:
        logger.log(logging.INFO if problem.severity == "note" else logging.WARNING, "%s", problem)


class _Problems:
    """The problems found so far, each placed in the file by its config path."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.found: list[ConfigProblem] = []

    def add(self, severity: Severity, path: Sequence[str | int], message: str, fix: str) -> None:
        self.found.append(
            ConfigProblem(
                severity=severity,
                where=config_path(path),
                message=message,
                fix=fix,
                file=self.config.source,
                line=self.config.line_of(path),
            )
        )


def _build_models(config: Config, problems: _Problems) -> dict[str, Model | str]:
    built: dict[str, Model | str] = {}
    used = models_in_use(config)
    for name, entry in config.models.items():
        if name not in used:
            continue  # warned of as used by no agent, and not built: its key need not be set
        try:
            built[name] = build_model(entry, config)
        except ConfigError as exc:
            problems.add("error", ("models", name), str(exc), _MODEL_FIX)
    return built


_MODEL_FIX = ""  # the model errors of `_models` end with what to install or set


def _check_agent(
    name: str, spec: AgentConfig, config: Config, models: Mapping[str, Model | str], problems: _Problems
) -> None:
    here: tuple[str | int, ...] = ("agents", name)
    model_ref = spec.model
    if not (isinstance(model_ref, str) and model_ref in config.models and model_ref not in models):
        # A `models:` entry that failed to build was reported under `models`; anything else is resolved here.
        try:
            resolve_model(model_ref, models, agent=name, known=list(config.models))
        except ConfigError as exc:
            problems.add("error", (*here, "model"), str(exc), _MODEL_FIX)
    own: list[str] = []
    schemas: dict[str, JsonSchemaValue] = {}
    for index, entry in enumerate(spec.tools):
        try:
            built = as_tool(import_spec(entry, base_dir=config.base_dir) if isinstance(entry, str) else entry)
            own.append(built.name)
            schemas[built.name] = built.tool_def.parameters_json_schema
        except ConfigError as exc:
            problems.add("error", (*here, "tools", index), str(exc), _import_fix(exc))
    delegates = [d.tool_name for d in spec.delegates]
    seen: set[str] = set()
    for tool in [*own, *delegates]:
        if tool in seen:
            problems.add(
                "error", (*here, "tools"), f"two tools are named {tool!r}", "rename one of them (or the delegate)"
            )
        seen.add(tool)
    if spec.ask_user and "ask_user" in seen:
        problems.add(
            "error",
            (*here, "tools"),
            "the agent defines its own 'ask_user', which would clash with the built-in question tool",
            "set 'ask_user: false' to use your own, or rename it",
        )
    client = _check_client_tools(spec, seen, here, problems)
    available = [*own, *delegates, *client, *(["ask_user"] if spec.ask_user or "ask_user" in spec.client_tools else [])]
    available.extend(_mcp_tool_names(spec, config))
    _note_whole_servers(spec, here, problems)
    _check_rules(spec, available, here, config, problems)
    _check_conditions(spec, available, schemas, here, problems)


def known_tool_names(spec: AgentConfig, config: Config) -> list[str]:
    """Every tool name an agent has before its MCP servers are asked (the config must have passed the checks)."""
    own = [as_tool(import_spec(e, base_dir=config.base_dir) if isinstance(e, str) else e).name for e in spec.tools]
    builtin = ["ask_user"] if spec.ask_user or "ask_user" in spec.client_tools else []
    return [*own, *(d.tool_name for d in spec.delegates), *spec.client_tools, *builtin, *_mcp_tool_names(spec, config)]


def _note_whole_servers(spec: AgentConfig, here: tuple[str | int, ...], problems: _Problems) -> None:
    """A binding without a tool list binds every tool its server offers: said, since kagent's `tools: []` means it."""
    for index, binding in enumerate(spec.mcp):
        if binding.binds_all:
            gate = ", each call waiting for a person" if binding.require_approval else ""
            problems.add(
                "note",
                (*here, "mcp", index),
                f"the binding covers all tools MCP server {binding.server!r} offers{gate}, "
                "including tools the server adds later",
                "nothing to do; list the tools in 'tools' to bind only those",
            )


def _mcp_tool_names(spec: AgentConfig, config: Config) -> list[str]:
    """The MCP tools an agent's bindings name, as the model may call them (plain or prefixed on a clash)."""
    names: list[str] = []
    for binding in spec.mcp:
        server = config.mcp_servers.get(binding.server)
        prefix = getattr(server, "prefix", None) or binding.server
        for tool in binding.tools or ():
            names.extend([tool, f"{prefix}___{tool}"])
    return names


def _check_client_tools(
    spec: AgentConfig, taken: set[str], here: tuple[str | int, ...], problems: _Problems
) -> list[str]:
    """The client tools the agent may call; a built-in's name there means the built-in (with a note)."""
    client: list[str] = []
    for index, tool in enumerate(spec.client_tools):
        path = (*here, "client_tools", index)
        if tool in BUILTIN_TOOLS:
            if spec.ask_user:
                problems.add(
                    "note",
                    path,
                    f"{tool!r} is sayso's built-in question tool, so this entry stands for the built-in: "
                    "a client that declares its own is not offered it",
                    f"nothing to do; remove the entry to silence this note ('ask_user: true' already gives {tool!r})",
                )
            else:
                problems.add(
                    "error",
                    path,
                    f"{tool!r} is sayso's built-in question tool, but this agent has 'ask_user: false'",
                    "remove the entry, or set 'ask_user: true'",
                )
        elif tool in taken:
            problems.add(
                "error",
                path,
                f"the client tool {tool!r} has the name of one of the agent's own tools",
                "rename one of them",
            )
        else:
            client.append(tool)
    return client


def _check_rules(
    spec: AgentConfig, available: list[str], here: tuple[str | int, ...], config: Config, problems: _Problems
) -> None:
    """Each approval rule must match a tool: an exact name that matches none would leave its tool ungated."""
    listed = ", ".join(available) or "none"
    for index, rule in enumerate(spec.interrupt.to_policy().tools):
        path = (*here, "interrupt", "tools", index)
        if rule.subject is not None:
            try:
                if not callable(import_spec(rule.subject, base_dir=config.base_dir)):
                    problems.add("error", path, f"subject {rule.subject!r} is not callable", "name a function")
            except ConfigError as exc:
                problems.add("error", path, str(exc), _import_fix(exc, "the subject's import spec"))
        if any(rule.matches(tool) for tool in available):
            continue
        if _GLOB_CHARS.isdisjoint(rule.name) and any(b.binds_all for b in spec.mcp):
            # A binding of every tool of a server: its names are known only once the server is asked.
            # `Sayso.verify_tools()` (run by `sayso serve` at start) checks the rule again then.
            problems.add(
                "warning",
                path,
                f"the approval rule names {rule.name!r}, which is none of the agent's tools known before its MCP "
                "servers are asked; it is checked again when the agent connects to them",
                f"name the MCP tool in its binding's 'tools' to check it now. The agent's known tools: {listed}",
            )
        elif _GLOB_CHARS.isdisjoint(rule.name):
            close = difflib.get_close_matches(rule.name, available, n=1)
            problems.add(
                "error",
                path,
                f"the approval rule names {rule.name!r}, which is none of the agent's tools, "
                "so the call it was meant to gate would run without asking",
                (f"did you mean {close[0]!r}? " if close else "") + f"The agent's tools: {listed}",
            )
        else:
            problems.add(
                "warning",
                path,
                f"the approval rule {rule.name!r} matches none of the agent's tools",
                f"check the pattern against the agent's tools ({listed}); it may be meant for tools added later",
            )
    on_decision = spec.interrupt.on_decision
    if on_decision is not None:
        try:
            if not callable(import_spec(on_decision, base_dir=config.base_dir)):
                problems.add(
                    "error", (*here, "interrupt", "on_decision"), f"{on_decision!r} is not callable", "name a function"
                )
        except ConfigError as exc:
            problems.add("error", (*here, "interrupt", "on_decision"), str(exc), _import_fix(exc))


def _check_conditions(
    spec: AgentConfig,
    available: list[str],
    schemas: Mapping[str, JsonSchemaValue],
    here: tuple[str | int, ...],
    problems: _Problems,
) -> None:
    """What a rule's condition and reason name must exist: a misspelt argument would make a rule that never holds.

    Checked against the argument schema of every tool the rule matches whose schema is known before the agent
    runs (its own tools); an MCP server's or a client's tool is checked for its variables here, and an MCP
    binding's rule against the tool's schema when the server first lists it (`McpToolset`, failing the run).
    """
    policy = spec.interrupt.to_policy()
    rules = [((*here, "interrupt", "tools", n), rule) for n, rule in enumerate(policy.tools)]
    rules += [
        ((*here, "mcp", n), rule)
        for n, binding in enumerate(spec.mcp)
        if (rule := binding.policy_rule(binding.server, {})) is not None
    ]
    for path, rule in rules:
        if rule.on_timeout is not None and rule.ttl_seconds is None and policy.ttl_seconds is None:
            problems.add(
                "error",
                (*path, "on_timeout"),
                "'on_timeout' needs a timeout, and the rule has none",
                "set 'on_timeout.after' (such as 4h), or 'ttl_seconds' on the rule or the interrupt block",
            )
        # An MCP binding's tools are the server's: their schemas are checked when it lists them.
        mcp = path[len(here)] == "mcp"
        tools = [t for t in dict.fromkeys(available) if rule.matches(t)] or [rule.name]
        found: dict[tuple[str, str, str], None] = {}
        for schema in [None] if mcp else [schemas.get(t) for t in tools]:
            found.update(dict.fromkeys(reference_problems(rule, schema)))
        for key, source, problem in found:
            problems.add(
                "error",
                (*path, key),
                f"{problem}, in {source!r}",
                "name one of the tool's arguments, or principal.name, principal.groups, thread.id, thread.agent",
            )


def _check_workflows(config: Config, problems: _Problems) -> None:
    """Each `workflows:` entry builds: its import specs resolve and its graph passes `Workflow`'s checks."""
    for name, spec in config.workflows.items():
        if not isinstance(spec, WorkflowConfig):
            continue  # a `Workflow` built in Python was checked when it was built
        try:
            build_workflow(name, spec, import_spec=import_spec, base_dir=config.base_dir)
        except ConfigError as exc:  # said under `workflows.NAME:`, which names the workflow already
            problems.add("error", ("workflows", name), str(exc).removeprefix(f"workflow {name!r}: "), "")
        _check_route_words(config, name, spec, problems)
        rule = spec.input_rule(name, {})
        if rule is None:
            continue
        if rule.on_timeout is not None and rule.ttl_seconds is None:
            problems.add(
                "error",
                ("workflows", name, "on_timeout"),
                "'on_timeout' needs a timeout, and the workflow has none",
                "set 'on_timeout.after' (such as 4h), or the workflow's 'ttl_seconds'",
            )
        for key, source, problem in reference_problems(rule, _INPUT_ARGS):
            problems.add(
                "error",
                ("workflows", name, key),
                f"{problem}, in {source!r}",
                "name args.node, args.payload, principal.name, principal.groups, thread.id or thread.agent",
            )


_YAML_11_BOOLEANS = {
    f(word): word in ("yes", "on") for word in ("yes", "no", "on", "off") for f in (str, str.title, str.upper)
}
"""The words PyYAML reads unquoted as booleans besides `true` and `false` (YAML 1.1), and which boolean."""


def _check_route_words(config: Config, name: str, spec: WorkflowConfig, problems: _Problems) -> None:
    """Refuse a route keyed by an unquoted `yes`, `no`, `on` or `off`, which YAML reads as a boolean.

    The node's `"yes"` (an answer, a `Route`) would never match it, and the run would fail there, or
    take the `__DEFAULT__` route. `true` and `false` stay booleans: a node that returns one picks them.
    """
    for number, edge in enumerate(spec.edges):
        routes = edge[-1]
        if not isinstance(routes, dict):
            continue
        at = ("workflows", name, "edges", number, len(edge) - 1)
        for word, boolean in _YAML_11_BOOLEANS.items():
            # Quoted, the key is the text itself; unquoted, a boolean that the file still shows as the word.
            if word not in routes and boolean in routes and config.line_of((*at, word), exact=True) is not None:
                problems.add(
                    "error",
                    (*at, word),
                    f"route {word} of node {edge[-2]!r} is read by YAML as the boolean {str(boolean).lower()}, "
                    f"so the node's {word!r} never matches it",
                    f'quote it, "{word}": {routes[boolean]}, for a node that says {word!r}; or write '
                    f"{str(boolean).lower()}: {routes[boolean]} for one that returns a boolean",
                )


_INPUT_ARGS: JsonSchemaValue = {
    "type": "object",
    "properties": {"node": {}, "payload": {}},
    "additionalProperties": False,
}
"""What a workflow's rule reads as `args` of an input: the node that asks, and the data it shows."""


def _check_principals(config: Config, problems: _Problems) -> None:
    for path, message, fix in starter_left_out(config.groups, config.routed_entries()):
        problems.add("warning", path, message, fix)
    for index, name, earlier in shared_tokens(config.principals):
        field = "token_env" if config.principals[index].token_env else "token"
        problems.add("error", ("principals", index, field), shared_token_message(name, earlier), SHARED_TOKEN_FIX)
    for index, principal in enumerate(config.principals):
        if principal.token_env and not principal.bearer_token():
            # A warning: a principal without a token cannot sign in at all (it fails closed), and the
            # others still can; said here, at `sayso check` and at start, not at the first request.
            problems.add(
                "warning",
                ("principals", index, "token_env"),
                f"{principal.name!r} cannot sign in: the environment variable {principal.token_env!r} is not set",
                f"set {principal.token_env} to {principal.name}'s bearer token before starting",
            )
        for n, pattern in enumerate(principal.approver_for):
            if _GLOB_CHARS.isdisjoint(pattern) and pattern not in config.agents:
                close = difflib.get_close_matches(pattern, list(config.agents), n=1)
                # Only a warning: naming no agent grants nothing (it fails closed), and one principals
                # list may serve several configs.
                problems.add(
                    "warning",
                    ("principals", index, "approver_for", n),
                    f"{principal.name!r} is made an approver for {pattern!r}, which is not an agent of this config",
                    (f"did you mean {close[0]!r}? " if close else "") + f"The agents: {', '.join(config.agents)}",
                )


def _check_store(config: Config, problems: _Problems) -> None:
    """The store URL by the rule every store opening applies, its SQLite folder, PostgreSQL's driver."""
    store = read_store_url(config.store_url(), base_dir=config.base_dir)
    if isinstance(store, StoreUrlProblem):
        problems.add("error", ("store",), store.message, store.fix)
    elif store.path is not None and not store.path.parent.is_dir():
        missing = no_folder(store)
        problems.add("error", ("store",), missing.message, missing.fix)
    elif store.backend == "postgresql" and importlib.util.find_spec("asyncpg") is None:
        problems.add(
            "error",
            ("store",),
            "a PostgreSQL store needs the asyncpg package, which is not installed",
            "pip install 'sayso[postgres]'",
        )


def _import_fix(exc: ConfigError, what: str = "the import spec") -> str:
    """A module that is there but fails to import is fixed in the module; any other failure, in the spec."""
    return exc.fix if isinstance(exc, ModuleFailed) else f"correct {what} ('module:function')"
