"""Each built-in tool is declared once, in its record, and everything else reads the record.

What a record says is what the permission rules, hooks, agent types, ACP and
the registry do. Claude Code's identity and access page
(docs.anthropic.com/en/docs/claude-code/iam): "Edit rules apply to all
built-in tools that edit files", and Read rules to those that read files (Grep,
Glob, LS): a tool with two paths would escape them if only its first were
checked, so every path argument is. ``acceptEdits`` "automatically accepts file
edit permissions for the session": ``apply_patch`` edits files, so it is one of
them. An agent file may list any tool agentloop has without a warning.
"""

from __future__ import annotations

import ast
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from agentloop.agent.hooks.payloads import absolute_input, tool_response
from agentloop.agent.permissions.rules import PermissionPolicy
from agentloop.agent.subagents.agent_types import KNOWN_TOOLS, load_agent_types
from agentloop.agent.tools import catalog
from agentloop.agent.tools.catalog import RECORDS, builtin_registry, record_of
from agentloop.agent.tools.record import ToolRecord
from agentloop.agent.tools.workspace import Workspace
from agentloop.config.settings import SettingsSource

SRC = Path(__file__).resolve().parents[1] / "src" / "agentloop"

def _copy_file(ctx: Any, **kw: Any) -> str:
    src, dst = ctx.ws.resolve(kw["source_path"]), ctx.ws.resolve(kw["target_path"], for_write=True)
    Path(dst).write_bytes(Path(src).read_bytes())
    return f"copied {src} to {dst}"


COPY = ToolRecord(
    "CopyFileSketch", "Copy a file.",
    {"type": "object", "properties": {"source_path": {"type": "string"}, "target_path": {"type": "string"}},
     "required": ["source_path", "target_path"], "additionalProperties": False},
    paths=("source_path", "target_path"), rule="edit", hook="write", acp="edit", run=_copy_file,
)
"""A tool with two path arguments, as a new tool's record would declare it."""


@pytest.fixture
def copy_tool(monkeypatch: pytest.MonkeyPatch) -> ToolRecord:
    """``COPY`` registered as a built-in tool is: its module (here a stand-in holding the record), and one line
    in the catalog's ``DECLARED``, from which the catalog derives the rest (``catalog.index``)."""
    import types

    module = types.ModuleType("agentloop_copy_tool")
    module.COPY = COPY  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    declared = (*catalog.DECLARED, "agentloop_copy_tool:COPY")  # the one line
    records, by_name, aliases = catalog.index(declared)
    for name, value in (("DECLARED", declared), ("RECORDS", records), ("_BY_NAME", by_name), ("ALIASES", aliases)):
        monkeypatch.setattr(catalog, name, value)
    return COPY


def test_the_catalog_lists_each_tool_on_one_line_and_imports_no_record() -> None:
    """Adding a tool touches its module, its test and one line of the catalog: ``DECLARED`` names each record once,
    one a line, and the catalog imports no record itself (nothing else to add beside the line)."""
    text = (SRC / "agent" / "tools" / "catalog.py").read_text()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip().startswith('"agentloop.') and ":" in ln]
    assert [ln.rstrip(",").strip('"') for ln in lines] == list(catalog.DECLARED)
    assert len(catalog.DECLARED) == len(RECORDS) == len({r.name for r in RECORDS})
    imported = {a.name for node in ast.walk(ast.parse(text)) if isinstance(node, ast.ImportFrom) for a in node.names}
    record_names = {d.rpartition(":")[2] for d in catalog.DECLARED}
    assert not imported & record_names, imported & record_names


def test_a_catalog_line_that_names_no_record_is_refused() -> None:
    with pytest.raises(TypeError, match="is not a ToolRecord"):
        catalog.index(("agentloop.agent.tools.builtin:build_registry",))


