"""The pure core: requests, decisions, policies and resume rules, with no I/O.

Nothing here imports a database driver, a web framework, a protocol package or the engine;
`tests/test_layers.py` keeps it that way.
"""
