"""Stored Python functions: insert or replace, find by owner and name, list what a user may see."""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from kbagent.errors import Conflict
from kbagent.storage.tables import PythonFunction, utcnow


def save_function(
    session: Session,
    *,
    owner: str,
    name: str,
    description: str,
    code: str,
    params: list[dict[str, Any]],
    init_params: dict[str, Any],
    public: bool,
    replace: bool = False,
) -> PythonFunction:
    """Insert a function; with ``replace`` an existing one of the same owner and name is overwritten in place
    (its id and created_at are kept). ``Conflict`` when the name is taken and ``replace`` is false."""
    row = function_by_name(session, owner, name)
    if row is not None and not replace:
        raise Conflict(f"function {name!r} already exists for owner {owner!r}; use --replace to overwrite it")
    if row is None:
        row = PythonFunction(owner=owner, name=name)
        session.add(row)
    row.description = description
    row.code = code
    row.params = params
    row.init_params = init_params
    row.public = public
    row.updated_at = utcnow()
    try:
        session.flush()
    except IntegrityError as exc:  # another process saved the same name between the check and the insert
        raise Conflict(f"function {name!r} already exists for owner {owner!r}") from exc
    return row


def function_by_name(session: Session, owner: str, name: str) -> PythonFunction | None:
    return session.scalars(
        select(PythonFunction).where(PythonFunction.owner == owner, PythonFunction.name == name)
    ).one_or_none()


def visible_function(session: Session, viewer: str, name: str, owner: str | None = None) -> PythonFunction | None:
    """The function ``name`` as ``viewer`` may reach it: their own first, else a public one.

    With ``owner`` given, only that owner's function, and only if it is the viewer's or public. Several public
    functions of that name from other owners: the oldest wins (the caller can name the owner).
    """
    query = select(PythonFunction).where(PythonFunction.name == name)
    if owner is not None:
        query = query.where(PythonFunction.owner == owner)
    query = query.where(or_(PythonFunction.owner == viewer, PythonFunction.public.is_(True)))
    rows = session.scalars(query.order_by(PythonFunction.id)).all()
    own = [r for r in rows if r.owner == viewer]
    candidates = own or list(rows)
    return candidates[0] if candidates else None


def visible_functions(session: Session, viewer: str, *, include_public: bool = True) -> list[PythonFunction]:
    """The viewer's own functions and, unless told otherwise, the public ones of other owners."""
    condition = PythonFunction.owner == viewer
    if include_public:
        condition = or_(condition, PythonFunction.public.is_(True))
    query = select(PythonFunction).where(condition).order_by(PythonFunction.name, PythonFunction.owner)
    return list(session.scalars(query).all())


def delete_function(session: Session, owner: str, name: str) -> bool:
    result = session.execute(delete(PythonFunction).where(PythonFunction.owner == owner, PythonFunction.name == name))
    return bool(getattr(result, "rowcount", 0))