def test_sub_agent_types_and_the_preview_see_a_new_tool(tmp_path: Path, copy_tool: ToolRecord) -> None:
    from agentloop.agent.subagents.agent_types import known_tools
    from agentloop.cli.preview import _shape

    assert COPY.name in known_tools()
    d = tmp_path / ".claude" / "agents"
    d.mkdir(parents=True)
    (d / "copier.md").write_text(f"---\nname: copier\ndescription: d\ntools: Read, {COPY.name}\n---\nbody\n")
    warnings: list[str] = []
    types = load_agent_types(str(tmp_path), str(tmp_path / "home"), str(tmp_path / "user"), warnings)
    assert types["copier"].tools == ("Read", COPY.name) and not [w for w in warnings if "left out" in w], warnings
    assert _shape(COPY.name) == "write"  # the prompt's preview shows it as the change its record declares


def _policy(cwd: Path, mode: str = "default", **rules: list[str]) -> PermissionPolicy:
    src = SettingsSource(str(cwd / ".agentloop" / "settings.json"), "project", {"permissions": rules})
    return PermissionPolicy.from_settings([src], mode=mode, cwd=str(cwd), user_home=str(cwd / "home"))


def _path_properties(schema: dict[str, Any]) -> set[str]:
    return {k for k in schema.get("properties", {}) if k == "path" or k.endswith("_path")}


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: r.name)
def test_every_path_argument_of_a_tool_is_in_its_record(record: ToolRecord) -> None:
    assert set(record.paths) == _path_properties(record.schema)


def test_the_registry_is_made_from_the_records_in_their_order(tmp_path: Path) -> None:
    reg = builtin_registry(Workspace(str(tmp_path)), spill_dir=str(tmp_path / "spill"))
    made = [r for r in RECORDS if r.run is not None]
    assert reg.names() == [r.name for r in made]
    for r in made:
        t = reg.get(r.name)
        assert t is not None and t.parameters is r.schema and t.read_only == r.read_only
        assert t.description == r.description or r.describe is not None


def test_a_new_tool_is_made_by_the_registry_from_its_record_alone(tmp_path: Path, copy_tool: ToolRecord) -> None:
    from agentloop.events import ToolCall

    (tmp_path / "a.txt").write_text("one\n")
    reg = builtin_registry(Workspace(str(tmp_path)), spill_dir=str(tmp_path / "spill"))
    assert reg.names()[-1] == COPY.name
    ok = reg.invoke(ToolCall("c1", COPY.name, {"source_path": "a.txt", "target_path": "b.txt"}))
    assert ok.ok and (tmp_path / "b.txt").read_text() == "one\n"
    out = reg.invoke(ToolCall("c2", COPY.name, {"source_path": "a.txt", "target_path": "/etc/x"}))
    assert not out.ok  # each path goes through the workspace


def test_each_path_of_a_two_path_tool_is_held_to_the_deny_rules(tmp_path: Path, copy_tool: ToolRecord) -> None:
    p = _policy(tmp_path, "bypassPermissions", deny=["Edit(secret/**)"])
    assert p.decide(COPY.name, {"source_path": "a.txt", "target_path": "secret/k"}).behavior == "deny"
    assert p.decide(COPY.name, {"source_path": "secret/k", "target_path": "b.txt"}).behavior == "deny"
    assert p.decide(COPY.name, {"source_path": "a.txt", "target_path": "b.txt"}).behavior == "allow"


def test_an_allow_rule_allows_a_two_path_tool_only_when_it_covers_both_paths(tmp_path: Path, copy_tool: ToolRecord) -> None:
    p = _policy(tmp_path, allow=["Edit(src/**)"])
    assert p.decide(COPY.name, {"source_path": "src/a", "target_path": "src/b"}).behavior == "allow"
    assert p.decide(COPY.name, {"source_path": "src/a", "target_path": "elsewhere/b"}).behavior == "ask"


def test_a_protected_second_path_asks_in_every_mode(tmp_path: Path, copy_tool: ToolRecord) -> None:
    p = _policy(tmp_path, "bypassPermissions")
    d = p.decide(COPY.name, {"source_path": "a.txt", "target_path": ".git/hooks/pre-commit"})
    assert d.behavior == "ask" and ".git" in d.reason


def test_hooks_see_every_path_of_a_tool_made_absolute(tmp_path: Path, copy_tool: ToolRecord) -> None:
    got = absolute_input(COPY.name, {"source_path": "a", "target_path": "b/c"}, str(tmp_path))
    assert got == {"source_path": str(tmp_path / "a"), "target_path": str(tmp_path / "b" / "c")}


