"""A workflow of one node in a config file of its own, as a user writes one, next to the module of its node."""

from __future__ import annotations

from pathlib import Path


def one_node_workflow(
    folder: Path, name: str, nodes: str, node: str = "ask", *, module: str | None = None, own_store: bool = True
) -> Path:
    """Write `nodes` as `module` (`{name}_nodes`) and `{name}.yaml`, whose entry is workflow `name` running `node`.

    A module is imported once per process under its name: tests whose nodes differ need modules of their own
    names. An idle scripted agent keeps the config whole (a config has agents); `own_store` gives it an SQLite
    file of its own, else the store comes from `SAYSO_STORE`. Returns the config's path.
    """
    module = module or f"{name}_nodes"
    (folder / f"{module}.py").write_text(nodes)
    (folder / "idle.script.yaml").write_text("name: idle\nrules: []\nfallback: idle\n")
    config = folder / f"{name}.yaml"
    config.write_text(
        (f"store: sqlite:///{folder / f'{name}.db'}\n" if own_store else "")
        + "models: {idle: {scripted: idle.script.yaml}}\n"
        "agents: {idle: {model: idle}}\n"
        "workflows:\n"
        f"  {name}:\n"
        f"    nodes: {{ask: '{module}:{node}'}}\n"
        "    edges: [[START, ask]]\n"
        f"entry: {name}\n"
    )
    return config
