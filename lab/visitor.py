"""Who a session belongs to, for the quotas one visitor may use (uploads, heavy redraws).

``visitor_keys(session_context) -> (cookie, address)``: the value of the :data:`VISITOR_COOKIE` cookie the
lab's pages set (``None`` when the browser sent none: a first request, cookies refused, a test client) and
the client's address (``remote_ip`` of the request that opened the session; ``""`` when unknown). Quotas are
counted under both: the cookie tells one browser from another behind one address (a classroom behind one
NAT address), the address catches a visitor who drops the cookie. Both are per server process.

:func:`visitor_key` is the key of a session for a budget shared by a visitor's tabs: the cookie, or None
without one (the budget is then the session's own; an address is not used there, since a classroom behind
one address would share one visitor's budget).
"""

from __future__ import annotations

__all__ = ["VISITOR_COOKIE", "visitor_keys", "visitor_key", "quota_keys"]

VISITOR_COOKIE = "grpo_lab_visitor"  #: set on page responses by grpo_lab.server


def visitor_keys(session_context) -> tuple[str | None, str]:
    """``(cookie value or None, client address or "")`` of the session (see the module docstring); never raises."""
    request = getattr(session_context, "request", None) if session_context is not None else None
    if request is None:
        return None, ""
    try:
        cookie = (request.cookies or {}).get(VISITOR_COOKIE) or None
    except Exception:
        cookie = None
    address = str(getattr(request, "remote_ip", "") or "")
    return (str(cookie)[:128] if cookie else None), address


def quota_keys(session_context) -> tuple[tuple[str, str], ...]:
    """The keys a session's use is counted under: ``("cookie", value)`` when there is a cookie, and
    ``("address", ip)`` (one key for every session without either)."""
    cookie, address = visitor_keys(session_context)
    keys = (("address", address),)
    return ((("cookie", cookie),) + keys) if cookie else keys


def visitor_key(session_context) -> str | None:
    """The key of the session's visitor for a budget its tabs share: ``"cookie:<value>"``, or None without a cookie."""
    cookie, _address = visitor_keys(session_context)
    return f"cookie:{cookie}" if cookie else None
