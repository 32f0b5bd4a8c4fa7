r"""The terminal the CLI writes to: rich's console, with control characters in what it shows made visible.

What the CLI shows comes from outside: a model's words and questions, a tool's result or error, a
file an agent read, a workflow's form, an MCP server's message. Written raw, an escape sequence in it
moves the cursor, erases the lines above (the request a person is about to approve) or retitles the
terminal. Every piece of text is written with its control characters spelt out (`\x1b`), so what
the person reads is what was said; the console's own styling, which rich writes apart from the text,
is untouched.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from rich.console import Console
from rich.segment import Segment

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""C0 controls but newline and tab, DEL, and the C1 controls (`\\x9b` starts a sequence as `\\x1b[` does)."""


def visible(text: str) -> str:
    r"""`text` with each control character written as its escape (`\x1b`), not sent to the terminal."""
    return _CONTROL.sub(lambda found: f"\\x{ord(found.group()):02x}", text)


class SafeConsole(Console):
    """A console that shows the text it is given, never a control sequence hidden in it."""

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        # Control segments are rich's own (cursor moves it means to make); text segments carry what was said.
        return super()._render_buffer(
            segment if segment.control else Segment(visible(segment.text), segment.style, segment.control)
            for segment in buffer
        )
