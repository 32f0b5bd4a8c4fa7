"""Config errors read like the rest: YAML syntax as `file:line: error: … Fix: …`, did-you-mean for misspelt fields
and providers, a name that points nowhere at the line that names it, principals that cannot sign in said at check
and at start, connection errors naming the server."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pydantic_ai.models
import pytest
from typer.testing import CliRunner

from sayso.cli import app

from .conftest import EXAMPLE, LiveServer, free_port

runner = CliRunner()


def check(tmp_path: Path, text: str) -> tuple[Path, object]:
    config = tmp_path / "sayso.yaml"
    config.write_text(text)
    return config, runner.invoke(app, ["check", str(config)])


def test_a_yaml_syntax_error_names_file_line_and_fix(tmp_path: Path) -> None:
    """An unclosed brace is `file:line: error: not valid YAML …. Fix: …`, with no PyYAML `<unicode string>` (exit 2)."""
    config, done = check(tmp_path, "models:\n  m: {scripted: s.yaml\nagents: {}\n")
    assert done.exit_code == 2  # type: ignore[attr-defined]
    err = done.stderr  # type: ignore[attr-defined]
    assert f"{config}:3: error: not valid YAML, column 7: expected ',' or '}}', but got ':'" in err
    assert "(while parsing a flow mapping on line 2). Fix: check that line and the one before" in err
    assert "<unicode string>" not in err


def test_misspelt_fields_and_providers_get_a_did_you_mean(tmp_path: Path) -> None:
    """A misspelt field, a misspelt provider of a `models:` entry and of a model string each suggest the right one."""
    config, done = check(
        tmp_path,
        "models:\n  local: {provider: opnai, name: llama3}\n"
        "agents:\n  a: {model: local, instrucions: hi}\nprincipals:\n  - {name: p, tokn: x}\n",
    )
    err = done.stderr  # type: ignore[attr-defined]
    assert f"{config}:2: error: models.local.provider: Input should be 'openai', 'anthropic' or 'google'. " in err
    assert "Fix: did you mean 'openai'?" in err
    assert f"{config}:4: error: agents.a.instrucions: Extra inputs are not permitted. Fix: did you mean " in err
    assert "'instructions'? Or remove it." in err
    assert f"{config}:6: error: principals[0].tokn: Extra inputs are not permitted. Fix: did you mean 'token'?" in err
    _, done = check(tmp_path, "agents:\n  a: {model: 'opnai:gpt-4o-mini'}\n")
    assert "unknown model 'opnai:gpt-4o-mini': did you mean 'openai:gpt-4o-mini'?" in done.stderr  # type: ignore[attr-defined]


def test_a_model_that_fails_to_build_is_not_also_unused(tmp_path: Path) -> None:
    """A `models:` entry an agent names but that cannot be built is one error, not also "no agent uses the model"."""
    _, done = check(
        tmp_path,
        "models:\n  m: {provider: openai, name: gpt-4o-mini, api_key_env: SAYSO_TEST_UNSET_KEY}\n"
        "agents:\n  a: {model: m}\n",
    )
    assert done.exit_code == 2  # type: ignore[attr-defined]
    assert "SAYSO_TEST_UNSET_KEY" in done.output  # type: ignore[attr-defined]
    assert "no agent uses the model" not in done.output  # type: ignore[attr-defined]


AGENT = "agents:\n  helper:\n    model: demo\n"
FLOW = "    nodes:\n      a: {agent: helper}\n    edges:\n      - [START, a, END]\n"

# A config whose one problem is on the line marked `# <-`, and the entry the report names there.
MISPLACED_NAMES = {
    "workflow node runs no agent": (
        AGENT + "workflows:\n  flow:\n    nodes:\n      a:\n        agent: nobody  # <-\n"
        "    edges:\n      - [START, a, END]\n",
        "workflows.flow.nodes.a.agent",
    ),
    "workflow named like an agent": (AGENT + "workflows:\n  helper:  # <-\n" + FLOW, "workflows.helper"),
    "workflow named like an orchestration": (
        AGENT + "orchestrations:\n  flow: {entry_name: helper}\nworkflows:\n  flow:  # <-\n" + FLOW,
        "workflows.flow",
    ),
    "delegate to no agent": (
        AGENT + "    delegates:\n      - agent: nobody  # <-\n",
        "agents.helper.delegates[0].agent",
    ),
    "delegate to itself": (
        AGENT + "    delegates:\n      - {a2a: 'http://127.0.0.1:9/a2a/x'}\n      - agent: helper  # <-\n",
        "agents.helper.delegates[1].agent",
    ),
    "orchestration named like an agent": (
        AGENT + "orchestrations:\n  helper:  # <-\n    entry_name: helper\n",
        "orchestrations.helper",
    ),
    "orchestration led by no agent": (
        AGENT + "orchestrations:\n  team:\n    entry_name: nobody  # <-\n",
        "orchestrations.team.entry_name",
    ),
    "orchestration connects no agent": (
        AGENT + "orchestrations:\n  team:\n    entry_name: helper\n    connections:\n      - agent: nobody  # <-\n",
        "orchestrations.team.connections[0].agent",
    ),
    "entry names nothing": (AGENT + "entry: nobody  # <-\n", "entry"),
    "no agents": ("store: sqlite:///x.db\nagents: {}  # <-\n", "agents"),
    "mcp binding to no server": (AGENT + "    mcp:\n      - server: nowhere  # <-\n", "agents.helper.mcp[0].server"),
    "system_prompt without kaboo_compat": (AGENT + "    system_prompt: hi  # <-\n", "agents.helper.system_prompt"),
    "approver nobody is": (
        "principals:\n  - {name: bob, token: x}\n" + AGENT + "    interrupt:\n      tools:\n        - name: t\n"
        "          approvers:\n            - carol  # <-\n",
        "agents.helper.interrupt.tools[0].approvers[0]",
    ),
}


@pytest.mark.parametrize(("text", "where"), MISPLACED_NAMES.values(), ids=MISPLACED_NAMES.keys())
def test_a_name_that_points_nowhere_is_reported_at_its_line(tmp_path: Path, text: str, where: str) -> None:
    """A check across entries (an agent, server or approver named that does not exist; two things sharing a name)
    reports the line of the entry at fault and its path, not line 1 and "the config"."""
    config, done = check(tmp_path, text)
    line = next(n for n, written in enumerate(text.splitlines(), 1) if written.endswith("# <-"))
    assert done.exit_code == 2  # type: ignore[attr-defined]
    assert f"{config}:{line}: error: {where}: " in done.stderr  # type: ignore[attr-defined]


def test_each_problem_of_a_check_across_entries_has_its_own_line(tmp_path: Path) -> None:
    """The approvers check and the MCP servers check each find several problems: one report line each, at its entry."""
    config, done = check(
        tmp_path,
        "principals:\n  - {name: bob, token: x}\ngroups:\n  fin: [bob, carol]\n" + AGENT + "    interrupt:\n"
        "      tools:\n        - {name: t, approvers: [bob], approvals_required: 3}\n"
        "        - name: u\n          approvers: [fin]\n          escalate:\n"
        "            - {after: 10, add_approvers: [dave]}\n",
    )
    assert done.stderr.splitlines()[1:] == [  # type: ignore[attr-defined]
        f"  {config}:4: error: groups.fin[1]: group 'fin': member 'carol' is not a principal",
        f"  {config}:10: error: agents.helper.interrupt.tools[0].approvals_required: agent 'helper': rule 't': "
        "approvals_required is 3 but only 1 approver(s) could vote (bob)",
        f"  {config}:14: error: agents.helper.interrupt.tools[1].escalate[0].add_approvers[0]: agent 'helper': "
        "rule 'u': escalate[0].add_approvers: 'dave' is neither a principal nor a group (known: bob, fin)",
    ]
    config, done = check(
        tmp_path, "mcp_servers:\n  'two words': {url: 'http://127.0.0.1:9/mcp'}\n" + AGENT + "    mcp: [{server: x}]\n"
    )
    assert done.stderr.splitlines()[1:] == [  # type: ignore[attr-defined]
        f"  {config}:2: error: mcp_servers.two words: MCP server name 'two words' may use only letters, digits, "
        "'_' and '-'",
        f"  {config}:6: error: agents.helper.mcp[0].server: agent 'helper' binds MCP server 'x', which is not under "
        "'mcp_servers' (declared: two words)",
    ]


PRINCIPALS = "principals:\n  - {name: alice, token: a-secret}\n  - {name: bob, token_env: SAYSO_TEST_BOB_TOKEN}\n"


def test_a_principal_whose_token_env_is_unset_is_said_at_check_and_at_start(tmp_path: Path) -> None:
    """`sayso check` warns that bob cannot sign in (file, line, fix) and passes; `sayso serve` says it at start."""
    config = tmp_path / "sayso.yaml"
    config.write_text(EXAMPLE.read_text() + PRINCIPALS)
    for name in ("script.yaml", "files_tools.py", "files_subjects.py"):
        (tmp_path / name).write_text((EXAMPLE.parent / name).read_text())
    done = runner.invoke(app, ["check", str(config)])
    assert done.exit_code == 0, done.output
    line = len(EXAMPLE.read_text().splitlines()) + 3
    warning = (
        f"{config}:{line}: warning: principals[1].token_env: 'bob' cannot sign in: the environment variable "
        "'SAYSO_TEST_BOB_TOKEN' is not set. Fix: set SAYSO_TEST_BOB_TOKEN to bob's bearer token before starting"
    )
    assert warning in done.stdout
    env = {"SAYSO_STORE": f"sqlite:///{tmp_path / 'sayso.db'}", "SAYSO_SANDBOX": str(tmp_path / "sandbox"), "PATH": ""}
    _, process = LiveServer.process([str(config)], env=env, stderr=subprocess.PIPE)
    process.terminate()
    _, stderr = process.communicate(timeout=30)
    assert warning in stderr.splitlines()
    assert stderr.index(warning) < stderr.index("sayso serves")


def test_a_model_server_that_cannot_be_reached_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run whose OpenAI-compatible server refuses the connection fails naming the configured `base_url`."""
    monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", True)  # to a closed port of this machine
    url = f"http://127.0.0.1:{free_port()}/v1"
    config = tmp_path / "sayso.yaml"
    config.write_text(f"models:\n  local: {{provider: openai, name: llama3, base_url: '{url}'}}\nagents:\n  a: {{}}\n")
    done = runner.invoke(app, ["run", str(config), "hi", "--json"])
    assert done.exit_code == 1
    error = json.loads(done.stdout)["error"]
    assert error.startswith(f"ModelConnectionError: cannot reach the model server at {url}: "), error


