"""Email over SMTP (`aiosmtplib`): a request's summary, arguments and hint, with links to decide it once.

Each mail carries links to `/v1/links/{token}` on the server's public address: the token is the
runtime's (signed, expiring, single-use, bound to the request, the principal the mail is for and
the arguments shown). A link opens a confirm page; nothing is decided until it is submitted.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from typing import Any

import aiosmtplib

from .._config.channels import ChannelsConfig, EmailChannelConfig
from .._core.access import LOCAL_NAME
from .._core.channels import Target
from .._runtime import OutboundEvent, Sayso
from ._dispatch import NoticeFailed, Outcome
from ._links import LINKS_PATH, args_shown


class EmailChannel:
    """Mails a request's opening (and escalations) to `email:` targets; decisions are not mailed."""

    def __init__(self, sayso: Sayso, channels: ChannelsConfig, email: EmailChannelConfig) -> None:
        assert channels.public_url is not None, "checked with the config"
        self.sayso = sayso
        self.config = email
        self.public_url = channels.public_url.rstrip("/")
        self.max_attempts = email.max_attempts
        self.backoff_seconds = email.backoff_seconds
        self.timeout_seconds = email.timeout_seconds
        self._login = email.login()  # a missing secret fails at start-up, not at the first mail
        channels.link_key(sayso.config.audit.key())
        self._local = not sayso.config.principals

    def principal_for(self, address: str) -> str | None:
        """Whom a link mailed to `address` decides as; `None`: nobody (the config check makes this rare).

        Without principals (local development) there is one caller, `local`, and every link decides as
        it, a listed address's too: a name from `users` would be a principal the config does not have,
        whom the access rule lets decide nothing.
        """
        return LOCAL_NAME if self._local else self.config.users.get(address)

    def delivery(self, target: Target) -> EmailChannel:
        """Every address is tried as the channel's config says."""
        return self

    async def deliver(self, target: Target, event: OutboundEvent) -> Outcome:
        if event.event not in ("request.opened", "request.escalated") or not event.still_open:
            return "skipped"
        principal = self.principal_for(target.address)
        if principal is None:
            raise NoticeFailed(f"{target.address!r} is no principal's address (channels.email.users)", retry=False)
        # The mail shows the request as it stands now, read with its link: an edit vote since the event was
        # built (the SMTP server was down meanwhile) changed the arguments, and the link approves what is shown.
        mailed = await self.sayso.mail_link(event.data["request"]["id"], principal=principal)
        message = compose(
            mailed.request,
            link=f"{self.public_url}{LINKS_PATH}/{mailed.token}",
            sender=self.config.sender,
            to=target.address,
            delivery_id=event.delivery_id,
            reason=event.reason,
        )
        login = self._login or (None, None)
        try:
            await aiosmtplib.send(
                message,
                hostname=self.config.smtp_host,
                port=self.config.smtp_port,
                username=login[0],
                password=login[1],
                start_tls=self.config.starttls,
                use_tls=self.config.tls,
                timeout=self.timeout_seconds,
            )
        except aiosmtplib.SMTPRecipientsRefused as exc:
            # 4xx is "not now" (greylisting, a full mailbox): tried again with backoff; 5xx is "never".
            later = all(400 <= refused.code < 500 for refused in exc.recipients)
            raise NoticeFailed(f"the SMTP server refused {target.address}: {exc}", retry=later) from exc
        except (aiosmtplib.SMTPSenderRefused, aiosmtplib.SMTPDataError) as exc:
            # The recipient was taken, the sender or the message then refused: as for a recipient, 5xx is "never".
            raise NoticeFailed(f"{type(exc).__name__}: {exc}", retry=not 500 <= exc.code < 600) from exc
        except (aiosmtplib.SMTPException, OSError) as exc:
            raise NoticeFailed(f"{type(exc).__name__}: {exc}") from exc
        return "delivered"


def compose(
    request: Mapping[str, Any], *, link: str, sender: str, to: str, delivery_id: str, reason: str | None = None
) -> EmailMessage:
    """The mail for one request: plain text and HTML, each with its summary, arguments, hint and links.

    `reason` is an escalation step's (`no decision after 1h: ...`): the mail then says it still waits.
    """
    tool, agent = request["tool_name"], request["agent_path"]
    hint = request.get("hint") or f"{agent} asks before calling {tool}"
    args = json.dumps(args_shown(request), indent=2, ensure_ascii=False, sort_keys=True)
    expires = f"\nThis request expires at {request['expires']}." if request.get("expires") else ""
    message = EmailMessage()
    still = f"Still waiting ({reason}). " if reason else ""
    message["Subject"] = f"{'Still waiting' if reason else 'Approval needed'}: {agent} wants to call {tool}"
    message["From"] = sender
    message["To"] = to
    message["Date"] = formatdate(localtime=False)
    message["Message-ID"] = make_msgid(idstring=delivery_id.replace("_", ""), domain="sayso")
    message["Sayso-Request"] = request["id"]
    message.set_content(
        f"{still}{agent} wants to call {tool}.\n\n{hint}\n\nArguments:\n{args}\n\n"
        f"Approve: {link}?action=approve\nReject: {link}?action=reject\nEdit the arguments: {link}?action=edit\n\n"
        f"Each link opens a page to confirm on; nothing is decided until you do. The links work once.{expires}\n"
    )
    esc = html.escape
    message.add_alternative(
        f"""<!doctype html><html><body>
<p>{esc(still)}<strong>{esc(agent)}</strong> wants to call <code>{esc(tool)}</code>.</p>
<p>{esc(hint)}</p>
<pre>{esc(args)}</pre>
<p><a href="{esc(link)}?action=approve">Approve</a> · <a href="{esc(link)}?action=reject">Reject</a> ·
<a href="{esc(link)}?action=edit">Edit the arguments</a></p>
<p>Each link opens a page to confirm on; nothing is decided until you do. The links work once.{esc(expires)}</p>
</body></html>""",
        subtype="html",
    )
    return message
