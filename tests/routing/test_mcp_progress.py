"""sayso as an MCP server asks an approver of a routed request with the quorum as it stands now."""

from __future__ import annotations

from sayso import Approve, Config, Sayso
from sayso.protocols.mcp import elicitation_for


async def test_the_form_an_approver_is_asked_says_the_live_count_and_the_edited_arguments(refunds: Config) -> None:
    async with Sayso(refunds) as app:
        paused = await app.run("refund 250 to acme", principal="alice")
        [request] = paused.requests
        before = elicitation_for(request, votes=(await app.request(request.request_id)).votes)
        assert "Approvals: 0 of 2, waiting for finance." in before.message
        edit = Approve(edited_args={"amount": 200, "to": "acme"})
        await app.decide(request.request_id, edit, principal="bob")
        state = await app.request(request.request_id)
        after = elicitation_for(state.request, votes=state.votes)
    assert "Approvals: 1 of 2 (edited arguments), waiting for finance." in after.message
    assert '"amount": 200' in after.message and "250" not in after.message