def test_acp_locates_every_path_of_a_call(tmp_path: Path, copy_tool: ToolRecord) -> None:
    pytest.importorskip("acp")
    from agentloop.cli.acp_updates import locations

    got = locations(COPY.name, {"source_path": "a", "target_path": "b"}, str(tmp_path))
    assert got is not None and [x.path for x in got] == [str(tmp_path / "a"), str(tmp_path / "b")]


def test_apply_patch_is_an_edit_that_accept_edits_allows(tmp_path: Path) -> None:
    call = {"input": "*** Begin Patch\n*** Add File: a.txt\n+x\n*** End Patch"}
    assert _policy(tmp_path, "acceptEdits").decide("apply_patch", call).behavior == "allow"
    assert _policy(tmp_path, "default").decide("apply_patch", call).behavior == "ask"
    assert _policy(tmp_path, "plan").decide("apply_patch", call).behavior == "deny"


def test_an_agent_file_may_list_every_tool_agentloop_has(tmp_path: Path) -> None:
    names = [r.name for r in RECORDS] + [a for r in RECORDS for a in r.aliases]
    assert set(names) <= KNOWN_TOOLS
    d = tmp_path / ".claude" / "agents"
    d.mkdir(parents=True)
    (d / "all.md").write_text(f"---\nname: all\ndescription: d\ntools: {', '.join(names)}\n---\nbody\n")
    warnings: list[str] = []
    types = load_agent_types(str(tmp_path), str(tmp_path / "home"), str(tmp_path / "user"), warnings)
    assert types["all"].tools == tuple(names)
    assert not [w for w in warnings if "left out" in w], warnings


def test_the_hook_payload_and_acp_kind_come_from_the_record() -> None:
    pytest.importorskip("acp")
    from agentloop.cli.acp_updates import KINDS

    for r in RECORDS:
        assert KINDS.get(r.name, "other") == r.acp
        shaped = tool_response(r.name, {"file_path": "/x", "content": "c"}, "Updated /x")
        assert (shaped != "Updated /x") == (r.hook is not None), r.name


def test_an_old_name_means_its_tool() -> None:
    for r in RECORDS:
        for alias in r.aliases:
            assert record_of(alias) is r


# --- a built-in tool's name is written once, in its record ---------------------

ALLOWED_LITERALS: dict[tuple[str, str], str] = {
    ("providers/record.py", "apply_patch"): "PATCH_FORMAT, the edit format's one spelling (providers/ may not import the "
                                            "agent's tools; the format and the tool share the name)",
}
"""(file under src/agentloop, name): why that file may still write the name as a string."""


def _record_homes() -> dict[str, str]:
    """Tool name -> the file that declares its record (``ToolRecord("Name", ...)``)."""
    homes: dict[str, str] = {}
    for path in SRC.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if "ToolRecord(" not in text:
            continue
        for node in ast.walk(ast.parse(text)):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "ToolRecord" and node.args
                    and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                homes[node.args[0].value] = path.relative_to(SRC).as_posix()
    return homes


def _literals(path: Path, names: set[str]) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            skip |= {id(c) for c in ast.walk(node.value)}  # exported class names, not tools
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "cast" and node.args:
            skip.add(id(node.args[0]))  # a type written as a string (cast("Agent", x)), not a tool
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in names and id(n) not in skip]


def _declared_names() -> dict[str, str]:
    """Every tool name agentloop knows -> the one file that may write it: each record's name and old names (its
    module), Claude Code's tools agentloop does not make (``tools/claude_names.py``) and the MCP resource tools
    (``mcp/agent.py``, which makes them)."""
    from agentloop.agent.tools import claude_names
    from agentloop.mcp.agent import RESOURCE_TOOLS

    homes = _record_homes()
    own: dict[str, str] = {}
    for r in RECORDS:
        assert r.name in homes, f"no ToolRecord({r.name!r}, ...) in the sources"
        own[r.name] = homes[r.name]
        for alias in r.aliases:
            own[alias] = homes[r.name]
    for name in claude_names.READERS | claude_names.EDITORS | claude_names.OTHERS:
        own[name] = "agent/tools/claude_names.py"
    for name in RESOURCE_TOOLS:
        own[name] = "mcp/agent.py"
    return own


