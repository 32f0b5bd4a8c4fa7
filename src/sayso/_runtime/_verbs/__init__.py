"""The runtime's verbs, one module each: start, decide, answer, resume, cancel, expire, escalate, recover.

Each verb reads as *read → plan (a pure function, in `sayso._core` where it is a rule) → write →
runner*, as a function over a `Cycle` (`.._cycle`), which picks the run's runner by its kind. The
facade (`.._facade`) calls them; they import the cycle, the tree and the kernel below them, never
the facade, and one another only downwards (decide, answer and recover end in `resume`'s
`resume_if_ready`). The rules a decision is checked by live once, in `rules`.
"""
