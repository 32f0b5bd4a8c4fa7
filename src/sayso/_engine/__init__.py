"""The engine seam: the only code that speaks pydantic-ai.

Typed call metadata (`calls`), deferred calls <-> requests (`deferred`), the gate toolset (`gate`),
before-call hooks (`hooks`), tools (`tools`), agent building (`agents`), models (`models`,
`scripted`), telling a tool's service what was decided (`notify`), and MCP servers as gated tool
sources (`mcp/`).
"""
