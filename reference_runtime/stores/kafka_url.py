"""``kafka://HOST:PORT/TOPIC[?partitions=N&timeout=S&format=F]`` (spec KSTORE-6, WIRE-1): the Kafka scheme's
own URL parser. ``format`` is ``native`` (the default) or ``flink-agents``; with ``flink-agents``, ``version``
(``0.2`` or ``0.3``) names the engine version that owns the topic and ``migrate=true`` rewrites a topic held in
another version's format (WIRE-12). Both are kept in ``StoreUrl.options``."""

from __future__ import annotations

import re
from types import MappingProxyType

from .scheme import StoreUrl, bad_url, query_options, split_server_url

USAGE = "kafka://HOST:PORT/TOPIC"
#: A Kafka topic name.
TOPIC = re.compile(r"^[A-Za-z0-9._-]{1,249}$")
_DIGITS = re.compile(r"^[0-9]{1,10}$")


def parse_kafka_url(url: str) -> StoreUrl:
    """``url`` as bootstrap host and port, topic and options, or :class:`StoreUrlError` quoting it."""
    if not url.startswith("kafka://"):
        raise bad_url(url, f"expected {USAGE}")
    parts, port = split_server_url(url, USAGE)
    if port is None:
        raise bad_url(url, f"no port; expected {USAGE}")
    topic = parts.path[1:] if parts.path.startswith("/") else ""
    if not TOPIC.match(topic) or topic in (".", ".."):
        raise bad_url(url, f"the path must be one topic name of letters, digits, '.', '_' or '-' ({USAGE})")
    values = query_options(url, parts.query, ("partitions", "timeout", "format", "version", "migrate"))
    partitions = timeout = None
    if "partitions" in values:
        if not _DIGITS.match(values["partitions"]) or not 1 <= int(values["partitions"]) <= 100_000:
            raise bad_url(url, "bad partitions: expected a whole number from 1 to 100000")
        partitions = int(values["partitions"])
    if "timeout" in values:
        try:
            timeout = float(values["timeout"])
        except ValueError:
            timeout = -1.0
        if not 0 < timeout <= 3600:
            raise bad_url(url, "bad timeout: expected seconds, more than 0 and at most 3600")
    fmt = values.get("format")
    if fmt is not None:
        from .kafka_flink_format import FORMATS  # the Java serde it imports is only needed for a format

        if fmt not in FORMATS:
            raise bad_url(url, f"bad format {fmt!r}: expected one of {', '.join(FORMATS)}")
    options: dict[str, str] = {name: values[name] for name in ("version", "migrate") if name in values}
    if options and fmt != "flink-agents":
        raise bad_url(url, f"{' and '.join(options)} apply to format=flink-agents only")
    if "version" in options:
        from .kafka_flink_format import VERSIONS

        if options["version"] not in VERSIONS:
            raise bad_url(url, f"bad version {options['version']!r}: expected one of {', '.join(VERSIONS)}")
    if options.get("migrate", "true") != "true":
        raise bad_url(url, "bad migrate: the only value is true")
    if "migrate" in options and "version" not in options:
        raise bad_url(url, "migrate=true needs version=0.2 or version=0.3: the version to migrate the topic to")
    assert parts.hostname is not None  # split_server_url refuses a URL without a host
    return StoreUrl(
        url,
        "kafka",
        parts.hostname,
        port,
        path=topic,
        partitions=partitions,
        timeout=timeout,
        format=fmt,
        options=MappingProxyType(options),
    )
