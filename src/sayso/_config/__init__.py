"""The configuration file (`sayso.yaml`): its models and loading, and the checks a config must pass.

`file` holds the models and the loader, `lines` where each key is, `edges` and `mcp` the sections
that configure the edges and MCP servers, `checks` what must hold before any agent runs.
"""
