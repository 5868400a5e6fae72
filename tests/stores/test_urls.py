"""One store-URL parser behind every entry point (STORE-10, KSTORE-6): any text parses or raises
StoreUrlError, and every entry point refuses what the parser refuses, the same way."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance import factory_from_url
from pytest_durable.plugin import _checked_store
from reference_runtime.errors import StoreUrlError
from reference_runtime.stores import StoreUrl, open_store, parse_store_url
from reference_runtime.stores.factory import store_factory
from reference_runtime.stores.redis_url import MAX_REDIS_DB

PREFIXES = ["", "memory:", "sqlite:", "sqlite://", "redis://", "kafka://", "redis:", "REDIS://", "postgres://"]
PIECES = [
    "localhost",
    "127.0.0.1",
    "[::1]",
    "[::1",
    "::1]",
    ":",
    ":6379",
    ":99999",
    ":-1",
    ":0",
    "/",
    "/0",
    "/15",
    "/99999999999999999999",
    "/topic",
    "/a/b",
    "?partitions=2",
    "?timeout=0",
    "&",
    "=",
    "#f",
    "@",
    "user:pw@",
    "%00",
    "\x00",
    "\uff4c",
    "\uff16",
    "\u0663",
    " ",
    "..",
    "%",
    "\n",
]
urls = st.one_of(
    st.text(max_size=40),
    st.builds(
        lambda p, parts: p + "".join(parts),
        st.sampled_from(PREFIXES),
        st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=4)), max_size=6),
    ),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(urls)
def test_any_text_parses_or_raises_store_url_error(url: str) -> None:
    """STORE-10: whatever the text, the parser returns a StoreUrl or raises StoreUrlError quoting it."""
    try:
        parsed = parse_store_url(url)
    except StoreUrlError as exc:
        assert repr(url) in str(exc) or "is empty" in str(exc)
        return
    assert isinstance(parsed, StoreUrl)
    if parsed.scheme in ("redis", "kafka"):
        assert parsed.host and 0 <= parsed.port <= 65535 and url.isascii()
        assert 0 <= parsed.db <= MAX_REDIS_DB
    if parsed.scheme == "sqlite":
        assert "\x00" not in parsed.path


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(url=urls)
def test_every_entry_point_refuses_what_the_parser_refuses(url: str, tmp_path: Path) -> None:
    """STORE-10: open_store, factory_from_url, the plugin's store factory and --durable-store check, and the
    stores' own from_url all raise StoreUrlError (the plugin: a usage error) for a refused URL."""
    try:
        parse_store_url(url)
    except StoreUrlError:
        pass
    else:
        return  # a valid URL would connect; the refusals are what must agree
    for entry in (
        lambda: open_store(url),
        lambda: factory_from_url(url, tmp_path),
        lambda: store_factory(url, lambda: tmp_path),
    ):
        with pytest.raises(StoreUrlError):
            entry()
    with pytest.raises(pytest.UsageError, match="--durable-store"):
        _checked_store(url, probe=False)
    if url.startswith("kafka:"):
        from reference_runtime.stores.kafka import KafkaStore

        with pytest.raises(StoreUrlError):
            KafkaStore.from_url(url)
    if url.startswith("redis:"):
        redis_store = pytest.importorskip("reference_runtime.stores.redis")
        with pytest.raises(StoreUrlError):
            redis_store.RedisStore.from_url(url)


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("postgres://x", "unknown scheme"),
        ("redis://[::1", "Invalid IPv6 URL"),
        ("redis://\uff4c\uff4f\uff43\uff41\uff4c\uff48\uff4f\uff53\uff54/0", "is not ASCII"),
        ("redis://h:\uff16\uff13\uff17\uff19/0", "is not ASCII"),
        ("redis://h/\u0663", "is not ASCII"),
        ("redis://h/99999999999999999999", "the database must be a number from 0 to 2147483647"),
        ("redis://h/2147483648", "the database must be a number"),
        ("sqlite:a\x00b", "contains a NUL character"),
        ("kafka://h/t", "no port"),
        ("kafka://h:1/t?partitions=0", "bad partitions"),
        ("kafka://h:1/t?timeout=nan", "bad timeout"),
        ("redis://u:p@h/0", "credentials"),
        ("redis://a b/0", "contains a space"),
        ("memory:x", "takes nothing after the colon"),
    ],
)
def test_malformed_urls_say_what_is_wrong(url: str, why: str) -> None:
    """KSTORE-6, STORE-10: the refusal quotes the URL and says what is wrong."""
    with pytest.raises(StoreUrlError, match="store URL") as info:
        parse_store_url(url)
    assert why in str(info.value)


def test_well_formed_urls_parse() -> None:
    """KSTORE-6: the documented forms, with defaults."""
    assert parse_store_url("redis://h/3") == StoreUrl("redis://h/3", "redis", "h", 6379, db=3)
    assert parse_store_url("redis://[::1]:7/0").bootstrap == "[::1]:7"
    kafka = parse_store_url("kafka://h:9/t.x?partitions=2&timeout=1.5")
    assert (kafka.path, kafka.partitions, kafka.timeout, kafka.bootstrap) == ("t.x", 2, 1.5, "h:9")
    assert parse_store_url("sqlite:///tmp/x.db").path == "/tmp/x.db"
    assert parse_store_url("sqlite:").path == ""
    assert parse_store_url("memory:").scheme == "memory"


def test_isolated_kafka_topics_are_deleted_at_cleanup(tansu: str) -> None:
    """STORE-11, STORE-20: the topics the one store factory (the plugin's and the kit's) made are deleted by
    its cleanup."""
    pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AdminClient

    from reference_runtime.stores import store_factory

    stores = store_factory(f"kafka://{tansu}/cleanup")
    made = {stores().topic, stores().topic}  # type: ignore[attr-defined]
    admin = AdminClient({"bootstrap.servers": tansu})
    assert made <= set(admin.list_topics(timeout=10).topics)
    stores.cleanup()
    assert not made & set(admin.list_topics(timeout=10).topics)


def test_the_stores_own_parsers_refuse_what_the_front_door_refuses() -> None:
    """STORE-10: RedisStore.from_url and KafkaStore.from_url call their scheme's parser directly; it refuses a
    NUL or a blank host as parse_store_url does, before any connection is tried."""
    from reference_runtime.stores.kafka import KafkaStore
    from reference_runtime.stores.kafka_url import parse_kafka_url
    from reference_runtime.stores.redis_url import parse_redis_url

    cases = ((parse_redis_url, "redis://\x00"), (parse_redis_url, "redis:// "), (parse_kafka_url, "kafka://\x00:1/t"))
    for parse, url in cases:
        with pytest.raises(StoreUrlError, match=r"NUL|no host"):
            parse(url)
    with pytest.raises(StoreUrlError, match="NUL"):
        KafkaStore.from_url("kafka://h\x00:1/t")


@pytest.mark.parametrize("path", ["notes.txt", "/tmp/x.db", "runs/a.db"])
def test_a_bare_path_is_refused_with_its_sqlite_url(path: str) -> None:
    """STORE-10: a file path given without a scheme is one StoreUrlError that says how to name it as a
    SQLite store (the likeliest slip at `durable inspect` and `--store`)."""
    with pytest.raises(StoreUrlError) as info:
        parse_store_url(path)
    assert str(info.value).endswith(f"a SQLite file is 'sqlite:{path}'")
    with pytest.raises(StoreUrlError) as other:
        parse_store_url("bogus:x")
    assert "SQLite file" not in str(other.value)
