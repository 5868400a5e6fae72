"""``redis://HOST[:PORT][/DB]`` (spec KSTORE-6): the Redis scheme's own URL parser. No client import, so the
registry and ``check_store`` can parse a Redis URL where the ``redis`` package is not installed."""

from __future__ import annotations

import re

from .scheme import StoreUrl, bad_url, split_server_url

USAGE = "redis://HOST:PORT/DB"
#: Redis numbers its databases with a C int.
MAX_REDIS_DB = 2**31 - 1
DEFAULT_PORT = 6379
_DIGITS = re.compile(r"^[0-9]{1,10}$")


def parse_redis_url(url: str) -> StoreUrl:
    """``url`` as host, port (default 6379) and database number (default 0), or :class:`StoreUrlError`."""
    if not url.startswith("redis://"):
        raise bad_url(url, f"expected {USAGE}")
    parts, port = split_server_url(url, USAGE)
    if parts.query:
        raise bad_url(url, f"takes no options; expected {USAGE}")
    db = parts.path.strip("/") or "0"
    if not _DIGITS.match(db) or int(db) > MAX_REDIS_DB:
        raise bad_url(url, f"the database must be a number from 0 to {MAX_REDIS_DB} ({USAGE})")
    assert parts.hostname is not None  # split_server_url refuses a URL without a host
    return StoreUrl(url, "redis", parts.hostname, DEFAULT_PORT if port is None else port, db=int(db))
