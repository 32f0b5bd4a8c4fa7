"""MCP servers as gated tool sources: bindings as one toolset, calls that wait for a person, elicitations."""
