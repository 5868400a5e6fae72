"""The store scheme registry (STORE-17..STORE-20): one record per scheme, registered in-process or by entry
point, behind every entry point; the capability enum; the one store factory."""

from __future__ import annotations

import dataclasses
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_durable.plugin import _checked_store
from reference_runtime.errors import DurableError, StoreError, StoreSchemeError, StoreUrlError
from reference_runtime.inspection import inspect_store
from reference_runtime.stores import (
    CAPABILITIES,
    ENTRY_POINT_GROUP,
    ActionStateStore,
    Capability,
    InMemoryStore,
    StoreFactory,
    StoreScheme,
    StoreUrl,
    check_store,
    get_scheme,
    known_schemes,
    open_store,
    parse_store_url,
    register_scheme,
    store_factory,
    unregister_scheme,
)


class Counted(InMemoryStore):
    made = 0

    def __init__(self) -> None:
        super().__init__()
        Counted.made += 1


def _isolated(parsed: StoreUrl, timeout: float, scratch: object) -> tuple[ActionStateStore, str]:
    store = Counted()
    return store, f"h{Counted.made}"


CLEANED: list[list[str]] = []


@pytest.fixture
def scheme() -> Iterator[StoreScheme]:
    made = register_scheme(
        StoreScheme(
            name="counted",
            usage="counted:",
            open=lambda parsed, timeout: Counted(),
            isolated=_isolated,
            cleanup=lambda parsed, handles, timeout: CLEANED.append(handles),
            reopen=lambda store: store,
            capabilities={"restart"},  # type: ignore[arg-type]
        )
    )
    yield made
    unregister_scheme("counted")
    CLEANED.clear()


def test_a_registered_scheme_goes_through_every_entry_point(scheme: StoreScheme) -> None:
    """STORE-17, STORE-19: parse, check, open, the factory and the plugin's option check all find it."""
    assert parse_store_url("counted:abc") == StoreUrl("counted:abc", "counted", path="abc")
    assert check_store("counted:").scheme == "counted"
    assert isinstance(open_store("counted:"), Counted)
    assert isinstance(open_store("counted:", isolated=True), Counted)
    assert _checked_store("counted:", probe=True).text == "counted:"
    factory = store_factory("counted:")
    first, second = factory(), factory.new()
    assert isinstance(first, Counted) and isinstance(second, Counted) and first is not second
    assert factory.capabilities == {Capability.CORE, Capability.RESTART} and factory.name == "counted:"
    factory.cleanup()
    assert len(CLEANED) == 1 and len(CLEANED[0]) == 2
    factory.cleanup()  # nothing made since: cleanup is not called again
    assert len(CLEANED) == 1
    assert "counted:" in known_schemes(usage=True) and "counted" in known_schemes()


def test_registration_refuses_a_taken_name(scheme: StoreScheme) -> None:
    """STORE-17: a name is registered once; built-in schemes cannot be replaced."""
    with pytest.raises(StoreSchemeError, match="'counted' is already registered"):
        register_scheme(scheme)
    assert register_scheme(scheme, replace=True).origin == "registered in this process"
    with pytest.raises(StoreSchemeError, match="built-in schemes cannot be replaced"):
        register_scheme(StoreScheme("sqlite", "sqlite:X", open=lambda p, t: InMemoryStore()), replace=True)
    with pytest.raises(StoreSchemeError, match=r"takes a reference_runtime\.stores\.StoreScheme"):
        register_scheme("counted")  # type: ignore[arg-type]
    unregister_scheme("sqlite")  # a built-in stays
    assert get_scheme("sqlite").origin == "built-in"


def test_a_scheme_record_is_checked_when_made() -> None:
    """STORE-17: a bad name or a claimed restart without reopen is refused at construction."""
    with pytest.raises(ValueError, match="store scheme name 'Bad_Name'"):
        StoreScheme("Bad_Name", "x:", open=lambda p, t: InMemoryStore())
    with pytest.raises(ValueError, match="declares 'restart' but has no reopen"):
        StoreScheme("x", "x:", open=lambda p, t: InMemoryStore(), capabilities=frozenset({Capability.RESTART}))
    with pytest.raises(ValueError, match="'teleport' is not a valid Capability"):
        StoreScheme("x", "x:", open=lambda p, t: InMemoryStore(), capabilities={"teleport"})  # type: ignore[arg-type]


