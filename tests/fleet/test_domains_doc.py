"""`docs/domains.md` runs as written: every command of its shell blocks, in order, against a
fresh stack, each output checked against what the text says it shows.

The commands run verbatim through `bash` in an empty folder, as a reader runs them (the
`agentkeel` and `pytest` of this interpreter's environment first on `PATH`). Only the
stack's real addresses and the ids a run hands back replace their placeholders: the
gateway's `127.0.0.1:8080` (this stack's gateway listens on a free port, beside any other
on the machine), `WORKFLOW_ID` (the run the last `POST /v1/runs` started) and
`WATCH_WORKFLOW_ID` (the run `ask` left watching). Each command of the doc must have its
check here, in the doc's order: a command added to the doc without one fails the test.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from agentkeel.settings.ports import free_port
from tests.support.paths import ROOT

DOC = ROOT / "docs" / "domains.md"
_BLOCK = re.compile(r"```bash\n(.*?)```", re.DOTALL)


def doc_commands(text: str) -> list[str]:
    """Each shell command of the doc's `bash` blocks, comments and blank lines left out; a
    command continued with `\\` or inside an open quote spans lines."""
    commands: list[str] = []
    for block in _BLOCK.findall(text):
        pending: list[str] = []
        for line in block.splitlines():
            if not pending and (not line.strip() or line.lstrip().startswith("#")):
                continue
            pending.append(line)
            joined = "\n".join(pending)
            if joined.endswith("\\") or not _complete(joined):
                continue
            commands.append(joined)
            pending = []
        assert not pending, f"an unfinished command in {DOC.name}: {pending}"
    return commands


def _complete(command: str) -> bool:
    """Whether `command` closes every quote it opens (a `# comment` may hold an `'`)."""
    try:
        shlex.split(command, comments=True)
    except ValueError:
        return False
    return True


@dataclass
class Reader:
    """A shell session's state across commands: the folder, the environment, the ids."""

    cwd: Path
    env: dict[str, str]
    gateway: str
    ids: dict[str, str] = field(default_factory=dict)

    def run(self, command: str) -> Ran:
        if command.startswith("export ") and "\n" not in command:
            name, _, value = command.removeprefix("export ").partition("=")
            self.env[name] = value
            return Ran(command, 0, "", "")
        actual = command.replace("127.0.0.1:8080", self.gateway)
        for placeholder in ("WATCH_WORKFLOW_ID", "WORKFLOW_ID"):
            if placeholder in actual:
                actual = actual.replace(placeholder, self.ids[placeholder])
        done = subprocess.run(
            ["bash", "-c", actual],
            cwd=self.cwd,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        return Ran(command, done.returncode, done.stdout, done.stderr)


@dataclass
class Ran:
    command: str
    rc: int
    out: str
    err: str

    def __repr__(self) -> str:  # what a failed check shows
        return f"$ {self.command}\nexit {self.rc}\n{self.out}\n{self.err}"


Check = Callable[[Ran, Reader], None]


def _ok(*shown: str) -> Check:
    def check(ran: Ran, reader: Reader) -> None:
        assert ran.rc == 0, ran
        for text in shown:
            assert text in ran.out, ran

    return check


def _pytest_passes(ran: Ran, reader: Reader) -> None:
    assert ran.rc == 0 and re.search(r"\b5 passed\b", ran.out), ran


def _demo(ran: Ran, reader: Reader) -> None:
    assert ran.rc == 0, ran
    # Its second question is the first again: looked up, an exact hit.
    hit = ran.out.split("(the same again: a cache hit)", 1)[1].split("\n>", 1)[0]
    assert "cache: exact" in hit, ran
    parallel = ran.out.split("(two reads in parallel)", 1)[1]
    assert re.search(r"s1 +get_item +ok", parallel) and re.search(r"s2 +get_item +ok", parallel)


def _refused_bob(ran: Ran, reader: Reader) -> None:
    assert ran.rc == 1, ran  # a failed step is exit status 1
    assert "member bob may not access item 1" in ran.out, ran


def _compared(cache: str) -> Check:
    def check(ran: Ran, reader: Reader) -> None:
        assert ran.rc == 0, ran
        assert "Item 1 (first item) is open. Item 2 (second item) is open." in ran.out, ran
        assert f"cache: {cache}" in ran.out, ran
        assert re.search(r"s1 +get_item +ok", ran.out) and re.search(r"s2 +get_item +ok", ran.out)

    return check


def _started(ran: Ran, reader: Reader) -> None:
    assert ran.rc == 0, ran
    view = json.loads(ran.out)
    assert view["state"] == "running" and view["workflow_id"], ran
    reader.ids["WORKFLOW_ID"] = view["workflow_id"]


def _awaiting(ran: Ran, reader: Reader) -> None:
    view = json.loads(ran.out)
    assert "awaiting approval by admin: close_item" in view["progress"]["stage"], ran
    assert view["progress"]["awaiting"]["approval_id"] == 1, ran  # what --approval takes


def _approved(call_id: str) -> Check:
    return _ok(f"approval 1: close_item {call_id} approved by ann")


def _watching(ran: Ran, reader: Reader) -> None:
    assert ran.rc == 3, ran  # no answer within --timeout: the run goes on
    found = re.search(r"no answer within 3 s; run (\S+) goes on", ran.err)
    assert found, ran
    reader.ids["WATCH_WORKFLOW_ID"] = found.group(1)


def _listed(ran: Ran, reader: Reader) -> None:
    assert ran.rc == 0, ran
    assert reader.ids["WATCH_WORKFLOW_ID"] in ran.out, ran
    assert "get_item until $s1.status in ['closed']" in ran.out, ran


def _watch_answered(ran: Ran, reader: Reader) -> None:
    view = json.loads(ran.out)
    assert view["state"] == "completed", ran
    assert view["result"]["answer"].endswith("Item 1 (first item) is closed."), ran


# What each command of the doc shows, in the doc's order (a command, then its check; a
# check that is polled: the doc's state comes a moment after the previous command).
EXPECTED: list[tuple[str, Check, bool]] = [
    ("agentkeel init notes", _ok("created the domain package notes/"), False),
    ("pytest -q notes/test_domain.py", _pytest_passes, False),
    ("AGENTKEEL_DOMAIN=notes:domain agentkeel demo", _demo, False),
    (
        'AGENTKEEL_DOMAIN=notes:domain agentkeel ask "What is the status of item 1?"',
        _ok("Item 1 (first item) is open."),
        False,
    ),
    (
        "AGENTKEEL_DOMAIN=notes:domain agentkeel ask --as member:bob "
        '"What is the status of item 1?"',
        _refused_bob,
        False,
    ),
    ("export AGENTKEEL_DOMAIN=notes:domain", _ok(), False),
    ('agentkeel ask "Compare items 1 and 2"', _compared("miss"), False),
    ('agentkeel ask "Compare items 1 and 2"', _compared("exact"), False),
    ('agentkeel ask --as member:bob "What is the status of item 1?"', _refused_bob, False),
    ("curl -s 127.0.0.1:8080/v1/runs -H", _started, False),
    ("curl -s 127.0.0.1:8080/v1/runs/WORKFLOW_ID", _awaiting, True),
    ("agentkeel approve WORKFLOW_ID --as ann --approval 1", _approved("s2"), False),
    ("curl -s 127.0.0.1:8080/v1/runs/WORKFLOW_ID", _ok('"state":"completed"'), True),
    ('agentkeel ask "Tell me when item 1 is closed" --timeout 3', _watching, False),
    ("agentkeel watches", _listed, True),  # visibility lists it a moment later
    ("curl -s 127.0.0.1:8080/v1/runs -H", _started, False),
    ("agentkeel approve WORKFLOW_ID --as ann --approval 1", _approved("s1"), False),
    ("curl -s 127.0.0.1:8080/v1/runs/WATCH_WORKFLOW_ID", _watch_answered, True),
]


def test_the_doc_lists_the_commands_this_test_checks() -> None:
    commands = doc_commands(DOC.read_text())
    assert len(commands) == len(EXPECTED), commands
    for command, (start, _, _) in zip(commands, EXPECTED, strict=True):
        assert command.split("  #")[0].strip().startswith(start), (command, start)


@pytest.fixture
def reader(stack_dir: Path, tmp_path: Path) -> Iterator[Reader]:
    bin_dir = str(Path(sys.executable).parent)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTKEEL_")}
    gateway = f"127.0.0.1:{free_port()}"
    env |= {
        "PATH": os.pathsep.join([bin_dir, env.get("PATH", "")]),
        "PYTHONPATH": str(ROOT),
        # The stack's own places: a fresh state folder and free ports, beside any other.
        "AGENTKEEL_STATE_DIR": str(stack_dir),
        "AGENTKEEL_TEMPORAL_ADDRESS": f"127.0.0.1:{free_port()}",
        "AGENTKEEL_TEMPORAL_UI_PORT": str(free_port()),
        "AGENTKEEL_GATEWAY_ADDRESS": gateway,
        "AGENTKEEL_METRICS_ADDRESS": "off",
    }
    env.pop("PYTEST_CURRENT_TEST", None)
    folder = tmp_path / "reader"
    folder.mkdir()
    session = Reader(folder, env, gateway)
    try:
        yield session
    finally:
        down = session.run("agentkeel down")
        assert down.rc == 0, down


def test_every_command_of_domains_md_runs_as_written(reader: Reader) -> None:
    commands = doc_commands(DOC.read_text())
    assert len(commands) == len(EXPECTED)
    for command, (_, check, polled) in zip(commands, EXPECTED, strict=True):
        deadline = time.monotonic() + (30 if polled else 0)
        while True:
            ran = reader.run(command)
            try:
                check(ran, reader)
                break
            except (AssertionError, json.JSONDecodeError, KeyError, TypeError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
