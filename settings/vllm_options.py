"""`AGENTKEEL_<TIER>_VLLM_<OPTION>` strings made into `VllmSettings`, typed by its fields.

Apart from `settings.model_tiers` so that the settings model can check every option while it
is read (a misspelt or mistyped lever stops the process at start, named), without importing
the model tiers, which import the settings.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import types
import typing
from collections.abc import Mapping
from typing import Any

from agentkeel.schemas.vllm_settings import SpeculativeSettings, VllmSettings
from agentkeel.settings.errors import SettingsError

VLLM_OPTIONS = frozenset(f.name for f in dataclasses.fields(VllmSettings)) - {"model"}
"""The `<OPTION>`s of `AGENTKEEL_<TIER>_VLLM_<OPTION>` (lower case): `VllmSettings` fields."""


def vllm_settings(model: str, options: Mapping[str, str], prefix: str) -> VllmSettings:
    """`VllmSettings` from `<PREFIX><FIELD>=value` strings, typed by the dataclass's fields.

    Special forms: `SPECULATIVE` is `off`, `ngram`, `ngram:<tokens>` or
    `draft_model:<path>`; `ROPE_SCALING` and `ENGINE_OVERRIDES` are JSON objects.
    """
    hints = typing.get_type_hints(VllmSettings)
    values: dict[str, Any] = {}
    for key, raw in options.items():
        var = prefix + key.upper()
        if key not in VLLM_OPTIONS:
            close = difflib.get_close_matches(key, VLLM_OPTIONS, n=1)
            hint = (
                f"did you mean {prefix}{close[0].upper()}?"
                if close
                else "known: " + (", ".join(sorted(VLLM_OPTIONS)))
            )
            raise SettingsError(f"{var} is not a vLLM option ({hint})")
        if key == "speculative":
            values[key] = _speculative(raw, var)
        elif key in ("rope_scaling", "engine_overrides"):
            values[key] = _json_object(raw, var)
        else:
            values[key] = _scalar(hints[key], raw, var)
    return VllmSettings(model=model, **values)


def _speculative(raw: str, var: str) -> SpeculativeSettings | None:
    method, _, arg = raw.partition(":")
    if method in ("off", "none", ""):
        return None
    if method == "ngram":
        if not arg:
            return SpeculativeSettings()
        if not arg.isdigit() or int(arg) < 1:
            raise SettingsError(f"{var}: ngram:<tokens> needs a positive integer, got {raw!r}")
        return SpeculativeSettings(num_speculative_tokens=int(arg))
    if method == "draft_model" and arg:
        return SpeculativeSettings(method="draft_model", draft_model=arg)
    raise SettingsError(f"{var} must be off, ngram, ngram:<tokens> or draft_model:<path>")


def _json_object(raw: str, var: str) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise SettingsError(f"{var} must be a JSON object: {exc}") from None
    if not isinstance(value, dict):
        raise SettingsError(f"{var} must be a JSON object, got {raw!r}")
    return value


def _scalar(hint: Any, raw: str, var: str) -> Any:
    """Coerce by the field's type: bool, int, float or str (optional or not)."""
    args = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
    base = next((a for a in args if a is not type(None)), str)
    if raw.lower() in ("none", "null") and type(None) in args:
        return None
    if base is bool:
        if raw.lower() in ("1", "true", "yes", "on"):
            return True
        if raw.lower() in ("0", "false", "no", "off"):
            return False
        raise SettingsError(f"{var} must be true or false, got {raw!r}")
    if base in (int, float):
        try:
            return base(raw)
        except ValueError:
            raise SettingsError(f"{var} must be a {base.__name__}, got {raw!r}") from None
    return raw