def test_unknown_schemes_list_every_known_one(scheme: StoreScheme) -> None:
    """STORE-17: the refusal quotes the URL and lists the built-in and registered schemes."""
    with pytest.raises(StoreUrlError) as info:
        parse_store_url("postgres://db/1")
    text = str(info.value)
    assert "store URL 'postgres://db/1': unknown scheme 'postgres'" in text
    for usage in ("memory:", "sqlite:PATH", "redis://HOST:PORT/DB", "kafka://HOST:PORT/TOPIC", "counted:"):
        assert usage in text
    assert ENTRY_POINT_GROUP in text


def test_a_scheme_without_isolated_stores_is_refused_by_the_test_entry_points() -> None:
    """STORE-20, STORE-21: the factory and the plugin need a fresh store per test; open_store still opens it.
    Each refusal is one message, the same from every entry point."""
    register_scheme(StoreScheme("plain", "plain:", open=lambda p, t: InMemoryStore()))
    try:
        assert isinstance(open_store("plain:"), InMemoryStore)
        refusals = []
        for enter in (lambda: store_factory("plain:"), lambda: open_store("plain:", isolated=True)):
            with pytest.raises(
                StoreSchemeError, match="cannot make isolated stores: its StoreScheme has no isolated="
            ) as info:
                enter()
            refusals.append(str(info.value))
        with pytest.raises(pytest.UsageError) as usage:
            _checked_store("plain:", probe=False)
        refusals.append(str(usage.value).removeprefix("--durable-store (ini durable_store): "))
        assert len(set(refusals)) == 1, refusals
        with pytest.raises(DurableError, match="has no reader"):
            inspect_store("plain:")
    finally:
        unregister_scheme("plain")


def test_a_parsed_url_carries_its_scheme_and_is_not_parsed_again(scheme: StoreScheme) -> None:
    """STORE-21: the parsed URL carries its scheme record; a factory given it (as the plugin does, once per
    session) does not parse it again, however many stores it makes."""
    calls: list[str] = []

    def parse(text: str) -> StoreUrl:
        calls.append(text)
        return StoreUrl(text, "counted")

    register_scheme(dataclasses.replace(scheme, parse=parse), replace=True)
    parsed = parse_store_url("counted:x")
    assert parsed.store_scheme is not None and parsed.store_scheme.name == "counted" and calls == ["counted:x"]
    factory = store_factory(parsed)
    factory(), factory()
    assert open_store(parsed) is not None and check_store(parsed) is parsed
    assert calls == ["counted:x"]
    factory.cleanup()


def test_a_parser_that_returns_another_scheme_is_refused() -> None:
    """STORE-17: a scheme's parser must return a StoreUrl of its own scheme."""
    register_scheme(
        StoreScheme("liar", "liar:", parse=lambda text: StoreUrl(text, "memory"), open=lambda p, t: InMemoryStore())
    )
    try:
        with pytest.raises(StoreSchemeError, match="the parser of scheme 'liar'"):
            parse_store_url("liar:")
    finally:
        unregister_scheme("liar")


def test_a_missing_client_package_names_what_to_install() -> None:
    """STORE-17: ``client``/``extra`` give the install line before anything is opened."""
    register_scheme(
        StoreScheme("needy", "needy:", open=lambda p, t: InMemoryStore(), client="no_such_client_xyz", extra="needy")
    )
    try:
        with pytest.raises(StoreError, match="needs the no_such_client_xyz package: pip install needy"):
            check_store("needy:")
        with pytest.raises(StoreError, match="pip install needy"):
            open_store("needy:")
    finally:
        unregister_scheme("needy")


def _entry_point(site: Path, name: str, value: str, module: str, source: str) -> None:
    (site / f"{module}.py").write_text(textwrap.dedent(source))
    info = site / f"{module}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\n{name} = {value}\n")


