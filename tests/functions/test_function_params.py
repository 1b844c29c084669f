from __future__ import annotations

from typing import Any

import pytest

from kbagent.errors import InvalidInput
from kbagent.functions.params import ParamSpec, convert, make_spec, merge_params, parse_spec


@pytest.mark.parametrize(
    ("ptype", "incoming", "expected"),
    [
        ("string", "abc", "abc"),
        ("string", 12, "12"),
        ("int", 42, 42),
        ("int", " 42 ", 42),
        ("int", 3.0, 3),
        ("float", 2, 2.0),
        ("float", "2.5", 2.5),
        ("dict", {"a": 1}, {"a": 1}),
        ("dict", '{"a": [1]}', {"a": [1]}),
        ("array", [1, "二"], [1, "二"]),
        ("array", "[1, 2]", [1, 2]),
    ],
)
def test_values_are_converted_to_the_declared_type(ptype: Any, incoming: Any, expected: Any) -> None:
    converted = convert("x", ptype, incoming)
    assert converted == expected
    assert type(converted) is type(expected)


@pytest.mark.parametrize(
    ("ptype", "incoming", "shown"),
    [
        ("int", "forty", "got string 'forty'"),
        ("int", 3.5, "got float 3.5"),
        ("int", True, "got boolean True"),
        ("float", "1,5", "got string '1,5'"),
        ("string", {"a": 1}, "got dict"),
        ("dict", "[1]", "got string '[1]'"),
        ("dict", [1], "got array"),
        ("array", {"a": 1}, "got dict"),
        ("array", "not json", "got string"),
    ],
)
def test_a_wrong_type_names_the_parameter_and_expected_type(ptype: Any, incoming: Any, shown: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        convert("amount", ptype, incoming)
    assert caught.value.field == "params.amount"
    assert f"expected {ptype}, {shown}" in caught.value.message


def test_call_values_win_over_init_values_which_win_over_defaults() -> None:
    specs = [
        make_spec("a", "int", default=1),
        make_spec("b", "int", default=2),
        make_spec("c", "int", default=3),
    ]
    merged = merge_params(specs, init_params={"b": 20, "c": 30}, call_params={"c": "300"})
    assert merged == {"a": 1, "b": 20, "c": 300}


def test_missing_required_and_undeclared_parameters_are_refused() -> None:
    specs = [make_spec("q", "string"), make_spec("n", "int", required=False)]
    with pytest.raises(InvalidInput, match=r"params\.q: required parameter of type string is missing"):
        merge_params(specs, {}, {"n": 1})
    with pytest.raises(InvalidInput, match=r"params\.zzz: not a declared parameter"):
        merge_params(specs, {}, {"q": "x", "zzz": 1})
    assert merge_params(specs, {}, {"q": "x"}) == {"q": "x"}  # optional without default: simply absent


def test_without_declarations_values_pass_through() -> None:
    assert merge_params([], {"k": "init"}, {"x": [1], "k": "call"}) == {"k": "call", "x": [1]}


def test_cli_parameter_syntax() -> None:
    assert parse_spec("city:string") == ParamSpec("city", "string", True, None)
    assert parse_spec("n:int:optional=5") == ParamSpec("n", "int", False, 5)
    assert parse_spec('tags:array=["a"]') == ParamSpec("tags", "array", True, ["a"])
    assert parse_spec("mode:string:optional=fast").default == "fast"
    with pytest.raises(InvalidInput, match="unknown type 'integer'"):
        parse_spec("n:integer")
    with pytest.raises(InvalidInput, match=r"params\.n: expected int, got string 'many'"):
        parse_spec("n:int=many")
    with pytest.raises(InvalidInput, match="'required' or 'optional'"):
        parse_spec("n:int:maybe")
    with pytest.raises(InvalidInput, match="not a valid parameter name"):
        parse_spec("1n:int")
