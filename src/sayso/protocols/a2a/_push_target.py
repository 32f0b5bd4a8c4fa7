"""Where an A2A push notification may go: the one address check, and a connection pinned to what was checked.

A push URL is the client's choice, so the server must not be made to call inward. The host is
resolved once per delivery; every address it resolves to is checked, and the connection goes to
the first checked address itself (the URL's host kept for `Host` and TLS), so a second DNS answer
(rebinding) cannot send it elsewhere. Public addresses are always allowed; loopback and private
ones only with `a2a.push_private_urls`; link-local, cloud-metadata, multicast, reserved and
unspecified addresses never, whatever the setting (169.254.169.254, `fd00:ec2::254`, ...).
"""

from __future__ import annotations

import ipaddress
import socket
import urllib.parse

import anyio
import httpx

METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean, ...
        "169.254.170.2",  # AWS ECS task metadata
        "fd00:ec2::254",  # AWS over IPv6
        "fd00:ec2::23",  # AWS DNS over IPv6
        "100.100.100.200",  # Alibaba Cloud
        "192.0.0.192",  # Oracle Cloud
    )
)
"""Cloud metadata services: never reached, even where private addresses are allowed."""


class PushRefused(httpx.RequestError):
    """A push notification's destination is one this server must not call; nothing was sent."""


def address_problem(address: str, *, private_ok: bool) -> str | None:
    """Why a push may not go to `address` (`None` when it may)."""
    try:
        ip = ipaddress.ip_address(address.split("%", maxsplit=1)[0])
    except ValueError:
        return f"{address!r} is not an IP address"
    mapped = getattr(ip, "ipv4_mapped", None)
    if mapped is not None:
        ip = mapped
    if ip in METADATA_ADDRESSES:
        return f"{ip} is a cloud metadata address"
    if ip.is_link_local or ip.is_multicast or ip.is_unspecified or (ip.is_reserved and not ip.is_loopback):
        return f"{ip} is a link-local, multicast, reserved or unspecified address"
    if not private_ok and (ip.is_loopback or ip.is_private or not ip.is_global):
        return f"{ip} is not a public address (set a2a.push_private_urls to reach it)"
    return None


async def checked_address(url: str, *, private_ok: bool) -> str:
    """Resolve a push URL's host once and check every address; the address to connect to.

    Raises:
        PushRefused: the URL is not http(s), its host does not resolve, or an address is not one to call.
    """
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise PushRefused(f"a push notification URL must be http(s) with a host: {url!r}")
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        infos = await anyio.getaddrinfo(parsed.hostname, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise PushRefused(f"the push notification host {parsed.hostname!r} does not resolve: {exc}") from None
    addresses = [str(info[4][0]) for info in infos]
    for address in addresses:
        problem = address_problem(address, private_ok=private_ok)
        if problem is not None:
            raise PushRefused(f"the push notification host {parsed.hostname!r} resolves to {problem}")
    if not addresses:
        raise PushRefused(f"the push notification host {parsed.hostname!r} has no address")
    return addresses[0]


class PinnedTransport(httpx.AsyncBaseTransport):
    """Sends each request to the address its host was checked to resolve to, and nowhere else."""

    def __init__(self, *, private_ok: bool, inner: httpx.AsyncBaseTransport | None = None) -> None:
        self.private_ok = private_ok
        self.inner = inner or httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        address = await checked_address(str(request.url), private_ok=self.private_ok)
        host = request.url.host
        if request.url.scheme == "https":
            request.extensions = {**request.extensions, "sni_hostname": host}
        # The `Host` header was set from the URL when the request was built; only the connection moves.
        request.url = request.url.copy_with(host=address)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()
