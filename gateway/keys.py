"""API keys of the gateway: a bearer token stands for one tenant and one actor.

A customer-facing client holds a key that names its tenant and actor; whatever its
request body says, it cannot act as another tenant or actor. A backend that authenticates
its own users holds a key with `acts_for_others`: it names the actor per request (within
its tenant), as a Temporal client would.

The file (`AGENTKEEL_API_KEYS_FILE`) is JSON::

    {"keys": [
      {"token_sha256": "<hex>", "tenant": "acme",
       "actor": {"role": "customer", "subject": "7"}},
      {"token_sha256": "<hex>", "tenant": "acme",
       "actor": {"role": "staff", "name": "ops"}, "acts_for_others": true}
    ]}

Tokens are kept as SHA-256 digests (`"token"` in clear is accepted for local use), and
compared in constant time.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from agentkeel.schemas.actor import SYSTEM_ACTOR, SYSTEM_ROLE, Actor
from agentkeel.schemas.request import AgentRequest
from agentkeel.schemas.text import Identifier
from agentkeel.schemas.tools.arguments import argument_problem
from agentkeel.sdk.serving import active_domain
from agentkeel.settings.model import StartupError


class ApiKey(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    token_sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    token: str | None = Field(default=None, min_length=16)
    tenant: Identifier
    actor: Actor
    """Required: a key that forgot it must not become a trusted service."""
    acts_for_others: bool = False
    """May name any actor of its tenant in a request, and any approver."""

    @model_validator(mode="after")
    def _one_token(self) -> ApiKey:
        if (self.token is None) == (self.token_sha256 is None):
            raise ValueError("give exactly one of token_sha256 and token")
        return self

    @property
    def digest(self) -> bytes:
        if self.token_sha256 is not None:
            return bytes.fromhex(self.token_sha256)
        assert self.token is not None
        return hashlib.sha256(self.token.encode()).digest()


class ApiKeyFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    keys: list[ApiKey] = Field(min_length=1)

    @model_validator(mode="after")
    def _distinct_tokens(self) -> ApiKeyFile:
        digests = [key.digest for key in self.keys]
        if len(set(digests)) != len(digests):
            raise ValueError("two keys have the same token")
        return self


class Refused(Exception):
    """The caller may not do this: `status` is the HTTP status to answer with, `kind` the
    problem type (`schemas.gateway.PROBLEM_TYPES`; by default the status's)."""

    def __init__(self, status: int, detail: str, kind: str | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.kind = kind


@dataclass(frozen=True)
class Caller:
    """Who is calling: a key's tenant and actor, or anyone on loopback without keys."""

    key: ApiKey | None

    def admit(self, request: AgentRequest) -> AgentRequest:
        """`request` with the key's tenant and actor, or `Refused` if it claims others (or
        its plan has an argument no tool could be called with: a lone surrogate, a NUL,
        an integer past 64 bits, answered 422 here rather than failing its start)."""
        for step in request.plan.steps if request.plan is not None else ():
            problem = argument_problem(step.args, f"plan step {step.id} args")
            if problem is not None:
                raise Refused(422, problem, "invalid-request")
        key = self.key
        if key is None:
            return request.model_copy(update={"usage_key": request.usage_key or self.quota_id})
        sent = request.model_fields_set
        if "tenant" in sent and request.tenant != key.tenant:
            raise Refused(403, f"this API key is for tenant {key.tenant!r}, not {request.tenant!r}")
        actor = key.actor
        if "actor" in sent and request.actor != key.actor:
            if not key.acts_for_others:
                raise Refused(
                    403, f"this API key acts as {key.actor.describe()}; it may not name another"
                )
            actor = request.actor
        # Its usage counts as the key's (`usage_key`), whatever the request said.
        return request.model_copy(
            update={"tenant": key.tenant, "actor": actor, "usage_key": self.quota_id}
        )

    def may_see(self, tenant: str, actor: Actor) -> bool:
        """Whether this caller may see (and cancel) a run of `tenant` acting for `actor`: its
        own tenant's runs, and for a customer's key only that customer's."""
        key = self.key
        if key is None:
            return True
        if tenant != key.tenant:
            return False
        if active_domain().is_scoped(key.actor.role) and not key.acts_for_others:
            return actor.audience == key.actor.audience
        return True

    def approver(self, named: str | None) -> Actor:
        """Who decides an approval made by this caller, as the workflow checks it
        (`ApprovalDecision.by`, its name the recorded approver); `Refused` if it may not.

        The role and subject are always the key's, whatever the body says: a key that acts
        for others names the person (its service authenticated them), not their role.
        Without keys the decision is the system's, under the name given.
        """
        key = self.key
        if key is None:
            return SYSTEM_ACTOR.model_copy(update={"name": _named(named)})
        domain = active_domain()
        role = domain.role(key.actor.role)
        # A system key that names no one is no person who could be held to a decision.
        lone_service = key.actor.role == SYSTEM_ROLE and not key.acts_for_others
        if role is None or not role.may_approve or lone_service:
            approvers = ", ".join(domain.approver_roles) or "none"
            raise Refused(
                403,
                f"only these roles may approve: {approvers}; this API key acts as {key.actor.role}",
            )
        if key.acts_for_others:
            return key.actor.model_copy(update={"name": _named(named)})
        own = key.actor.name
        if own is None:
            raise Refused(403, "this API key has no actor name to record as approver")
        if named is not None and named != own:
            raise Refused(403, f"this API key approves as {own!r}; it may not name another")
        return key.actor

    @property
    def quota_id(self) -> str:
        """The key's name in quotas (a prefix of its digest: never the token itself); all
        callers of a keyless gateway share one."""
        return "keyless" if self.key is None else self.key.digest.hex()[:16]


def _named(named: str | None) -> str:
    if named is None:
        raise Refused(422, "approver: name who decides")
    return named


class ApiKeys:
    def __init__(self, keys: list[ApiKey]) -> None:
        self._keys = keys

    @property
    def configured(self) -> bool:
        return bool(self._keys)

    def caller(self, authorization: str | None) -> Caller:
        """The caller an `Authorization` header names; `Refused(401)` if it names none."""
        if not self._keys:
            return Caller(None)
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise Refused(401, "missing API key: send `Authorization: Bearer <key>`")
        digest = hashlib.sha256(token.strip().encode()).digest()
        found = None
        for key in self._keys:  # every key compared: the time taken does not tell which
            if hmac.compare_digest(digest, key.digest):
                found = key
        if found is None:
            raise Refused(401, "unknown API key")
        return Caller(found)

    @classmethod
    def load(cls, path: str) -> ApiKeys:
        """The keys in `path`; no path, no keys. A file that cannot be used stops the start."""
        if not path:
            return cls([])
        try:
            raw = json.loads(Path(path).expanduser().read_text())
            keys = ApiKeyFile.model_validate(raw).keys
            for i, key in enumerate(keys):
                problem = active_domain().actor_problem(key.actor.role, key.actor.subject)
                if problem is not None:
                    raise StartupError(f"API keys file {path}: keys.{i}.{problem}")
            return cls(keys)
        except OSError as exc:
            raise StartupError(f"cannot read API keys file {path}: {exc.strerror}") from None
        except json.JSONDecodeError as exc:
            raise StartupError(f"API keys file {path} is not JSON: {exc}") from None
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise StartupError(f"API keys file {path}: {where}: {first['msg']}") from None
