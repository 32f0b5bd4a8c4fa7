"""mkdocs hook: the configuration reference, rendered at build time from sayso's config models.

`docs/reference/configuration.md` holds the prose and a `<!-- config-reference -->` marker; this
hook replaces the marker with one table per model (field, type, default, description), read from
the pydantic models and their field docstrings, so the reference cannot drift from the code.
"""

from __future__ import annotations

import inspect
import json
import re
import types
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic._internal._docs_extraction import extract_docstrings_from_cls
from pydantic_core import PydanticUndefined

MARKER = "<!-- config-reference -->"
PAGE = "reference/configuration.md"


def _models() -> list[tuple[str, type[BaseModel]]]:
    from sayso._config import channels as ch
    from sayso._config import delegates as d
    from sayso._config import file as c
    from sayso._config import mcp as m
    from sayso._config import rules as r
    from sayso._config.engine import TemporalConfig
    from sayso.workflows import AgentNodeConfig, FunctionNodeConfig, WorkflowConfig

    return [
        ("The file", c.Config),
        ("models: a provider entry", c.ProviderModelConfig),
        ("models: a script", c.ScriptedModelConfig),
        ("agents.NAME", c.AgentConfig),
        ("agents.NAME.interrupt", c.InterruptConfig),
        ("agents.NAME.interrupt.tools[]: a rule object", c.ToolRuleConfig),
        ("agents.NAME.interrupt.tools[].escalate[]", r.EscalationStepConfig),
        ("agents.NAME.interrupt.tools[].on_timeout", r.OnTimeoutConfig),
        ("agents.NAME.delegates[]", d.DelegateConfig),
        ("orchestrations.NAME", d.OrchestrationConfig),
        ("workflows.NAME", WorkflowConfig),
        ("workflows.NAME.nodes: a function", FunctionNodeConfig),
        ("workflows.NAME.nodes: an agent", AgentNodeConfig),
        ("agents.NAME.mcp[]", m.McpBinding),
        ("mcp_servers.NAME: a command (stdio)", m.McpStdioServer),
        ("mcp_servers.NAME: a URL (streamable HTTP)", m.McpHttpServer),
        ("principals[]", c.PrincipalConfig),
        ("webhooks[]", c.WebhookConfig),
        ("channels", ch.ChannelsConfig),
        ("channels.email", ch.EmailChannelConfig),
        ("channels.slack", ch.SlackChannelConfig),
        ("audit", c.AuditConfig),
        ("limits", c.LimitsConfig),
        ("a2a", c.A2AConfig),
        ("ag_ui", c.AgUiConfig),
        ("runtime", c.RuntimeConfig),
        ("engine", c.EngineConfig),
        ("engine.temporal", TemporalConfig),
    ]


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Replace the marker on the configuration page with the generated tables."""
    if page.file.src_uri != PAGE:
        return markdown
    assert MARKER in markdown, f"{PAGE} lost its {MARKER} marker"
    return markdown.replace(MARKER, render())


def render() -> str:
    """Every config model as a section with a table of its fields."""
    anchors = {model: _anchor(title) for title, model in _models()}
    sections = []
    for title, model in _models():
        doc = inspect.cleandoc(model.__doc__ or "")
        rows = ["| field | type | default | what it does |", "|---|---|---|---|"]
        docs = field_docs(model)
        for name, field in model.model_fields.items():
            if field.exclude:
                continue
            shown_type = _type(field.annotation, anchors)
            about = field.description or docs.get(name, "")
            rows.append(f"| `{field.alias or name}` | {shown_type} | {_default(field)} | {_cell(about)} |")
        sections.append(f"## {title} {{#{anchors[model]}}}\n\n{doc}\n\n" + "\n".join(rows))
    return "\n\n".join(sections)


def field_docs(model: type[BaseModel]) -> dict[str, str]:
    """The docstrings under a model's fields, its own and its bases'.

    The config models do not load them (`use_attribute_docstrings` reads every class's source: ~0.1 s
    on each command), so the reference reads them here, with pydantic's own reader.
    """
    docs: dict[str, str] = {}
    for cls in reversed(model.__mro__):
        if isinstance(cls, type) and issubclass(cls, BaseModel) and cls is not BaseModel:
            docs.update(extract_docstrings_from_cls(cls, use_inspect=True))
    return docs


def _anchor(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _default(field: Any) -> str:
    if field.is_required():
        return "required"
    if field.default_factory is not None:
        value = field.default_factory()
    else:
        value = field.default
    if value is PydanticUndefined or value is None:
        return "—"
    if isinstance(value, BaseModel):
        return "(defaults below)"
    if isinstance(value, list | dict) and not value:
        return "empty"
    return f"`{_cell(json.dumps(value))}`"


_NAMES = {str: "string", bool: "boolean", int: "integer", float: "number", type(None): "null"}


def _type(annotation: Any, anchors: dict[type[BaseModel], str]) -> str:
    origin = get_origin(annotation)
    args = get_args(annotation)
    if origin is Annotated:
        return _type(args[0], anchors)
    if origin in (Union, types.UnionType):
        # `None` is how a field says "unset"; the default column shows that.
        return " or ".join(dict.fromkeys(_type(a, anchors) for a in args if a is not type(None)))
    if origin is Literal:
        return " or ".join(f"`{json.dumps(a)}`" for a in args)
    if origin is list:
        return f"list of {_type(args[0], anchors)}"
    if origin is dict:
        return f"map of name to {_type(args[1], anchors)}"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return f"[{annotation.__name__}](#{anchors[annotation]})" if annotation in anchors else annotation.__name__
    if annotation is Any:
        return "string"
    return _NAMES.get(annotation, getattr(annotation, "__name__", str(annotation)))
