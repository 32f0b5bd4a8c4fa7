"""MCP servers and bindings as configuration, and the plan of which tools an agent sees (pure, no servers)."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp_types import ElicitResult

from sayso import AgentConfig, Config, ConfigError, McpBinding, McpHttpServer, McpStdioServer, load_config, mcp_bindings
from sayso._engine.mcp.toolset import McpRoute, plan_routes, server_factory


def test_a_config_file_declares_servers_and_agents_bind_them(tmp_path: Path) -> None:
    """`mcp_servers` takes stdio commands and HTTP URLs; an agent's `mcp` list names servers, tools and approval."""
    file = tmp_path / "sayso.yaml"
    file.write_text(
        """
agents:
  ops:
    mcp:
      - {server: git, tools: [git_status, git_log]}
      - {server: git, tools: [git_commit], require_approval: true}
      - {server: crm, replay_elicitation: true}
mcp_servers:
  git: {command: uvx, args: [mcp-server-git, --repository, .], env: {GIT_PAGER: cat}}
  crm: {url: "http://127.0.0.1:9000/mcp", headers_env: {Authorization: CRM_AUTH}}
"""
    )
    config = load_config(file)
    assert isinstance(config.mcp_servers["git"], McpStdioServer)
    assert isinstance(config.mcp_servers["crm"], McpHttpServer)
    assert config.agents["ops"].mcp == [
        McpBinding(server="git", tools=["git_status", "git_log"]),
        McpBinding(server="git", tools=["git_commit"], require_approval=True),
        McpBinding(server="crm", replay_elicitation=True),
    ]


@pytest.mark.parametrize(
    ("servers", "binding", "problem"),
    [
        pytest.param({}, {"server": "git"}, "binds MCP server 'git', which is not under 'mcp_servers'", id="unknown"),
        pytest.param(
            {"git": {"command": "x"}}, {"server": "git", "tools": ["a", "a"]}, "'a' is listed twice", id="twice"
        ),
        pytest.param({"g.it": {"command": "x"}}, {"server": "g.it"}, "may use only letters", id="bad-name"),
        pytest.param({"crm": {"url": "ftp://x"}}, {"server": "crm"}, "url", id="not-http"),
        pytest.param({"crm": {"url": "http://x", "command": "y"}}, {"server": "crm"}, "Extra inputs", id="both"),
    ],
)
def test_a_wrong_server_or_binding_is_refused_when_the_config_loads(
    servers: dict[str, object], binding: dict[str, object], problem: str
) -> None:
    """Unknown servers, repeated tool lists, unusable names and mixed transports are config errors."""
    with pytest.raises(ValueError, match=problem):
        Config.model_validate({"agents": {"a": {"mcp": [binding]}}, "mcp_servers": servers})


