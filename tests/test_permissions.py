"""Permission rules in Claude Code's syntax: parsing, tables of decisions, wrappers, sources, modes."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentloop.agent.permissions import ModeError, PermissionPolicy, RuleError, parse_rule
from agentloop.config.settings import ConfigError, SettingsSource, load_settings


def policy(allow=(), deny=(), ask=(), *, mode=None, cwd="/proj", path="/proj/.agentloop/settings.json", home=None):
    src = SettingsSource(path, "project", {"permissions": {"allow": list(allow), "deny": list(deny), "ask": list(ask)}})
    return PermissionPolicy.from_settings([src], mode=mode, cwd=cwd, user_home=home)


# --- parsing ------------------------------------------------------------------

GOOD_RULES = [
    ("Bash", "Bash", None, "tool"),
    ("Bash(npm run test *)", "Bash", "npm run test *", "bash"),
    ("Bash(git diff:*)", "Bash", "git diff:*", "bash"),
    ("Bash(*)", "Bash", None, "tool"),
    ("Read(./secrets/**)", "Read", "./secrets/**", "path"),
    ("Edit(/src/**)", "Edit", "/src/**", "path"),
    ("Read(//etc/**)", "Read", "//etc/**", "path"),
    ("Read(~/.ssh/**)", "Read", "~/.ssh/**", "path"),
    ("WebFetch(domain:*.example.com)", "WebFetch", "*.example.com", "domain"),
    ("mcp__github", "mcp__github", None, "tool"),
    ("mcp__github__*", "mcp__github__*", None, "tool"),
    ("mcp__*", "mcp__*", None, "tool"),
    ("Agent(model:opus)", "Agent", "opus", "param"),
    ("  Write  ", "Write", None, "tool"),
]


@pytest.mark.parametrize("text,tool,spec,kind", GOOD_RULES)
def test_parse_rule_reads_claude_code_syntax(text, tool, spec, kind):
    r = parse_rule(text)
    assert (r.tool, r.specifier, r.kind) == (tool, spec, kind)


BAD_RULES = ["", "   ", "Bash(", "Bash(ls", "Bash()", "Bash( )", "(ls)", "Ba sh", "Bash(ls) x",
             "mcp__*(x)", "WebFetch(example.com)", "WebFetch(domain:)", "Read(!)", "Read(\\)", "Bash\0",
             "Tool(a)(b", None, 3, ["Bash"]]


@pytest.mark.parametrize("text", BAD_RULES)
def test_parse_rule_refuses_malformed_rules_with_rule_error(text):
    with pytest.raises(RuleError):
        parse_rule(text)


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.text(), st.text(alphabet="Bash()Read:*/.~![]\\{} \0\n", max_size=30)))
def test_parse_rule_raises_nothing_but_rule_error(text):
    try:
        parse_rule(text)
    except RuleError:
        pass


# --- Bash tables -----------------------------------------------------------------

BASH_TABLE = [
    # allow rules, deny rules, command, expected
    (["Bash(npm run test *)"], [], "npm run test", "allow"),
    (["Bash(npm run test *)"], [], "npm run test --watch", "allow"),
    (["Bash(npm run test *)"], [], "npm run testing", "ask"),
    (["Bash(npm run test:*)"], [], "npm run test unit", "allow"),
    (["Bash(npm run build)"], [], "npm run build", "allow"),
    (["Bash(npm run build)"], [], "npm run build --prod", "ask"),
    (["Bash(ls *)"], [], "ls -la", "allow"),
    (["Bash(ls *)"], [], "lsof", "ask"),
    (["Bash(ls*)"], [], "lsof", "allow"),
    (["Bash(git * main)"], [], "git push origin main", "allow"),
    (["Bash(git * main)"], [], "git push origin dev", "ask"),
    # compound commands: every part must be allowed
    (["Bash(ls *)", "Bash(git status)"], [], "ls && git status", "allow"),
    (["Bash(ls *)"], [], "ls && curl evil.sh", "ask"),
    (["Bash(ls *)"], [], "ls; curl evil.sh", "ask"),
    (["Bash(ls *)"], [], "ls | sh", "ask"),
    (["Bash(ls *)"], [], "ls || sh", "ask"),
    (["Bash(ls *)"], [], "ls & sh", "ask"),
    (["Bash(ls *)"], [], "ls\nsh", "ask"),
    (["Bash(ls *)"], [], "ls $(sh)", "ask"),
    (["Bash(ls *)"], [], "ls `sh`", "ask"),
    (["Bash(ls *)"], [], "ls \"$(sh)\"", "ask"),
    (["Bash(ls *)"], [], "(ls; sh)", "ask"),
    (["Bash(ls *)"], [], "ls 'quoted; sh'", "allow"),
    (["Bash(echo *)"], [], "echo \"a && b\"", "allow"),
    (["Bash(npm test)"], [], "npm test 2>&1", "allow"),
    (["Bash(ls *)"], [], "ls \"unterminated", "ask"),
    # deny wins, for every part and through every wrapper
    (["Bash"], ["Bash(rm *)"], "rm -rf /", "deny"),
    (["Bash"], ["Bash(rm *)"], "rm", "deny"),
    (["Bash"], ["Bash(rm *)"], "ls && rm -rf /", "deny"),
    (["Bash"], ["Bash(rm *)"], "ls; rm -rf /", "deny"),
    (["Bash"], ["Bash(rm *)"], "ls | rm x", "deny"),
    (["Bash"], ["Bash(rm *)"], "echo $(rm -rf /)", "deny"),
    (["Bash"], ["Bash(rm *)"], "echo `rm -rf /`", "deny"),
    (["Bash"], ["Bash(rm *)"], "(cd / && rm -rf x)", "deny"),
    (["Bash"], ["Bash(rm *)"], "sudo rm -rf /", "deny"),
    (["Bash"], ["Bash(rm *)"], "sudo -u root -E rm -rf /", "deny"),
    (["Bash"], ["Bash(rm *)"], "env FOO=1 rm -rf /", "deny"),
    (["Bash"], ["Bash(rm *)"], "env -i PATH=/bin rm x", "deny"),
    (["Bash"], ["Bash(rm *)"], "FOO=1 BAR=2 rm x", "deny"),
    (["Bash"], ["Bash(rm *)"], "bash -c 'rm -rf /'", "deny"),
    (["Bash"], ["Bash(rm *)"], "sh -c \"echo hi; rm -rf /\"", "deny"),
    (["Bash"], ["Bash(rm *)"], "bash -lc 'rm x'", "deny"),
    (["Bash"], ["Bash(rm *)"], "sudo bash -c 'sh -c \"rm x\"'", "deny"),
    (["Bash"], ["Bash(rm *)"], "eval 'rm x'", "deny"),
    (["Bash"], ["Bash(rm *)"], "find . -name '*.o' | xargs rm", "deny"),
    (["Bash"], ["Bash(rm *)"], "xargs -n 1 -P 4 rm < list", "deny"),
    (["Bash"], ["Bash(rm *)"], "nice -n 10 rm x", "deny"),
    (["Bash"], ["Bash(rm *)"], "nohup rm x &", "deny"),
    (["Bash"], ["Bash(rm *)"], "timeout -s KILL 5 rm x", "deny"),
    (["Bash"], ["Bash(rm *)"], "command rm x", "deny"),
    (["Bash"], ["Bash(rm *)"], "exec rm x", "deny"),
    (["Bash"], ["Bash(rm *)"], "time rm x", "deny"),
    (["Bash"], ["Bash(rm *)"], "/bin/rm x", "deny"),
    (["Bash"], ["Bash(rm *)"], "\\rm x", "deny"),
    (["Bash"], ["Bash(rm *)"], "\"rm\" x", "deny"),
    (["Bash"], ["Bash(rm *)"], "r''m x", "deny"),
    (["Bash"], ["Bash(rm *)"], "$'\\x72m' x", "deny"),
    (["Bash"], ["Bash(rm *)"], "if true; then rm x; fi", "deny"),
    (["Bash"], ["Bash(rm *)"], "for f in a b; do rm $f; done", "deny"),
    (["Bash"], ["Bash(rm *)"], "diff <(rm x) y", "deny"),
    (["Bash"], ["Bash(rm *)"], "echo \"unterminated; rm -rf /", "deny"),
    (["Bash"], ["Bash(rm *)"], "ls\nrm x", "deny"),
    (["Bash"], ["Bash(rm *)"], "cat <<EOF\nhello\nEOF\nrm x", "deny"),
    (["Bash"], ["Bash(rm *)"], "rm${IFS}-rf /", "deny"),
    (["Bash"], ["Bash(rm *)"], "{rm,-rf,/}", "deny"),
    (["Bash"], ["Bash(rm *)"], "find . -name '*.tmp' -exec rm {} \\;", "deny"),
    (["Bash"], ["Bash(rm *)"], "find . -execdir rm -f {} +", "deny"),
    (["Bash"], ["Bash(rm *)"], "nohup sh -c 'rm x' &", "deny"),
    (["Bash"], ["Bash(rm *)"], "xargs sh -c 'rm \"$1\"' _", "deny"),
    (["Bash"], ["Bash(rm *)"], "f() { rm -rf /; }; f", "deny"),
    (["Bash"], ["Bash(rm *)"], "firmware-update", "allow"),
    (["Bash"], ["Bash(rm *)"], "echo rm", "allow"),
    (["Bash"], ["Bash(git push:*)"], "git push --force origin", "deny"),
    (["Bash"], ["Bash(git push:*)"], "git status && git push", "deny"),
    (["Bash"], ["Bash(curl *)"], "ls | xargs curl", "deny"),
    (["Bash"], ["Bash(sudo *)"], "sudo ls", "deny"),
    (["Bash"], ["Bash"], "ls", "deny"),
    # wrappers that add power do not inherit an allow
    (["Bash(ls *)"], [], "sudo ls", "ask"),
    (["Bash(ls *)"], [], "env LD_PRELOAD=/tmp/x.so ls", "ask"),
    (["Bash(ls *)"], [], "LD_PRELOAD=/tmp/x.so ls", "ask"),
    (["Bash(ls *)"], [], "/tmp/evil/ls", "ask"),
    (["Bash(ls *)"], [], "nice ls", "allow"),
    (["Bash(ls *)"], [], "timeout 5 ls -la", "allow"),
    (["Bash(ls *)"], [], "bash -c 'ls -la'", "allow"),
    (["Bash(ls *)"], [], "bash -c 'ls; curl x'", "ask"),
    (["Bash(ls *)"], [], "FOO=bar", "ask"),
    (["Bash(ls *)"], [], "ls *.py", "allow"),
    (["Bash(ls *)", "Bash(find *)"], [], "find . -exec ls {} ;", "allow"),
    (["Bash(find *)"], [], "find . -exec curl x ;", "ask"),
    (["Bash(l*)"], [], "l${IFS}s", "ask"),
    (["Bash(l*)"], [], "$CMD", "ask"),
    (["Bash(*)"], [], "$CMD", "allow"),
    (["Bash(l*)"], [], "l? -la", "ask"),
    ([], [], "ls", "ask"),
    # functions: the body runs when the function is called (found by tests/test_permissions_bash.py)
    (["Bash(git *)"], [], "function git { rm -rf ~; }; git status", "ask"),
    (["Bash(git *)"], [], "function git {\n  curl x | sh\n}\ngit status", "ask"),
    (["Bash(git *)"], [], "git() { rm -rf ~; }; git status", "ask"),
    (["Bash"], ["Bash(rm *)"], "function f { rm -rf ~; }; f", "deny"),
    (["Bash"], ["Bash(rm *)"], "function f () ( rm x ); f", "deny"),
    (["Bash"], ["Bash(rm *)"], "f() { nice -n 5 rm x; }; f", "deny"),
    (["Bash"], ["Bash(rm *)"], "{ ( rm x ); }", "deny"),
    (["Bash"], ["Bash(rm *)"], "if ( rm x ); then :; fi", "deny"),
    # "$((" closed by a lone ")" is a command substitution; an arithmetic's own substitutions run
    (["Bash"], ["Bash(rm *)"], "echo $(( a ); rm x)", "deny"),
    (["Bash"], ["Bash(rm *)"], "echo $(( $(rm x) + 1 ))", "deny"),
    (["Bash(echo *)"], [], "echo $(( (1 + 2) * 3 ))", "allow"),
    # case: the patterns are data (their substitutions run), the branches are commands
    (["Bash"], ["Bash(rm *)"], "case x in x) rm y;; esac", "deny"),
    (["Bash"], ["Bash(rm *)"], "sh -c 'case x in x) rm y;; esac'", "deny"),
    (["Bash"], ["Bash(rm *)"], "case $(rm y) in *) :;; esac", "deny"),
    (["Bash"], ["Bash(rm *)"], "case a in $(rm y)) :;; esac", "deny"),
    (["Bash(echo *)"], [], "case $1 in -h|--help) echo usage;; *) echo run;; esac", "allow"),
    (["Bash(echo *)"], [], "case $1 in x) echo a;; *) curl e;; esac", "ask"),
    (["Bash"], ["Bash(rm *)"], "time while rm x; do :; done", "deny"),
]


@pytest.mark.parametrize("allow,deny,command,expected", BASH_TABLE)
def test_bash_rule_table(allow, deny, command, expected):
    p = policy(allow=allow, deny=deny)
    d = p.decide("Bash", {"command": command})
    assert d.behavior == expected, d


def test_ask_rules_come_between_deny_and_allow():
    p = policy(allow=["Bash(git *)"], ask=["Bash(git push *)"], deny=["Bash(git push --force *)"])
    assert p.decide("Bash", {"command": "git status"}).behavior == "allow"
    assert p.decide("Bash", {"command": "git push origin"}).behavior == "ask"
    assert p.decide("Bash", {"command": "git push --force origin"}).behavior == "deny"
    d = p.decide("Bash", {"command": "git push origin"})
    assert d.rule == "Bash(git push *)" and d.source == "/proj/.agentloop/settings.json"


# --- path rules -------------------------------------------------------------------


@pytest.fixture
def proj(tmp_path):
    root = tmp_path.resolve() / "proj"
    (root / "secrets").mkdir(parents=True)
    (root / "secrets" / "key.txt").write_text("k")
    (root / "src" / "deep").mkdir(parents=True)
    (root / ".agentloop").mkdir()
    (root / "notes.env").write_text("")
    home = tmp_path.resolve() / "home"
    (home / ".ssh").mkdir(parents=True)
    os.symlink(root / "secrets" / "key.txt", root / "alias.txt")
    return root, home


PATH_TABLE = [
    # rule (deny), tool, input path (relative to project root, or absolute with {h}), denied?
    ("Read(./secrets/**)", "Read", "secrets/key.txt", True),
    ("Read(./secrets/**)", "Read", "src/a.py", False),
    ("Read(./secrets/**)", "Grep", "secrets", True),
    ("Read(./secrets/**)", "Glob", "secrets", True),
    ("Read(./secrets/**)", "LS", "secrets", True),
    ("Read(./secrets/**)", "Read", "alias.txt", True),
    ("Read(./secrets/**)", "Edit", "secrets/key.txt", False),
    ("Read(*.env)", "Read", "notes.env", True),
    ("Read(*.env)", "Read", "src/deep/x.env", True),
    ("Read(/src/**)", "Read", "src/deep/a.py", True),
    ("Read(/src/**)", "Read", "secrets/key.txt", False),
    ("Edit(/src/**)", "Write", "src/deep/a.py", True),
    ("Edit(/src/**)", "Edit", "src/a.py", True),
    ("Edit(/src/**)", "Read", "src/a.py", False),
    ("Write(/src/**)", "Edit", "src/a.py", True),
    ("Read(~/.ssh/**)", "Read", "{h}/.ssh/id_rsa", True),
    ("Read(~/.ssh/**)", "Read", "secrets/key.txt", False),
    ("Read(//etc/**)", "Read", "/etc/passwd", True),
    ("Read(//etc/**)", "Read", "src/etc/x", False),
]


@pytest.mark.parametrize("rule,tool,path,denied", PATH_TABLE)
def test_path_rule_table(proj, rule, tool, path, denied):
    root, home = proj
    p = policy(deny=[rule], cwd=str(root), path=str(root / ".agentloop" / "settings.json"), home=str(home))
    target = path.replace("{h}", str(home))
    key = "path" if tool in ("Grep", "Glob", "LS") else "file_path"
    d = p.decide(tool, {key: target} if tool != "Grep" else {"pattern": "x", key: target})
    assert (d.behavior == "deny") is denied, d


def test_slash_rules_are_relative_to_the_settings_files_project_not_the_cwd(proj):
    root, home = proj
    sub = root / "src"
    p = policy(deny=["Read(/secrets/**)"], cwd=str(sub), path=str(root / ".agentloop" / "settings.json"))
    assert p.decide("Read", {"file_path": str(root / "secrets" / "key.txt")}).behavior == "deny"
    q = policy(deny=["Read(./secrets/**)"], cwd=str(sub), path=str(root / ".agentloop" / "settings.json"))
    assert q.decide("Read", {"file_path": str(root / "secrets" / "key.txt")}).behavior == "allow"


def test_visible_hides_files_read_deny_rules_cover(proj):
    root, _ = proj
    p = policy(deny=["Read(./secrets/**)"], cwd=str(root))
    visible = p.visible()
    assert not visible(str(root / "secrets"))
    assert not visible(str(root / "secrets" / "key.txt"))
    assert not visible(str(root / "alias.txt"))
    assert visible(str(root / "src"))


def test_webfetch_domain_rules_and_mcp_rules():
    p = policy(allow=["WebFetch(domain:*.example.com)", "mcp__github"], deny=["mcp__db__drop*"])
    assert p.decide("WebFetch", {"url": "https://api.example.com/x"}).behavior == "allow"
    assert p.decide("WebFetch", {"url": "https://example.org/"}).behavior == "ask"
    assert p.decide("WebFetch", {"url": "https://evil.com/?q=.example.com"}).behavior == "ask"
    assert p.decide("mcp__github__create_issue", {}).behavior == "allow"
    assert p.decide("mcp__githubx__t", {}).behavior == "ask"
    assert p.decide("mcp__db__drop_table", {}).behavior == "deny"
    assert p.decide("mcp__db__query", {}).behavior == "ask"


def test_param_rules_match_an_input_field():
    p = policy(deny=["Agent(model:opus)"])
    assert p.decide("Agent", {"model": "opus"}).behavior == "deny"
    assert p.decide("Agent", {"model": "haiku"}).behavior == "allow"  # starting a sub-agent needs no permission otherwise


# --- modes ------------------------------------------------------------------------

MODE_TABLE = [
    ("default", "Read", "allow"),
    ("default", "Grep", "allow"),
    ("default", "Write", "ask"),
    ("default", "Edit", "ask"),
    ("default", "Bash", "ask"),
    ("default", "mcp__x__y", "ask"),
    ("acceptEdits", "Write", "allow"),
    ("acceptEdits", "Edit", "allow"),
    ("acceptEdits", "Bash", "ask"),
    ("plan", "Read", "allow"),
    ("plan", "Write", "deny"),
    ("plan", "Edit", "deny"),
    ("plan", "Bash", "deny"),
    ("bypassPermissions", "Bash", "allow"),
    ("bypassPermissions", "Write", "allow"),
    ("dontAsk", "Bash", "deny"),
    ("dontAsk", "Read", "allow"),
]


@pytest.mark.parametrize("mode,tool,expected", MODE_TABLE)
def test_mode_defaults(mode, tool, expected):
    p = policy(mode=mode)
    args = {"command": "make"} if tool == "Bash" else {"file_path": "/proj/a.txt", "content": "", "old_string": "a", "new_string": "b"}
    assert p.decide(tool, args).behavior == expected


def test_deny_rules_hold_even_in_bypass_mode_and_plan_mode_beats_allow_rules():
    assert policy(deny=["Bash(rm *)"], mode="bypassPermissions").decide("Bash", {"command": "rm x"}).behavior == "deny"
    assert policy(allow=["Bash(make)"], mode="plan").decide("Bash", {"command": "make"}).behavior == "deny"
    assert policy(allow=["Write"], mode="plan").decide("Write", {"file_path": "/proj/x"}).behavior == "deny"


def test_an_unknown_mode_is_refused():
    with pytest.raises(ModeError):
        policy(mode="yolo")


# --- sources ----------------------------------------------------------------------


def _write(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def test_rules_come_from_every_settings_file_and_describe_names_each_source(tmp_path):
    home = tmp_path / "home"
    cwd = tmp_path / "proj"
    _write(home / "settings.json", {"permissions": {"deny": ["Bash(curl *)"], "defaultMode": "acceptEdits"}})
    _write(cwd / ".agentloop" / "settings.json", {"permissions": {"allow": ["Bash(make *)"], "additionalDirectories": ["../lib"]}})
    _write(cwd / ".agentloop" / "settings.local.json", {"permissions": {"ask": ["Bash(make deploy)"], "defaultMode": "plan"}})
    p = PermissionPolicy.from_settings(load_settings(str(cwd), str(home)), cwd=str(cwd))
    assert p.mode == "plan"
    assert p.describe() == [
        ("deny", "Bash(curl *)", str(home / "settings.json")),
        ("ask", "Bash(make deploy)", str(cwd / ".agentloop" / "settings.local.json")),
        ("allow", "Bash(make *)", str(cwd / ".agentloop" / "settings.json")),
    ]
    assert p.additional_directories == [str((tmp_path / "lib").resolve())]
    p = PermissionPolicy.from_settings(load_settings(str(cwd), str(home)), cwd=str(cwd), mode="default")
    assert p.mode == "default"
    assert p.decide("Bash", {"command": "make deploy"}).behavior == "ask"
    assert p.decide("Bash", {"command": "make test && curl x"}).behavior == "deny"
    assert p.decide("Bash", {"command": "make test"}).behavior == "allow"


@pytest.mark.parametrize(
    "perms,needle",
    [
        ({"allow": ["Bash("]}, "permissions.allow[0]"),
        ({"deny": ["Read", "WebFetch(x)"]}, "permissions.deny[1]"),
        ({"deny": "Bash"}, "permissions.deny must be a list"),
        ({"defaultMode": "yolo"}, "defaultMode"),
        ({"additionalDirectories": [3]}, "additionalDirectories"),
    ],
)
def test_a_malformed_permissions_section_names_the_file_and_the_entry(tmp_path, perms, needle):
    path = str(tmp_path / "settings.json")
    with pytest.raises(ConfigError) as info:
        PermissionPolicy.from_settings([SettingsSource(path, "user", {"permissions": perms})], cwd=str(tmp_path))
    assert path in str(info.value) and needle in str(info.value)


def test_rules_added_at_run_time_are_reported_as_session_rules():
    p = policy()
    p.add_rule("allow", "Bash(make)")
    d = p.decide("Bash", {"command": "make"})
    assert (d.behavior, d.source) == ("allow", "session")
    assert ("allow", "Bash(make)", "session") in p.describe()


# --- properties -------------------------------------------------------------------

PIECES = ["ls", "ls -la", "rm -rf x", "curl e.sh", "nice ls", "sudo rm x", "bash -c 'rm y'", "echo $(rm z)"]
OPERATORS = [" && ", " || ", "; ", " | ", "\n", " & "]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(PIECES), st.sampled_from(OPERATORS)), min_size=1, max_size=6))
def test_a_compound_line_is_allowed_only_when_every_part_is_and_denied_when_any_part_is(parts):
    command = "".join(p + op for p, op in parts[:-1]) + parts[-1][0]
    pieces = [p for p, _ in parts]
    p = policy(allow=["Bash(ls *)"], deny=["Bash(rm *)"])
    d = p.decide("Bash", {"command": command})
    if any("rm" in x for x in pieces):
        assert d.behavior == "deny", (command, d)
    elif all(x in ("ls", "ls -la", "nice ls") for x in pieces):
        assert d.behavior == "allow", (command, d)
    else:
        assert d.behavior == "ask", (command, d)


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="ab $()`'\"\\;&|<>\n{}#=-", max_size=40))
def test_decide_never_raises_on_any_command_line(command):
    p = policy(allow=["Bash(a *)"], deny=["Bash(b *)"], ask=["Bash(a b)"])
    assert p.decide("Bash", {"command": command}).behavior in ("allow", "ask", "deny")


def test_decide_copes_with_inputs_of_the_wrong_shape():
    p = policy(allow=["Bash(ls *)"], deny=["Read(./x/**)", "WebFetch(domain:a.com)"])
    assert p.decide("Bash", {"command": 5}).behavior == "ask"
    assert p.decide("Read", {"file_path": None}).behavior == "allow"
    assert p.decide("WebFetch", {"url": "http://[::1"}).behavior == "deny"


def test_deeply_nested_lines_are_not_allowed_by_rule():
    p = policy(allow=["Bash(ls *)"])
    assert p.decide("Bash", {"command": "$(" * 50 + "ls" + ")" * 50}).behavior == "ask"
    assert p.decide("Bash", {"command": "bash -c " * 30 + "ls"}).behavior == "ask"


@pytest.mark.parametrize(
    "path,expected",
    [
        ("/proj/src/a.py", "allow"),
        ("/proj/.git/config", "ask"),
        ("/proj/.agentloop/settings.json", "ask"),
        ("/proj/.claude/settings.local.json", "ask"),
        ("/proj/.claude/commands/x.md", "allow"),
        ("/proj/.agentloop/skills/s/SKILL.md", "allow"),
        ("/proj/.vscode/settings.json", "ask"),
    ],
)
def test_bypass_mode_still_asks_before_writing_into_protected_directories(path, expected):
    p = policy(mode="bypassPermissions")
    assert p.decide("Write", {"file_path": path, "content": ""}).behavior == expected
    assert p.decide("Bash", {"command": "rm -rf .git"}).behavior == "allow"


def test_bare_name_deny_rules_remove_tools_from_the_models_view():
    p = policy(deny=["Bash", "mcp__db__*", "Read(./x/**)", "Bash(rm *)"])
    assert p.removed_tools(["Bash", "Read", "mcp__db__q", "mcp__web__get"]) == ["Bash", "mcp__db__q"]


def test_visible_follows_deny_rules_added_during_the_session(proj):
    root, _ = proj
    p = policy(cwd=str(root))
    visible = p.visible()
    assert visible(str(root / "secrets" / "key.txt"))
    p.add_rule("deny", "Read(./secrets/**)")
    assert not visible(str(root / "secrets" / "key.txt"))


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(["Read", "Write", "Edit", "Grep", "Glob", "LS", "WebFetch", "mcp__a__b", "Agent"]),
    st.dictionaries(
        st.sampled_from(["file_path", "path", "url", "model", "command", "pattern"]),
        st.one_of(st.text(), st.integers(), st.none(), st.lists(st.text(), max_size=2)),
        max_size=3,
    ),
)
def test_decide_never_raises_on_any_tool_input(tool, tool_input):
    p = policy(
        allow=["Read(./a/**)", "WebFetch(domain:a.com)", "mcp__a"],
        deny=["Edit(/x/**)", "Read(~/.ssh/**)", "Agent(model:o*)"],
        ask=["Grep(//etc/**)"],
        mode="acceptEdits",
    )
    assert p.decide(tool, tool_input).behavior in ("allow", "ask", "deny")


def test_an_ansi_c_escape_bash_keeps_literally_is_decided_without_a_warning() -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        policy = PermissionPolicy.from_settings([], cwd="/tmp")
        assert policy.decide("Bash", {"command": "echo $'\\;'"}).behavior in ("allow", "ask", "deny")
