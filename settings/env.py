"""Reading a settings model from environment variables, and saying in one line what is wrong.

A field is read from `<PREFIX><FIELD>` (upper case); a field that is a model of its own (a
model tier) from `<PREFIX><FIELD>_<ITS FIELD>`; a field that is a mapping of strings (an
option group) from every `<PREFIX><FIELD>_<OPTION>`. The same walk lists every variable that
is a setting, so that one that is not (a misspelling) is refused with the nearest name, and
so that `settings.doc` documents exactly what is read.

Generic over the model: it knows nothing of the fields of `settings.model`.
"""

from __future__ import annotations

import difflib
import typing
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import NoneType, UnionType
from typing import Any, Literal, TypeVar

import annotated_types
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import PydanticCustomError

from agentkeel.settings.errors import SettingsError

M = TypeVar("M", bound=BaseModel)

SETTING_ERROR = "agentkeel_setting"
"""The error type of a check whose message is already the whole line (it names its variable)."""


def setting_error(message: str) -> PydanticCustomError:
    """An error a validator raises when it can name the variable itself (cross-field checks)."""
    return PydanticCustomError(SETTING_ERROR, "{message}", {"message": message})


@dataclass(frozen=True)
class Accepts:
    """Annotation metadata: what a field accepts, in words, where its type does not say it
    (a duration, an address). Used in error messages and in the settings reference."""

    text: str


@dataclass(frozen=True)
class Variable:
    """One variable a settings model reads, or (`group`) the prefix of an option group."""

    name: str
    field: FieldInfo
    path: tuple[str, ...]
    """The field's path in the model: `("semantic_threshold",)`, `("light", "url")`."""
    group: bool = False


def variables(model: type[BaseModel], prefix: str) -> list[Variable]:
    """Every variable `model` reads under `prefix`, in field order."""
    found: list[Variable] = []
    for name, info in model.model_fields.items():
        var = prefix + name.upper()
        nested = nested_model(info)
        if nested is not None:
            found += [
                Variable(v.name, v.field, (name, *v.path), v.group)
                for v in variables(nested, var + "_")
            ]
        elif typing.get_origin(info.annotation) in (Mapping, dict):
            found.append(Variable(var + "_", info, (name,), group=True))
        else:
            found.append(Variable(var, info, (name,)))
    return found


def nested_model(info: FieldInfo) -> type[BaseModel] | None:
    """The model a field holds, when it is read as settings of its own."""
    annotation = info.annotation
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def read_model(
    model: type[M],
    environ: Mapping[str, str],
    prefix: str,
    *,
    known: Collection[str] = (),
    prefixes: Collection[str] = (),
) -> M:
    """`model` from `environ`: every variable under `prefix` must be one it reads, one of
    `known`, or under one of `prefixes`; any problem is a one-line `SettingsError`."""
    check_variables(model, environ, prefix, known=known, prefixes=prefixes)
    try:
        return model.model_validate(env_values(model, environ, prefix))
    except ValidationError as exc:
        raise SettingsError(one_line(model, exc, prefix)) from None


def check_variables(
    model: type[BaseModel],
    environ: Mapping[str, str],
    prefix: str,
    *,
    known: Collection[str] = (),
    prefixes: Collection[str] = (),
) -> None:
    """Refuse the first variable under `prefix` that nothing reads, naming the nearest one."""
    read = variables(model, prefix)
    names = {v.name for v in read if not v.group} | set(known)
    groups = tuple(v.name for v in read if v.group) + tuple(prefixes)
    for var in sorted(environ):
        if var.startswith(prefix) and var not in names and not var.startswith(groups):
            close = difflib.get_close_matches(var, sorted(names), n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise SettingsError(f"{var} is not a setting{hint}")


def env_values(model: type[BaseModel], environ: Mapping[str, str], prefix: str) -> dict[str, Any]:
    """The raw strings for `model_validate`, nested as the model is. An empty variable counts
    as unset (the default), as a compose file's `${X-}` leaves it."""
    values: dict[str, Any] = {}
    for v in variables(model, prefix):
        value: object
        if v.group:
            value = {
                k[len(v.name) :].lower(): raw for k, raw in environ.items() if k.startswith(v.name)
            }
        elif environ.get(v.name):
            value = environ[v.name]
        else:
            continue
        target = values
        for part in v.path[:-1]:
            target = target.setdefault(part, {})
        target[v.path[-1]] = value
    return values


def env_of(settings: BaseModel, prefix: str) -> dict[str, str | None]:
    """The variables that read back as `settings` (None: unset), for a child process."""
    env: dict[str, str | None] = {}
    for v in variables(type(settings), prefix):
        value: Any = settings
        for part in v.path:
            value = getattr(value, part)
        if v.group:
            env.update({v.name + key.upper(): str(raw) for key, raw in value.items()})
        else:
            env[v.name] = None if value is None else str(value)
    return env


def one_line(model: type[BaseModel], exc: ValidationError, prefix: str) -> str:
    """The first error of `exc` as `<VARIABLE> must be <what it accepts>, got '<value>'`."""
    error = exc.errors(include_url=False)[0]
    ctx = error.get("ctx") or {}
    if error["type"] == SETTING_ERROR:
        return str(ctx["message"])
    path = tuple(str(part) for part in error["loc"])
    var = prefix + "_".join(path).upper()
    found = {v.path: v for v in variables(model, prefix)}.get(path)
    if found is None:
        return f"{var}: {error['msg']}"
    got = error.get("input")
    return f"{var} must be {accepts(found.field)}, got {str(got)!r}"


def choices(info: FieldInfo) -> tuple[str, ...]:
    """The values of a `Literal` field (a mode), without the empty one; () for other fields."""
    if typing.get_origin(info.annotation) is not Literal:
        return ()
    return tuple(str(c) for c in typing.get_args(info.annotation) if c != "")


def accepts(info: FieldInfo) -> str:
    """What a field accepts, in words: `on or off`, `a number from 0 to 1`, ..."""
    for meta in info.metadata:
        if isinstance(meta, Accepts):
            return meta.text
    modes = choices(info)
    if modes:
        return " or ".join(modes) if len(modes) == 2 else "one of " + ", ".join(modes)
    base = _base_type(info.annotation)
    if base is int or base is float:
        return _number(info, "an integer" if base is int else "a number")
    if base is Path:
        return "a path"
    return "text"


def _number(info: FieldInfo, noun: str) -> str:
    bounds: dict[str, Any] = {}
    for meta in info.metadata:
        for kind in ("ge", "gt", "le", "lt"):
            if hasattr(meta, kind) and isinstance(meta, annotated_types.BaseMetadata):
                bounds[kind] = getattr(meta, kind)
    if "ge" in bounds and "le" in bounds:
        return f"{noun} from {bounds['ge']} to {bounds['le']}"
    if "ge" in bounds:
        return f"{noun} of {bounds['ge']} or more"
    if "gt" in bounds:
        return f"{noun} above {bounds['gt']}"
    return noun


def _base_type(annotation: Any) -> Any:
    """`int` of `int | None`; the annotation itself otherwise."""
    if isinstance(annotation, UnionType) or typing.get_origin(annotation) is typing.Union:
        args = [a for a in typing.get_args(annotation) if a is not NoneType]
        return args[0] if len(args) == 1 else annotation
    return annotation
