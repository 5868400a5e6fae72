"""``jackson_string`` skips its per-character loop when nothing in the text needs escaping (the flink-agents
format writes function ids and digests on every durable call, benchmark P10); these tests hold the shortcut to
the loop's output (SER-1)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference_runtime.serde import jackson


@given(st.text(alphabet=st.characters(exclude_categories=())))
def test_any_text_is_written_as_the_escaping_loop_writes_it(text: str) -> None:
    """Whatever the text (quotes, backslashes, control characters, lone surrogates, characters outside the
    BMP), the literal is the loop's."""
    assert jackson.jackson_string(text) == jackson._escape(text)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "fn:tools.search",
        "é€\uffff\x7f ",
        'a"b',
        "a\\b",
        "\x00",
        "\x1f",
        "\ud800",
        "\udfff",
        "\U00010000",
        "\U0010ffff",
    ],
)
def test_the_edges_of_what_needs_escaping(text: str) -> None:
    assert jackson.jackson_string(text) == jackson._escape(text)
    # Only the characters Jackson escapes take the loop.
    assert (jackson._ESCAPED.search(text) is None) == (jackson._escape(text) == f'"{text}"')