def test_the_literal_scan_sees_a_tool_name_wherever_it_is_written(tmp_path: Path) -> None:
    """The scan below finds a name written as a string anywhere (a set, a comparison, a keyword, a dict key), and
    passes what is not a tool (a type in ``cast``, an ``__all__`` entry, longer text)."""
    probe = tmp_path / "probe.py"
    probe.write_text('X = {"Read", "x"}\nif n == "MultiEdit": pass\nf(name="Task")\nD = {"Grep": 1}\n'
                     '__all__ = ["Agent"]\ny = cast("Agent", z)\ns = "Read the file"\n')
    assert sorted(_literals(probe, set(_declared_names()))) == [(1, "Read"), (2, "MultiEdit"), (3, "Task"), (4, "Grep")]


def test_no_builtin_tool_name_is_written_outside_its_own_module() -> None:
    own = _declared_names()
    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        for line, name in _literals(path, set(own)):
            if own[name] != rel and (rel, name) not in ALLOWED_LITERALS:
                found.append(f"{rel}:{line}: {name!r} (its record is in {own[name]})")
    assert not found, "write the record's .name instead:\n" + "\n".join(found)


def test_the_name_check_finds_a_name_written_as_a_string(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text('__all__ = ["Read"]\nx = cast("Read", None)\nif name == "Read":\n    pass\n')
    assert _literals(f, {"Read"}) == [(3, "Read")]


def test_the_allowed_literals_are_still_needed() -> None:
    for (rel, name), why in ALLOWED_LITERALS.items():
        assert why and _literals(SRC / rel, {name}), f"{rel} no longer writes {name!r}: remove it from ALLOWED_LITERALS"


def test_tools_without_a_record_keep_the_usual_path_names(tmp_path: Path) -> None:
    """An MCP tool's file_path is made absolute for hooks, as before (it has no record)."""
    got = absolute_input("mcp__fs__read", {"file_path": "a", "path": "b"}, str(tmp_path))
    assert got == {"file_path": os.path.join(str(tmp_path), "a"), "path": "b"}


def test_always_for_a_protected_two_path_call_names_each_path(tmp_path: Path, copy_tool: ToolRecord) -> None:
    """"Always" at a prompt for a write to a protected path allows that path only: here both, each named."""
    from agentloop.agent.toolbox import session_rule
    from agentloop.events import ToolCall

    p = _policy(tmp_path)
    args = {"source_path": ".git/a", "target_path": ".claude/b"}
    assert p.decide(COPY.name, args).behavior == "ask"
    text = session_rule(p, ToolCall("c1", COPY.name, args))
    assert ".git" in text and ".claude" in text
    assert p.decide(COPY.name, args).behavior == "allow"
    assert p.decide(COPY.name, {"source_path": ".git/a", "target_path": ".claude/other"}).behavior == "ask"


# --- the tools sent to the model are pinned ---------------------------------------

PINNED = json.loads((Path(__file__).parent / "data" / "tool_schemas.json").read_text(encoding="utf-8"))
"""The tools (name, description, parameters, read-only) as the model was shown them before the records: written
from that code, so moving a declaration can never change a byte the model sees (nor any prompt cache)."""


def _shown(reg: Any) -> str:
    return json.dumps([[t.name, t.description, t.parameters, t.read_only] for t in reg], ensure_ascii=False)


def _keeps_the_pinned(reg: Any, pinned: list[Any]) -> None:
    """Every pinned tool is shown with its bytes and in its order; any other tool shown is one declared after
    every pinned record (a new tool's line appended to ``DECLARED``, as DEVELOPING.md says), so adding a tool
    touches no pin."""
    shown = json.loads(_shown(reg))
    names = [t[0] for t in pinned]
    assert json.dumps([t for t in shown if t[0] in names], ensure_ascii=False) == json.dumps(pinned, ensure_ascii=False)
    declared = [r.name for r in catalog.RECORDS]  # as the catalog holds them now (a new line included)
    last = max(declared.index(n) for n in names if n in declared)
    new = [t[0] for t in shown if t[0] not in names]
    assert all(n in declared and declared.index(n) > last for n in new), new


@pytest.mark.parametrize(("key", "timeouts"), [("builtin_registry", {}),
                                               ("builtin_registry_30s_90s", {"shell_timeout_s": 30, "shell_max_timeout_s": 90})])
def test_the_registry_shows_the_model_the_pinned_tools(tmp_path: Path, key: str, timeouts: dict[str, Any]) -> None:
    reg = builtin_registry(Workspace(str(tmp_path)), spill_dir=str(tmp_path / "spill"), **timeouts)
    _keeps_the_pinned(reg, PINNED[key])


def test_an_agent_shows_the_model_the_pinned_tools(tmp_path: Path) -> None:
    """Every built-in tool, the Skill tool, the worktree, Agent and web tools, in the model's order."""
    from agentloop.agent.agent import Agent

    cwd, home = tmp_path / "w", tmp_path / "h"
    (cwd / ".claude" / "skills" / "demo").mkdir(parents=True)
    (cwd / ".claude" / "skills" / "demo" / "SKILL.md").write_text("---\nname: demo\ndescription: a demo\n---\nbody\n")
    home.mkdir()
    script = tmp_path / "s.json"
    script.write_text("[]")
    a = Agent(cwd=str(cwd), home=str(tmp_path / "home"), model=f"scripted:{script}",
              env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home)})
    try:
        # pinned as every tool shown; what a model's provider record hides (its other edit format, WebSearch
        # where it has no search) is left out, and every tool it is shown keeps its bytes and its place
        from agentloop.agent.toolbox import model_hides

        for spec in ("openai:gpt-5", "openai:gpt-4o", "anthropic:claude-sonnet-4-5"):
            hidden = model_hides(spec)
            want = [t for t in PINNED["agent_shown_to_openai_model"] if t[0] not in hidden]
            _keeps_the_pinned(a.toolbox.shown(spec), want)
    finally:
        a.close()