def test_two_principals_with_one_token_are_refused_at_check_and_at_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A token that two principals share would sign in as whichever comes first: an error naming both, not the token."""
    config = tmp_path / "sayso.yaml"
    config.write_text(EXAMPLE.read_text() + PRINCIPALS + "  - {name: carol, token: a-secret}\n")
    for name in ("script.yaml", "files_tools.py", "files_subjects.py"):
        (tmp_path / name).write_text((EXAMPLE.parent / name).read_text())
    monkeypatch.setenv("SAYSO_TEST_BOB_TOKEN", "a-secret")
    done = runner.invoke(app, ["check", str(config)])
    assert done.exit_code == 2, done.output
    line = len(EXAMPLE.read_text().splitlines()) + 3
    assert (
        f"{config}:{line}: error: principals[1].token_env: 'bob' has the same bearer token as 'alice', so it would "
        "sign in as 'alice'. Fix: give each principal its own token" in done.stderr
    )
    assert "principals[2].token: 'carol' has the same bearer token as 'alice'" in done.stderr
    assert "a-secret" not in done.output
    from sayso import ConfigError, Sayso, load_config

    with pytest.raises(ConfigError, match="'bob' has the same bearer token as 'alice'") as raised:
        Sayso(load_config(config))
    assert "a-secret" not in str(raised.value)


def test_an_approvers_error_names_the_rule_by_its_rule_name(tmp_path: Path) -> None:
    """A rule named by `rule:` is called so in its approvers' errors, as its requests say it (it said the tool)."""
    config, done = check(
        tmp_path,
        "principals:\n  - {name: bob, token: x}\ngroups:\n  finance: [bob]\n" + AGENT + "    interrupt:\n"
        "      tools:\n        - {name: refund, rule: refunds-large, approvers: [finanse]}\n",
    )
    assert done.exit_code == 2  # type: ignore[attr-defined]
    assert (
        f"{config}:10: error: agents.helper.interrupt.tools[0].approvers[0]: agent 'helper': rule 'refunds-large': "
        "approver 'finanse' is neither a principal nor a group"
    ) in done.stderr  # type: ignore[attr-defined]