def test_entry_points_load_on_first_use_and_are_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """STORE-18: an entry point is imported only when its scheme is first looked up; one giving the wrong
    object or a scheme of another name is one StoreSchemeError naming it and its distribution."""
    source = """
        from reference_runtime.stores import InMemoryStore, StoreScheme
        LOADED = True
        def make():
            return StoreScheme("lazyep", "lazyep:", open=lambda p, t: InMemoryStore())
        NOT_A_SCHEME = 42
        OTHER_NAME = StoreScheme("another", "another:", open=lambda p, t: InMemoryStore())
    """
    _entry_point(tmp_path, "lazyep", "ep_lazy:make", "ep_lazy", source)
    _entry_point(tmp_path, "wrongtype", "ep_wrong:NOT_A_SCHEME", "ep_wrong", source)
    _entry_point(tmp_path, "wrongname", "ep_name:OTHER_NAME", "ep_name", source)
    monkeypatch.syspath_prepend(str(tmp_path))
    import sys

    assert "lazyep" in known_schemes() and "ep_lazy" not in sys.modules
    try:
        scheme = get_scheme("lazyep")
        assert scheme.origin == "entry point lazyep = ep_lazy:make (distribution ep_lazy 1.0)"
        assert isinstance(open_store("lazyep:"), InMemoryStore)
        with pytest.raises(StoreSchemeError, match=r"gave a int, not a reference_runtime.stores.StoreScheme"):
            parse_store_url("wrongtype:")
        with pytest.raises(StoreSchemeError, match=r"gave the scheme 'another'.*pip uninstall ep_name"):
            parse_store_url("wrongname:")
    finally:
        unregister_scheme("lazyep")
        for module in ("ep_lazy", "ep_wrong", "ep_name"):
            sys.modules.pop(module, None)


def test_capabilities_are_one_enum_and_strings_keep_working() -> None:
    """STORE-20, CONF-1: Capability is the one list; strings are accepted and compare equal."""
    assert CAPABILITIES == ("core", "restart", "concurrent_writers", "mid_write_kill")
    factory = StoreFactory(InMemoryStore, reopen=lambda s: s, capabilities={"restart", Capability.CONCURRENT_WRITERS})
    assert "restart" in factory.capabilities and Capability.CORE in factory.capabilities
    assert factory.detected() == {"core", "restart", "concurrent_writers"}
    assert ",".join(sorted(factory.capabilities)) == "concurrent_writers,core,restart"
    with pytest.raises(ValueError, match="unknown capabilities \\['teleport'\\]"):
        StoreFactory(InMemoryStore, capabilities={"teleport"})


def test_the_built_in_schemes_declare_what_certify_used_to_assume() -> None:
    """STORE-17: capabilities, client and server flags of the built-in records."""
    caps = {name: get_scheme(name).capabilities for name in ("memory", "sqlite", "redis", "kafka")}
    base = {"core", "restart", "concurrent_writers"}
    kill = base | {"mid_write_kill"}
    assert caps == {"memory": base, "sqlite": kill, "redis": kill, "kafka": base}
    assert [(get_scheme(n).client, get_scheme(n).server) for n in ("memory", "sqlite", "redis", "kafka")] == [
        (None, False),
        (None, False),
        ("redis", True),
        ("confluent_kafka", True),
    ]


def test_certify_keeps_workers_for_every_store_but_a_built_in_one_in_process(
    scheme: StoreScheme, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """STORE-19, CONF-7: `durable certify -n` asks the parsed URL's scheme whether the store runs in this process."""
    from conformance import RunnerFactory
    from conformance.certification import Backend, _workers

    def backend(url: str) -> Backend:
        return Backend._of_url(parse_store_url(url), tmp_path)

    assert _workers("2", backend(f"sqlite:{tmp_path / 'x.db'}")) is None and "-n 2 ignored" in capsys.readouterr().out
    assert _workers("2", backend("memory:")) is None
    assert _workers("2", backend("redis://h/0")) == "2"
    assert _workers("2", backend("counted:")) == "2"  # a third-party scheme may be remote without a server flag
    runner = Backend("runner", RunnerFactory.reference(), "call:conformance:RunnerFactory.reference")
    assert _workers("2", runner) == "2"
