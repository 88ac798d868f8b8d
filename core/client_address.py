"""The address of whoever sent a request, for the log-in limits and the API's per-address throttle.

Behind a proxy REMOTE_ADDR is the proxy's, the same for everyone; the proxy says whom it serves in
X-Forwarded-For. Anyone can send that header, so it is believed only when the request comes from one of
TRUSTED_PROXIES (addresses or networks, from the environment; none by default).
"""

from __future__ import annotations

import ipaddress

from django.conf import settings
from django.http import HttpRequest

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def _address(text: str) -> Address | None:
    try:
        return ipaddress.ip_address(text.strip())
    except ValueError:
        return None


def _trusted(address: Address) -> bool:
    return any(address in network for network in settings.TRUSTED_PROXIES)


def client_address(request: HttpRequest) -> str | None:
    """From a trusted proxy, the right-most X-Forwarded-For entry that is not itself a trusted proxy: each
    proxy appends the address it saw, so the entries left of that were written by the client and prove
    nothing. From anyone else, REMOTE_ADDR, whatever the header says."""
    remote = _address(request.META.get("REMOTE_ADDR", ""))
    if remote is None:
        return None
    if not _trusted(remote):
        return str(remote)
    for hop in reversed(request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")):
        address = _address(hop)
        if address is None:
            break  # not a proxy's entry: stop before the client's own
        if not _trusted(address):
            return str(address)
    return str(remote)
