"""The stored library on SQLite and PostgreSQL (``db`` fixture); no sandbox needed."""

from __future__ import annotations

import pytest

from kbagent.errors import Conflict, InvalidInput, NotFound
from kbagent.functions import FunctionLibrary, make_spec
from kbagent.storage import Database

CODE = "def helper(x):\n    return x\n\ndef weather(city, api_key, days=1):\n    return {'city': city, 'days': days}\n"


def _specs() -> list:
    return [make_spec("city", "string"), make_spec("api_key", "string"), make_spec("days", "int", default=1)]


def test_save_list_show(db: Database) -> None:
    lib = FunctionLibrary(db)
    saved = lib.add("weather", CODE, params=_specs(), init_params={"api_key": "sk-alice"}, description="forecast")
    assert saved.entrypoint == "weather"
    assert saved.owner == "local"
    shown = lib.get("weather")
    assert shown.code == CODE
    assert [p.name for p in shown.params] == ["city", "api_key", "days"]
    assert shown.params[2].default == 1
    assert shown.init_params == {"api_key": "sk-alice"}
    assert shown.description == "forecast"
    assert [f.name for f in lib.list()] == ["weather"]
    with pytest.raises(NotFound, match="no function 'rain'"):
        lib.get("rain")


def test_public_listing_never_returns_another_users_init_values(db: Database) -> None:
    lib = FunctionLibrary(db)
    lib.add("weather", CODE, params=_specs(), init_params={"api_key": "sk-alice"}, public=True, owner="alice")
    lib.add("private", CODE, params=_specs(), init_params={"api_key": "sk-alice-2"}, owner="alice")
    lib.add("mine", CODE, params=_specs(), init_params={"api_key": "sk-bob"}, owner="bob")

    bob_sees = {f.name: f for f in lib.list(viewer="bob")}
    assert set(bob_sees) == {"weather", "mine"}  # alice's private function is not listed
    assert bob_sees["weather"].init_params is None
    assert bob_sees["weather"].init_param_count == 1
    assert bob_sees["mine"].init_params == {"api_key": "sk-bob"}
    assert "sk-alice" not in repr([f.to_json() for f in bob_sees.values()])
    assert lib.get("weather", viewer="bob").init_params is None
    with pytest.raises(NotFound):
        lib.get("private", viewer="bob")
    assert lib.get("weather", viewer="alice").init_params == {"api_key": "sk-alice"}
    # Running it still uses the owner's stored values, without handing them to the viewer.
    assert lib.definition("weather", viewer="bob").init_params == {"api_key": "sk-alice"}


def test_same_name_is_a_conflict_unless_replaced(db: Database) -> None:
    lib = FunctionLibrary(db)
    first = lib.add("f", "def f():\n    return 1\n")
    with pytest.raises(Conflict, match="already exists"):
        lib.add("f", "def f():\n    return 2\n")
    assert lib.get("f").code == "def f():\n    return 1\n"  # the refused save changed nothing
    again = lib.add("f", "def g():\n    return 2\n", replace=True)
    assert (again.id, again.entrypoint) == (first.id, "g")
    lib.add("f", "def f():\n    return 3\n", owner="other")  # names are per owner
    lib.remove("f")
    with pytest.raises(NotFound):
        lib.get("f")


def test_bad_code_is_refused_and_nothing_is_stored(db: Database) -> None:
    lib = FunctionLibrary(db)
    with pytest.raises(InvalidInput, match=r"code: line 2: "):
        lib.add("broken", "def f():\nreturn 1\n")
    with pytest.raises(InvalidInput, match=r"code: line 1: no top-level function"):
        lib.add("empty", "x = 1\n")
    with pytest.raises(InvalidInput, match=r"params\.days: expected int, got string 'three'"):
        lib.add("w", CODE, params=_specs(), init_params={"days": "three"})
    assert lib.list() == []


def test_merge_precedence_through_the_library(db: Database) -> None:
    from kbagent.functions.params import merge_params

    lib = FunctionLibrary(db)
    lib.add("weather", CODE, params=_specs(), init_params={"api_key": "stored", "days": 2})
    definition = lib.definition("weather")
    merged = merge_params(definition.params, definition.init_params or {}, {"city": "杭州", "days": "5"})
    assert merged == {"city": "杭州", "api_key": "stored", "days": 5}


def test_migrations_rerun_and_keep_stored_functions(db: Database) -> None:
    from kbagent.storage import open_database

    FunctionLibrary(db).add("kept", "def f():\n    return 1\n", init_params={"k": "v"}, public=True)
    again = open_database(db.url.render_as_string(hide_password=False))  # start-up runs the migrations again
    try:
        kept = FunctionLibrary(again).get("kept")
        assert (kept.code, kept.init_params, kept.public) == ("def f():\n    return 1\n", {"k": "v"}, True)
    finally:
        again.close()