def test_a_quorum_the_starter_would_leave_out_of_reach_is_a_warning(tmp_path: Path) -> None:
    """Three of finance's three must approve, but never the one who started the run: if alice asks, only two could,
    and her request would wait for ever. `sayso check` passes and warns, at the rule's line; with self-approval on,
    or once an escalation adds enough approvers, it does not."""
    principals = "principals:\n" + "".join(
        f"  - {{name: {n}, token: {n}-t}}\n" for n in ("alice", "bob", "carol", "dana")
    )
    for name in ("files_tools.py", "files_subjects.py"):
        (tmp_path / name).write_text((EXAMPLE.parent / name).read_text())
    agent = "models:\n  demo: test\n" + AGENT + "    tools: [files_tools:delete_file]\n"
    head = principals + "groups:\n  finance: [alice, bob, carol]\n" + agent + "    interrupt:\n      tools:\n"
    config, done = check(
        tmp_path, head + "        - {name: delete_file, approvers: [finance], approvals_required: 3}\n"
    )
    assert done.exit_code == 0, done.output  # type: ignore[attr-defined]
    assert (
        f"{config}:16: warning: agents.helper.interrupt.tools[0].approvals_required: agent 'helper': "
        "rule 'delete_file': "
        "approvals_required is 3, but a run started by one of its 3 approvers (alice, bob, carol) leaves only 2 who "
        "may vote (self_approval is false), so its request would wait until it expires. Fix: lower "
        "approvals_required, add an approver, or set self_approval: true"
    ) in done.stdout  # type: ignore[attr-defined]
    for fine in (
        "        - {name: delete_file, approvers: [finance], approvals_required: 3, self_approval: true}\n",
        "        - name: delete_file\n          approvers: [finance]\n          approvals_required: 3\n"
        "          escalate: [{after: 1h, add_approvers: [dana]}]\n",
    ):
        _, done = check(tmp_path, head + fine)
        assert done.exit_code == 0 and "warning" not in done.output, done.output  # type: ignore[attr-defined]