def test_secrets_come_from_the_environment_and_a_missing_one_is_an_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`env_from` and `headers_env` read variables when the agent is built; an unset one is a `ConfigError`."""
    stdio = McpStdioServer(command="srv", env={"MODE": "x"}, env_from={"TOKEN": "SRV_TOKEN"})
    http = McpHttpServer(url="http://127.0.0.1:1/mcp", headers={"X-A": "1"}, headers_env={"Authorization": "CRM"})
    with pytest.raises(ConfigError, match=r"MCP server 'srv': env_from names .* not set: SRV_TOKEN"):
        server_factory("srv", stdio, tmp_path)
    with pytest.raises(ConfigError, match=r"MCP server 'crm': headers_env names .* not set: CRM"):
        server_factory("crm", http, tmp_path)
    monkeypatch.setenv("SRV_TOKEN", "s3cret")
    monkeypatch.setenv("CRM", "Bearer t")
    assert stdio.resolved_env("srv") == {"MODE": "x", "TOKEN": "s3cret"}
    assert http.resolved_headers("crm") == {"X-A": "1", "Authorization": "Bearer t"}
    assert server_factory("srv", stdio, tmp_path)(_no_questions, ()).id == "mcp-srv"


async def _no_questions(message: str, response_type: object, params: object, context: object) -> ElicitResult:
    return ElicitResult(action="decline")


def test_the_python_api_takes_a_tool_filter_and_an_approval_list() -> None:
    """`mcp_bindings` turns a filter plus an approval-required list into a gated and a free binding."""
    assert mcp_bindings("crm", tools=["list_users", "delete_user"], require_approval=["delete_user"]) == [
        McpBinding(server="crm", tools=["delete_user"], require_approval=True),
        McpBinding(server="crm", tools=["list_users"]),
    ]
    assert mcp_bindings("crm", require_approval=["delete_user"]) == [
        McpBinding(server="crm", tools=["delete_user"], require_approval=True),
        McpBinding(server="crm"),
    ]
    assert mcp_bindings("crm", tools=["a"]) == [McpBinding(server="crm", tools=["a"])]
    with pytest.raises(ConfigError, match="'drop' need approval but are not in 'tools'"):
        mcp_bindings("crm", tools=["a"], require_approval=["drop"])
    agent = AgentConfig(mcp=mcp_bindings("crm", require_approval=["delete_user"]))
    config = Config(agents={"a": agent}, mcp_servers={"crm": McpHttpServer(url="http://127.0.0.1:1/mcp")})
    assert config.agents["a"].mcp[0].require_approval


def test_two_bindings_split_one_server_and_gated_wins_where_they_overlap() -> None:
    """A gated binding for writes and a free one for the rest: writes are gated even though 'the rest' covers them."""
    routes = plan_routes(
        "a",
        [McpBinding(server="fs", tools=["write"], require_approval=True), McpBinding(server="fs")],
        {"fs": ["read", "write"]},
    )
    assert routes == {
        "write": McpRoute(server="fs", tool="write", require_approval=True, replay_elicitation=False),
        "read": McpRoute(server="fs", tool="read", require_approval=False, replay_elicitation=False),
    }


def test_replay_is_allowed_only_when_every_binding_of_the_tool_allows_it() -> None:
    """Two bindings covering one tool replay form answers only if both opt in (fail closed)."""
    both = [McpBinding(server="s", replay_elicitation=True), McpBinding(server="s", tools=["t"])]
    assert not plan_routes("a", both, {"s": ["t"]})["t"].replay_elicitation
    assert plan_routes("a", both[:1], {"s": ["t"]})["t"].replay_elicitation


def test_names_offered_by_two_servers_are_prefixed_with_each_servers_name() -> None:
    """Only clashing names get the server's name; a configured `prefix` names all of its server's tools instead."""
    bindings = [McpBinding(server="a", require_approval=True), McpBinding(server="b")]
    routes = plan_routes("x", bindings, {"a": ["write", "only_a"], "b": ["write"]})
    assert {n: (r.server, r.tool, r.require_approval) for n, r in routes.items()} == {
        "a___write": ("a", "write", True),
        "only_a": ("a", "only_a", True),
        "b___write": ("b", "write", False),
    }
    prefixed = plan_routes("x", bindings, {"a": ["write"], "b": ["write"]}, prefixes={"a": "crm"})
    assert sorted(prefixed) == ["crm___write", "write"]
    with pytest.raises(ConfigError, match="'a' and 'b' both expose a tool named 'p___write'"):
        plan_routes("x", bindings, {"a": ["write"], "b": ["write"]}, prefixes={"a": "p", "b": "p"})


def test_every_missing_tool_is_named_with_what_the_server_offers() -> None:
    """A binding naming tools the server lacks is one `ConfigError` listing them and the server's tools."""
    with pytest.raises(ConfigError) as refused:
        plan_routes(
            "ops", [McpBinding(server="git", tools=["git_status", "git_push", "git_pull"])], {"git": ["git_status"]}
        )
    assert str(refused.value) == (
        "agent 'ops' binds 'git_push', 'git_pull' on MCP server 'git', which does not offer them "
        "(it offers: git_status)"
    )
