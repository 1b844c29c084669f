from __future__ import annotations

import pytest

from kbagent.errors import InvalidInput
from kbagent.functions.code import analyse
from kbagent.functions.library import define
from kbagent.functions.params import make_spec


def test_the_last_top_level_function_is_the_entry_point() -> None:
    code = (
        "import math\n\ndef helper(x):\n    return x\n\n"
        "class K:\n    def method(self):\n        pass\n\n"
        "def main(x):\n    return helper(x)\n"
    )
    info = analyse(code)
    assert info.functions == ("helper", "main")
    assert info.default_entrypoint == "main"
    assert define(code).entrypoint == "main"
    assert define(code, entrypoint="helper").entrypoint == "helper"


def test_code_that_does_not_parse_is_refused_with_line_and_reason() -> None:
    with pytest.raises(InvalidInput) as caught:
        analyse("def ok():\n    return 1\n\ndef broken(:\n    pass\n")
    assert caught.value.field == "code"
    assert caught.value.message.startswith("code: line 4: ")
    assert "syntax" in caught.value.message.lower()


def test_code_without_a_function_is_refused() -> None:
    with pytest.raises(InvalidInput, match=r"code: line 2: no top-level function"):
        analyse("x = 1\nprint(x)\n")


def test_an_unknown_entry_point_is_refused() -> None:
    with pytest.raises(InvalidInput, match=r"entrypoint: 'nope' is not a top-level function \(found: a, b\)"):
        analyse("def a():\n    pass\n\ndef b():\n    pass\n", entrypoint="nope")


def test_a_declared_parameter_the_function_cannot_receive_is_refused() -> None:
    with pytest.raises(InvalidInput, match=r"params\.city: line 1: main\(\) has no parameter 'city'"):
        analyse("def main(town):\n    return town\n", [make_spec("city", "string")])
    analyse("def main(**kw):\n    return kw\n", [make_spec("city", "string")])  # **kwargs receives anything


def test_init_values_are_checked_against_declarations() -> None:
    specs = [make_spec("n", "int")]
    assert define("def f(n):\n    return n\n", specs, {"n": "7"}).init_params == {"n": 7}
    with pytest.raises(InvalidInput, match=r"params\.n: expected int"):
        define("def f(n):\n    return n\n", specs, {"n": "seven"})
    with pytest.raises(InvalidInput, match=r"init_params\.k: not a declared parameter"):
        define("def f(n):\n    return n\n", specs, {"k": 1})