def test_a_sole_approver_who_starts_the_run_is_warned_of_without_naming_a_quorum_never_set(tmp_path: Path) -> None:
    """A workflow's inputs routed to bob alone wait until they expire when bob starts the run: the warning says so
    at `approvers`, and does not talk of `approvals_required`, which the config never set (and which is for
    approvals only)."""
    principals = "principals:\n" + "".join(f"  - {{name: {n}, token: {n}-t}}\n" for n in ("alice", "bob"))
    flow = "workflows:\n  routed:\n" + FLOW + "    approvers: [bob]\n"
    config, done = check(tmp_path, principals + "models:\n  demo: test\n" + AGENT + flow)
    assert done.exit_code == 0, done.output  # type: ignore[attr-defined]
    assert (
        f"{config}:15: warning: workflows.routed.approvers: workflow 'routed': a run started by its only approver "
        "(bob) leaves nobody who may decide its requests (self_approval is false), so they would wait until they "
        "expire. Fix: add an approver, or set self_approval: true"
    ) in done.stdout  # type: ignore[attr-defined]
    assert "approvals_required" not in done.stdout  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("script", "said"),
    [
        ("rules:\n  - user: '(open'\n    reply: x\n", ":2: error: rules[0].user: not a regular expression: missing ),"),
        ("rules:\n  - tool: t\n    result: '[a'\n    reply: x\n", ":3: error: rules[0].result: not a regular"),
        ("rules:\n  - user: x\n    replly: x\n", ":3: error: rules[0].replly: Extra inputs are not permitted. Fix:"),
        ("rules: [\n", ":2: error: not valid YAML, column 1: expected the node content"),
        ("- a rule\n", "': a script is a mapping with 'rules', 'fallback'"),
    ],
    ids=["user-regex", "result-regex", "misspelt-field", "yaml-syntax", "a-list"],
)
def test_a_script_that_cannot_run_is_an_error_at_check_naming_its_line(tmp_path: Path, script: str, said: str) -> None:
    """A scripted model's broken regex is refused by `sayso check` (not a run failing later on `missing )`), and each
    problem of a script reads as the config's do: `script.yaml:LINE: error: where: what`, without pydantic's or
    PyYAML's own wording (`[type=…`, `<unicode string>`)."""
    (tmp_path / "script.yaml").write_text(script)
    _, done = check(tmp_path, "models:\n  m: {scripted: script.yaml}\nagents:\n  a: {model: m}\n")
    err = done.stderr  # type: ignore[attr-defined]
    assert done.exit_code == 2, err  # type: ignore[attr-defined]
    assert f"{tmp_path / 'script.yaml'}{said}" in err
    for raw in ("[type=", "errors.pydantic.dev", "<unicode string>"):
        assert raw not in err
