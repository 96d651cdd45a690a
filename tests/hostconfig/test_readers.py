"""The span readers: JSONC read as JSON.parse reads it (plus comments and trailing commas) with the offsets of
every value, and TOML's key/value spans where tomllib puts the values."""

from __future__ import annotations

import json
import tomllib

import pytest
from examples import CODEX
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpwatch.hostconfig import jsonc, tomlspans

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(JSON_VALUES, st.sampled_from([None, 0, 2, "\t"]))
def test_any_json_reads_as_json_parse_reads_it_and_every_span_is_its_value(value, indent):
    text = json.dumps(value, indent=indent)
    root = jsonc.parse(text)
    assert root.value == json.loads(text)
    assert json.loads(text[root.start : root.end]) == root.value

    def walk(node: jsonc.Node) -> None:
        assert json.loads(text[node.start : node.end]) == node.value
        for child in getattr(node, "items", []) or [m.node for m in getattr(node, "members", [])]:
            walk(child)

    walk(root)


def test_comments_and_trailing_commas_are_read_and_strings_keep_comment_markers():
    text = '// top\n{ /* a */ "a": "//not a comment", "b": [1, 2,], // end\n "c": {"d": "/*x*/",},\n}\n'
    assert jsonc.parse(text).value == {"a": "//not a comment", "b": [1, 2], "c": {"d": "/*x*/"}}


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('{"a": 1,, "b": 2}', "line 1 column 9"),
        ('{"a": 1\n"b": 2}', "line 2 column 1"),
        ('{"a": /* open', "line 1 column 7"),
        ('{"a": "x}', "line 1 column 7"),
        ("{'a': 1}", "line 1 column 2"),
        ('{"a": 1} x', "line 1 column 10"),
        ("", "line 1 column 1"),
    ],
)
def test_text_that_is_not_jsonc_names_the_line_and_column(text, where):
    with pytest.raises(jsonc.JsoncError, match=where):
        jsonc.parse(text)


def test_nesting_deeper_than_the_limit_is_refused_not_a_recursion_error():
    with pytest.raises(jsonc.JsoncError, match="nested deeper"):
        jsonc.parse("[" * 100_000 + "]" * 100_000)


def test_toml_spans_hold_the_values_tomllib_reads():
    layout = tomlspans.scan(CODEX)
    doc = tomllib.loads(CODEX)
    assert [h.path for h in layout.headers] == [
        ("mcp_servers", "docs"),
        ("mcp_servers", "docs", "env"),
        ("mcp_servers", "figma"),
        ("profiles", "fast"),
    ]
    for kv in layout.values:
        table = doc
        for part in (*kv.table, *kv.key[:-1]):
            table = table[part]
        assert tomllib.loads(f"x = {CODEX[kv.value_start : kv.value_end]}")["x"] == table[kv.key[-1]]


def test_toml_spans_follow_multi_line_arrays_strings_and_quoted_keys():
    text = 'a = [\n  "x", # c\n  "]",\n]\nb = """\n[not.a.header]\n"""\n["q.uo" . ted]\n"k.1" = \'v\'\n'
    layout = tomlspans.scan(text)
    assert [h.path for h in layout.headers] == [("q.uo", "ted")]
    assert [(kv.table, kv.key) for kv in layout.values] == [((), ("a",)), ((), ("b",)), (("q.uo", "ted"), ("k.1",))]
    a = layout.values[0]
    assert tomllib.loads("x = " + text[a.value_start : a.value_end])["x"] == ["x", "]"]
