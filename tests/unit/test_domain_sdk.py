"""Writing a domain of one's own, without a server: `agentkeel init`, loading a domain module
or an installed entry point, tools refused at their definition, roles and API keys checked
against the served domain."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel

from agentkeel import ToolArgs, ToolDefinitionError, tool
from agentkeel.sdk.domain import Role
from tests.support.paths import ROOT


def test_init_scaffolds_a_domain_that_loads_and_passes_its_own_test(tmp_path: Path) -> None:
    import subprocess

    made = subprocess.run(
        [sys.executable, "-m", "agentkeel.cli.main", "init", "notes", "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert made.returncode == 0, made.stderr
    assert "AGENTKEEL_DOMAIN=notes:domain" in made.stdout
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    probe = (
        "from agentkeel.sdk.loading import load_domain\n"
        "d = load_domain('notes:domain')\n"
        "print(d.name, sorted(s.name for s in d.tools), [r.name for r in d.roles])\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert loaded.stdout.strip() == "notes ['close_item', 'get_item'] ['member', 'admin']"
    tested = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "notes/test_domain.py"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert tested.returncode == 0, tested.stdout + tested.stderr
    again = subprocess.run(
        [sys.executable, "-m", "agentkeel.cli.main", "init", "notes", "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert again.returncode == 1 and "already exists" in again.stderr


def test_a_domain_module_is_loaded_once_and_its_errors_are_one_line(tmp_path: Path) -> None:
    from agentkeel.sdk.domain import DomainError
    from agentkeel.sdk.loading import load_domain
    from agentkeel.settings.model import Settings, SettingsError

    (tmp_path / "factory_domain.py").write_text(
        "from agentkeel import Domain\n"
        "CALLS = []\n"
        "def make():\n"
        "    CALLS.append(1)\n"
        "    return Domain(name='factory', tools=(), persona='p')\n"
    )
    (tmp_path / "broken_domain.py").write_text(
        "from pydantic import BaseModel\n"
        "from agentkeel import tool\n"
        "class Loose(BaseModel):\n"
        "    x: int\n"
        "@tool()\n"
        "async def loose(args: Loose) -> Loose:\n"
        "    return args\n"
    )
    sys.path.insert(0, str(tmp_path))
    try:
        first = load_domain("factory_domain:make")
        assert load_domain("factory_domain:make") is first  # a factory runs once
        with pytest.raises(DomainError, match=r"ToolDefinitionError: .*must forbid unknown"):
            load_domain("broken_domain:domain")
        with pytest.raises(DomainError, match="has no domian"):
            load_domain("factory_domain:domian")
        with pytest.raises(SettingsError, match="AGENTKEEL_DOMAIN=nowhere_at_all:domain"):
            Settings.from_env({"AGENTKEEL_DOMAIN": "nowhere_at_all:domain"})
        served = Settings.from_env({"AGENTKEEL_DOMAIN": "factory_domain:make"})
        assert served.domain == "factory_domain:make"
        # It declares no settings of its own: a variable under its prefix is a misspelling.
        with pytest.raises(
            SettingsError,
            match="AGENTKEEL_FACTORY_TOKEN is not a setting of domain factory; it declares: none",
        ):
            Settings.from_env(
                {"AGENTKEEL_DOMAIN": "factory_domain:make", "AGENTKEEL_FACTORY_TOKEN": "x"}
            )
        shop = Settings.from_env({"AGENTKEEL_SHOP_CARRIER_URL": "http://127.0.0.1:1"})
        assert shop.domain == ""  # the example shop's own variable is known
        with pytest.raises(SettingsError, match="did you mean AGENTKEEL_SHOP_CARRIER_URL"):
            Settings.from_env({"AGENTKEEL_SHOP_CARIER_URL": "http://127.0.0.1:1"})
    finally:
        sys.path.remove(str(tmp_path))


class Args(ToolArgs):
    x: int


class Out(BaseModel):
    y: int


def test_a_tool_is_refused_at_its_definition_with_what_to_change() -> None:
    with pytest.raises(ToolDefinitionError, match="async def"):

        @tool()
        def not_async(args: Args) -> Out:
            return Out(y=args.x)

    with pytest.raises(ToolDefinitionError, match="must return a pydantic model"):

        @tool()
        async def no_result(args: Args) -> None:
            return None

    with pytest.raises(ToolDefinitionError, match="never cached"):
        tool(side_effect=True, cache_ttl=__import__("datetime").timedelta(seconds=1))

    @tool(side_effect=True, needs_approval=True)
    async def act(args: Args) -> Out:
        """Do it."""
        return Out(y=args.x)

    assert (act.name, act.description, act.idempotent, act.needs_approval) == (
        "act",
        "Do it.",
        False,
        True,
    )
    assert "idempotency_key" in act.activity_input_model.model_fields


def test_a_plan_the_caller_brings_is_its_own_request_for_the_client() -> None:
    from agentkeel.client.agent_client import coalesced_workflow_id
    from agentkeel.schemas.request import AgentRequest

    def with_plan(order: int) -> AgentRequest:
        steps = [{"id": "s1", "tool": "get_order", "args": {"order_id": order}}]
        return AgentRequest.model_validate({"question": "nightly", "plan": {"steps": steps}})

    assert coalesced_workflow_id(with_plan(1001), "v") != coalesced_workflow_id(
        with_plan(1002), "v"
    )


def test_an_api_key_must_name_an_actor_of_the_served_domain(tmp_path: Path) -> None:
    import json

    from agentkeel.gateway.keys import ApiKeys
    from agentkeel.settings.model import StartupError

    path = tmp_path / "keys.json"
    for actor, problem in (
        ({"role": "customer"}, "actor.subject is required for role customer"),
        ({"role": "admin"}, "actor.role: 'admin' is not a role of domain shop"),
        ({"role": "staff", "subject": "9"}, "actor.subject is not allowed for role staff"),
    ):
        key = {"token": "t" * 20, "tenant": "acme", "actor": actor}
        path.write_text(json.dumps({"keys": [key]}))
        with pytest.raises(StartupError, match=problem):
            ApiKeys.load(str(path))


def test_an_installed_entry_point_is_served_without_a_setting(tmp_path: Path) -> None:
    import subprocess

    (tmp_path / "ep_domain.py").write_text(
        "from agentkeel import Domain\ndomain = Domain(name='ep', tools=(), persona='p')\n"
    )
    info = tmp_path / "ep_domain-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ep-domain\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[agentkeel.domains]\nep = ep_domain:domain\n")
    probe = "from agentkeel.sdk.serving import active_domain\nprint(active_domain().name)\n"
    env = {k: v for k, v in os.environ.items() if k != "AGENTKEEL_DOMAIN"}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(ROOT)])
    served = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert served.stdout.strip() == "ep", served.stderr
    env["AGENTKEEL_DOMAIN"] = "agentkeel.examples.shop:domain"  # the setting wins
    named = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert named.stdout.strip() == "shop", named.stderr


@pytest.mark.parametrize(
    ("actor", "says"),
    [
        ("", "--as needs a role"),
        ("manager:bob", "actor.role: 'manager' is not a role of domain shop"),
        ("customer", "actor.subject is required for role customer"),
        ("staff:9", "actor.subject is not allowed for role staff"),
        ("customer:0", "actor.subject '0' is not a customer subject"),
    ],
)
def test_the_cli_refuses_an_actor_the_domain_refuses_before_any_run(actor: str, says: str) -> None:
    import subprocess

    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTKEEL_")}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [sys.executable, "-m", "agentkeel.cli.main", "ask", "--as", actor, "Where is 1001?"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert says in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_a_role_s_subject_pattern_is_checked_when_declared() -> None:
    with pytest.raises(ValueError, match=r"role member: subject_pattern '\[': "):
        Role("member", scoped=True, subject_pattern="[")
    member = Role("member", scoped=True, subject_pattern=r"m-[0-9]+")
    assert member.subject_pattern == r"m-[0-9]+"
