"""Parameter declarations of a stored function, conversion of incoming values, and the init/call merge.

Types are ``string``, ``int``, ``float``, ``dict`` and ``array``. Values arriving from JSON, a form or the
command line are converted where the meaning is unambiguous ("42" to 42 for ``int``, '{"a": 1}' to a dict for
``dict``); anything else is refused with an error naming the parameter and the expected type.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from kbagent.errors import InvalidInput

ParamType = Literal["string", "int", "float", "dict", "array"]
PARAM_TYPES: tuple[str, ...] = get_args(ParamType)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


@dataclass(frozen=True)
class ParamSpec:
    """One declared parameter. ``default`` None means the parameter has no default."""

    name: str
    type: ParamType
    required: bool = True
    default: Any = None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "type": self.type, "required": self.required, "default": self.default}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ParamSpec:
        return make_spec(
            str(data.get("name", "")),
            str(data.get("type", "")),
            required=bool(data.get("required", True)),
            default=data.get("default"),
        )


def make_spec(name: str, type_name: str, *, required: bool = True, default: Any = None) -> ParamSpec:
    """Validate a declaration; the default, when given, must already be a value of the declared type."""
    if not _NAME.match(name):
        raise InvalidInput("params", f"{name!r} is not a valid parameter name (a Python identifier, at most 64 chars)")
    if type_name not in PARAM_TYPES:
        raise InvalidInput(f"params.{name}", f"unknown type {type_name!r}; expected one of {', '.join(PARAM_TYPES)}")
    ptype: ParamType = type_name  # type: ignore[assignment]
    if default is not None:
        default = convert(name, ptype, default)
    return ParamSpec(name=name, type=ptype, required=required, default=default)


def parse_spec(text: str) -> ParamSpec:
    """Parse the CLI form ``name:type[:required|optional][=default]``; the default is JSON or a bare string."""
    head, has_default, raw_default = text.partition("=")
    parts = head.split(":")
    if len(parts) not in (2, 3):
        raise InvalidInput("--param", f"{text!r}: expected name:type[:required|optional][=default]")
    required = True
    if len(parts) == 3:
        if parts[2] not in ("required", "optional"):
            raise InvalidInput("--param", f"{text!r}: the third part must be 'required' or 'optional'")
        required = parts[2] == "required"
    default: Any = None
    if has_default:
        try:
            default = json.loads(raw_default)
        except json.JSONDecodeError:
            default = raw_default
    return make_spec(parts[0], parts[1], required=required, default=default)


def _kind(value: Any) -> str:
    return {bool: "boolean", str: "string", int: "int", float: "float", dict: "dict", list: "array"}.get(
        type(value), type(value).__name__
    )


def convert(name: str, ptype: ParamType, value: Any) -> Any:
    """Convert ``value`` to ``ptype`` or raise InvalidInput naming ``params.<name>`` and the expected type."""

    def wrong() -> InvalidInput:
        shown = repr(value)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        return InvalidInput(f"params.{name}", f"expected {ptype}, got {_kind(value)} {shown}")

    if ptype == "string":
        if isinstance(value, str):
            return value
        if isinstance(value, int | float) and not isinstance(value, bool):
            return str(value)
        raise wrong()
    if ptype == "int":
        if isinstance(value, bool):
            raise wrong()
        if isinstance(value, int):
            return value
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            try:
                return int(value.strip())
            except ValueError:
                raise wrong() from None
        raise wrong()
    if ptype == "float":
        if isinstance(value, bool):
            raise wrong()
        if isinstance(value, int | float):
            return float(value)
        if isinstance(value, str):
            try:
                return float(value.strip())
            except ValueError:
                raise wrong() from None
        raise wrong()
    container: type = dict if ptype == "dict" else list
    if isinstance(value, container):
        return value
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            raise wrong() from None
        if isinstance(parsed, container):
            return parsed
    raise wrong()


def merge_params(
    specs: Sequence[ParamSpec], init_params: Mapping[str, Any], call_params: Mapping[str, Any]
) -> dict[str, Any]:
    """The arguments the function is called with: declared defaults < stored init values < call values.

    With declarations, every value is converted to its declared type, a missing required parameter is an error
    and an undeclared one is refused (the function would fail on it anyway). Without declarations (a debug run),
    the merged values pass through unchanged.
    """
    if not specs:
        return {**init_params, **call_params}
    # With declarations, null means "not given": the init value or default applies.
    merged = {**init_params, **{k: v for k, v in call_params.items() if v is not None}}
    declared = {spec.name for spec in specs}
    unknown = sorted(set(merged) - declared)
    if unknown:
        raise InvalidInput(
            f"params.{unknown[0]}",
            f"not a declared parameter of this function (declared: {', '.join(sorted(declared))})",
        )
    result: dict[str, Any] = {}
    for spec in specs:
        if merged.get(spec.name) is not None:
            result[spec.name] = convert(spec.name, spec.type, merged[spec.name])
        elif spec.default is not None:
            result[spec.name] = spec.default
        elif spec.required:
            raise InvalidInput(f"params.{spec.name}", f"required parameter of type {spec.type} is missing")
    return result