def test_a_new_tool_appended_to_the_catalog_keeps_every_pin(tmp_path: Path, copy_tool: ToolRecord) -> None:
    """DEVELOPING.md's promise for a new tool: its module, its test and one catalog line; no pinned schema to
    write again. The new tool is shown after the pinned ones, each of which keeps its bytes and its place."""
    reg = builtin_registry(Workspace(str(tmp_path)), spill_dir=str(tmp_path / "spill"))
    assert reg.names()[-1] == COPY.name
    _keeps_the_pinned(reg, PINNED["builtin_registry"])
    with pytest.raises(AssertionError):  # and a changed pinned tool is still caught
        _keeps_the_pinned(reg, [[*PINNED["builtin_registry"][0][:3], not PINNED["builtin_registry"][0][3]],
                                *PINNED["builtin_registry"][1:]])


def _path_name_lists(tree: ast.AST) -> list[int]:
    """Lines of a tuple, list or set literal of two or more path argument names and nothing else (a path fact
    declared again; a list of what to show first, paths among commands and URLs, is not one)."""
    keys = {"file_path", "notebook_path", "path", "source_path", "target_path"}
    return sorted(n.lineno for n in ast.walk(tree) if isinstance(n, (ast.Tuple, ast.List, ast.Set)) and len(n.elts) >= 2
                  and all(isinstance(e, ast.Constant) and e.value in keys for e in n.elts))


def test_which_arguments_are_paths_is_declared_by_the_records_and_once_for_tools_without_one() -> None:
    """A built-in tool's path arguments are its record's ``paths``; a tool without a record has
    ``claude_names.PATH_ARGUMENTS``. No other module lists path argument names (rules, answers, hooks and ACP read
    those two), so a path cannot be checked in one place and missed in another."""
    assert _path_name_lists(ast.parse('K = ("file_path", "notebook_path")\nX = ["path", "url"]\nif k in {"path", "file_path"}: pass\n')) == [1, 3]
    allowed = {"agent/tools/claude_names.py"}
    found = [f"{p.relative_to(SRC).as_posix()}:{line}" for p in sorted(SRC.rglob("*.py"))
             if p.relative_to(SRC).as_posix() not in allowed and not p.relative_to(SRC).as_posix().startswith("agent/tools/")
             for line in _path_name_lists(ast.parse(p.read_text(encoding="utf-8")))]
    assert found == [], found
