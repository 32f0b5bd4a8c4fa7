"""Protocol adapters: A2A with kagent's HITL extension (`sayso.protocols.a2a`) and AG-UI (`sayso.protocols.ag_ui`)."""
