"""A served domain's own settings among `AGENTKEEL_*` variables: known by name, so a misspelt
one is refused like a misspelt agentkeel setting, in the domain's terms."""

from __future__ import annotations

import difflib
from collections.abc import Collection, Mapping

from agentkeel.sdk.domain import DomainError
from agentkeel.sdk.loading import load_domain
from agentkeel.settings.errors import SettingsError

__all__ = ["check_domain_variables"]


def check_domain_variables(
    env: Mapping[str, str], env_prefix: str, allowed_prefixes: Collection[str] = ()
) -> tuple[str, ...]:
    """The variables of the domain `env` serves (its settings model's fields, as
    `AGENTKEEL_<NAME>_<FIELD>`); one under its prefix that it does not declare (and that no
    `allowed_prefixes` covers) is a `SettingsError` naming what it declares. A domain that
    cannot be loaded stops the process here, with the reason in one line."""
    try:
        domain = load_domain(env.get(env_prefix + "DOMAIN", ""))
    except DomainError as exc:
        raise SettingsError(str(exc)) from None
    fields = domain.settings.model_fields if domain.settings is not None else {}
    own = tuple(domain.env_prefix + name.upper() for name in fields)
    for var in sorted(env):
        if (
            var.startswith(domain.env_prefix)
            and var not in own
            and not var.startswith(tuple(allowed_prefixes))
        ):
            close = difflib.get_close_matches(var, own, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            declared = ", ".join(own) or "none"
            raise SettingsError(
                f"{var} is not a setting of domain {domain.name}{hint}; it declares: {declared}"
            )
    return own
