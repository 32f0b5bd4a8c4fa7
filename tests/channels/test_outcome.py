"""What a channel tells a person of their decision when reading the request again fails: the decision was taken.

The decision is recorded before the channel reads the request to word its answer; a page or reply that
said the decision failed would have the person decide again, or believe nothing happened.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sayso import Approve, Sayso
from sayso.channels._outcome import told
from sayso.exceptions import StoreError

from ..conftest import EXAMPLE, approvals
from ..protocols.conftest import filled


async def test_a_decision_whose_request_cannot_be_read_again_is_still_said_to_be_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sandbox = filled(tmp_path / "sandbox")
    async with Sayso.from_yaml(EXAMPLE) as app:
        paused = await app.run("delete notes")
        request_id = approvals(paused.requests)[0].request_id
        done = await app.decide(request_id, Approve())

        async def gone(*args: object, **kwargs: object) -> None:
            raise StoreError("the store is gone")

        monkeypatch.setattr(app, "request", gone)
        said = await told(app, Approve(), done)
    assert (said.title, said.text) == ("Recorded", "Your decision was recorded.")
    assert not (sandbox / "notes.txt").exists()
