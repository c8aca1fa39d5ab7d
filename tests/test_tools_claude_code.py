"""The built-in tools behave as a model trained on Claude Code (and Codex) expects, run for real on disk.

The references: Claude Code's tools reference (https://code.claude.com/docs/en/tools-reference:
"Read ... Reads up to 2000 lines by default ... images ... PDF files ... Jupyter notebooks";
Edit and Write "require a prior Read" of an existing file; Glob returns paths "sorted by
modification time"; Grep's parameters as its tool schema names them) and Codex's apply_patch
format (openai/codex, codex-rs/apply-patch: ``*** Begin Patch`` ... ``*** End Patch`` with
Add File, Delete File, Update File, Move to, ``@@`` hunks).
"""

from __future__ import annotations

import base64
import json
import os
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest

from agentloop.agent.tools.builtin import READ_MAX_CHARS
from agentloop.agent.tools.catalog import builtin_registry
from agentloop.agent.tools.session_tools import SessionLink
from agentloop.agent.tools.workspace import Workspace
from agentloop.events import ToolCall


class Env:
    def __init__(self, tmp_path: Path, **kw: Any):
        self.root = tmp_path.resolve() / "ws"
        self.root.mkdir()
        self.link = kw.pop("session", None) or SessionLink()
        self.reg = builtin_registry(Workspace(str(self.root)), spill_dir=str(tmp_path / "spill"), session=self.link, **kw)

    def call(self, name: str, **args: Any) -> Any:
        return self.reg.invoke(ToolCall("c1", name, args))

    def ok(self, name: str, **args: Any) -> Any:
        r = self.call(name, **args)
        assert r.ok, r.error
        return r.content

    def err(self, name: str, **args: Any) -> str:
        r = self.call(name, **args)
        assert not r.ok, r.content
        return str(r.error)


@pytest.fixture
def env(tmp_path: Path) -> Env:
    return Env(tmp_path)


def png(width: int = 1, height: int = 1) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = b"".join(b"\0" + b"\xff\x00\x00" * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def pdf(pages: list[str]) -> bytes:
    """A small valid PDF whose pages each show one line of text (Helvetica)."""
    n = len(pages)
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>",
            ("<< /Type /Pages /Kids [" + " ".join(f"{4 + 2 * i} 0 R" for i in range(n)) + f"] /Count {n} >>").encode(),
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    for i, text in enumerate(pages):
        stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
        objs.append((f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> "
                     f"/Contents {5 + 2 * i} 0 R >>").encode())
        objs.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    out = b"%PDF-1.4\n"
    offsets = []
    for k, o in enumerate(objs, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % k + o + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    out += b"".join(b"%010d 00000 n \n" % off for off in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    return out


# --- Read ---------------------------------------------------------------------------------


def test_read_gives_2000_lines_by_default_and_honours_offset_and_limit(env: Env) -> None:
    """Tools reference, Read: up to 2000 lines by default, offset and limit for the rest (a 3,000-line
    file used to come back as lines 1-128)."""
    (env.root / "long.py").write_text("".join(f"x = {i}\n" for i in range(1, 3001)))
    out = env.ok("Read", file_path="long.py")
    assert "  2000\tx = 2000\n" in out and "  2001\t" not in out
    assert out.endswith("[showing lines 1-2000 of 3000; call Read with offset=2001 to continue]\n")
    out = env.ok("Read", file_path="long.py", offset=2990, limit=5)
    assert out.splitlines()[:5] == [f"  {n}\tx = {n}" for n in range(2990, 2995)]


def test_a_read_page_stops_near_25k_tokens_and_says_how_to_continue(env: Env) -> None:
    (env.root / "wide.txt").write_text("".join(f"{i:05d} {'w' * 190}\n" for i in range(2000)))
    out = env.ok("Read", file_path="wide.txt")
    assert READ_MAX_CHARS - 2_000 < len(out) <= READ_MAX_CHARS + 200
    last = int(out.rsplit("offset=", 1)[1].split()[0])
    assert "the page stopped at about 25,000 tokens" in out and 400 < last < 2000
    nxt = env.ok("Read", file_path="wide.txt", offset=last)
    assert nxt.startswith(f"{last:>6}\t{last - 1:05d} ")


def test_a_line_over_2000_characters_is_cut(env: Env) -> None:
    (env.root / "one.txt").write_text("a" * 5000 + "\n")
    out = env.ok("Read", file_path="one.txt")
    assert "a" * 2000 + " ... [line truncated, 5000 characters]" in out and "a" * 2001 not in out


def test_an_image_is_read_as_an_image_block_whatever_its_name(env: Env) -> None:
    data = png(2, 2)
    (env.root / "shot.png").write_bytes(data)
    (env.root / "misnamed.dat").write_bytes(data)
    for name in ("shot.png", "misnamed.dat"):
        got = env.ok("Read", file_path=name)
        text, image = got["content"]
        assert text["type"] == "text" and name in text["text"]
        assert image == {"type": "image", "mimeType": "image/png", "data": base64.b64encode(data).decode()}


@pytest.mark.parametrize("vendor", ["openai:gpt-4o-mini", "anthropic:claude-haiku-4-5"])
def test_a_read_image_reaches_both_providers_as_their_native_image(tmp_path: Path, vendor: str) -> None:
    """The image goes the way MCP images go (providers/images.py): an Anthropic image block inside the
    tool_result, an OpenAI image_url in the user message after the tool messages."""
    from agentloop import Budget, run
    from agentloop.providers import open_model
    from agentloop.testing.fakeprovider import FakeProvider

    e = Env(tmp_path)
    (e.root / "pic.png").write_bytes(png())
    script = {"replies": [{"tool_calls": [{"name": "Read", "arguments": {"file_path": "pic.png"}}]}, {"text": "red"}]}
    with FakeProvider(script) as fp:
        m = open_model(vendor, base_url=fp.url + ("/v1" if vendor.startswith("openai") else ""), env={}, max_attempts=1)
        r = run(m, e.reg, "what colour?", Budget(max_steps=3))
        second = fp.requests[1]["body"]
    assert r.answer == "red"
    if vendor.startswith("openai"):
        url = second["messages"][-1]["content"][1]["image_url"]["url"]
    else:
        (res,) = [b for x in second["messages"] for b in x["content"] if b.get("type") == "tool_result"]
        (img,) = [b for b in res["content"] if b["type"] == "image"]
        url = f"data:{img['source']['media_type']};base64,{img['source']['data']}"
    assert base64.b64decode(url.split(",", 1)[1]) == png()


def test_a_pdf_is_read_as_text_page_by_page_with_pages(env: Env) -> None:
    (env.root / "doc.pdf").write_bytes(pdf(["alpha page", "beta page", "gamma page"]))
    out = env.ok("Read", file_path="doc.pdf")
    assert out.startswith("PDF doc.pdf: 3 pages")
    assert "--- page 1 ---\nalpha page" in out and "--- page 3 ---\ngamma page" in out
    two = env.ok("Read", file_path="doc.pdf", pages="2")
    assert "beta page" in two and "alpha" not in two and "gamma" not in two
    assert "the PDF has 3 pages" in env.err("Read", file_path="doc.pdf", pages="7")
    (env.root / "doc.pdf.txt").write_text("x\n")
    assert "pages applies to PDF files only" in env.err("Read", file_path="doc.pdf.txt", pages="1")


def test_a_pdf_of_many_pages_comes_20_at_a_time(env: Env) -> None:
    (env.root / "big.pdf").write_bytes(pdf([f"text {i}" for i in range(1, 26)]))
    out = env.ok("Read", file_path="big.pdf")
    assert "--- page 20 ---" in out and "--- page 21 ---" not in out
    assert 'call Read with pages="21-25" to continue' in out


NOTEBOOK = {
    "cells": [
        {"cell_type": "markdown", "id": "intro", "metadata": {}, "source": ["# Title\n", "words"]},
        {"cell_type": "code", "id": "calc", "metadata": {}, "execution_count": 1, "source": "print(6 * 7)",
         "outputs": [{"output_type": "stream", "name": "stdout", "text": ["42\n"]},
                     {"output_type": "display_data", "data": {"image/png": "AAAA", "text/plain": ["<Figure>"]}, "metadata": {}}]},
        {"cell_type": "code", "id": "boom", "metadata": {}, "execution_count": 2, "source": "1/0",
         "outputs": [{"output_type": "error", "ename": "ZeroDivisionError", "evalue": "division by zero",
                      "traceback": ["ZeroDivisionError: division by zero"]}]},
    ],
    "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5,
}


def test_a_notebook_is_read_as_cells_with_their_outputs(env: Env) -> None:
    (env.root / "nb.ipynb").write_text(json.dumps(NOTEBOOK))
    out = env.ok("Read", file_path="nb.ipynb")
    assert out.startswith("Notebook nb.ipynb: 3 cells, language python")
    assert '<cell id="intro" type="markdown">\n# Title\nwords\n</cell>' in out
    assert '<cell id="calc" type="code">\nprint(6 * 7)\n</cell>\n<outputs of="calc">\n42\n\n<Figure>\n[image/png output not shown]' in out
    assert "ZeroDivisionError: division by zero" in out
    assert '"cells"' not in out  # not the raw JSON


def test_notebook_edit_replaces_inserts_and_deletes_cells(env: Env) -> None:
    """Tools reference, NotebookEdit: "Modify Jupyter notebook cells" (cell_id, new_source, cell_type, edit_mode)."""
    nb = env.root / "nb.ipynb"
    nb.write_text(json.dumps(NOTEBOOK))
    assert "has not been read" in env.err("NotebookEdit", notebook_path="nb.ipynb", cell_id="calc", new_source="x")
    env.ok("Read", file_path="nb.ipynb")
    env.ok("NotebookEdit", notebook_path="nb.ipynb", cell_id="calc", new_source="print(7 * 6)\nprint('again')")
    cells = json.loads(nb.read_text())["cells"]
    assert cells[1]["source"] == ["print(7 * 6)\n", "print('again')"] and cells[1]["outputs"] == []
    assert cells[1]["execution_count"] is None
    out = env.ok("NotebookEdit", notebook_path="nb.ipynb", cell_id="intro", new_source="## Added", cell_type="markdown", edit_mode="insert")
    cells = json.loads(nb.read_text())["cells"]
    assert [c["cell_type"] for c in cells] == ["markdown", "markdown", "code", "code"] and cells[1]["source"] == ["## Added"]
    assert cells[1]["id"] not in ("intro", "calc", "boom") and "position 1" in out
    env.ok("NotebookEdit", notebook_path="nb.ipynb", cell_id="boom", new_source="", edit_mode="delete")
    assert [c.get("id") for c in json.loads(nb.read_text())["cells"]] == ["intro", cells[1]["id"], "calc"]
    assert "no cell with id 'nope'" in env.err("NotebookEdit", notebook_path="nb.ipynb", cell_id="nope", new_source="x")
    assert nb.read_text().endswith("}\n") and '\n "cells"' in nb.read_text()  # Jupyter's one-space indent


# --- Edit and Write that hold -----------------------------------------------------------------


def test_edit_and_write_of_an_unread_file_are_refused_until_it_is_read(env: Env) -> None:
    """Tools reference: Edit and Write of an existing file require a prior Read of it."""
    f = env.root / "app.py"
    f.write_text("x = 1\n")
    assert "has not been read in this session" in env.err("Edit", file_path="app.py", old_string="1", new_string="2")
    assert "Read it first" in env.err("Write", file_path="app.py", content="y\n")
    assert f.read_text() == "x = 1\n"
    env.ok("Read", file_path="app.py", limit=1)
    env.ok("Edit", file_path="app.py", old_string="1", new_string="2")
    env.ok("Edit", file_path="app.py", old_string="2", new_string="3")  # its own change counts as read
    env.ok("Write", file_path="new.py", content="fresh\n")  # a new file needs no Read
    env.ok("Write", file_path="new.py", content="again\n")
    assert f.read_text() == "x = 3\n" and (env.root / "new.py").read_text() == "again\n"


def test_a_file_changed_on_disk_since_it_was_read_is_refused_until_read_again(env: Env) -> None:
    f = env.root / "app.py"
    f.write_text("x = 1\n")
    env.ok("Read", file_path="app.py")
    f.write_text("x = 1\ny = 2\n")  # a formatter, the user, a command
    msg = env.err("Edit", file_path="app.py", old_string="x = 1", new_string="x = 9")
    assert "changed on disk since you last read it" in msg
    assert "changed on disk" in env.err("Write", file_path="app.py", content="z\n")
    assert f.read_text() == "x = 1\ny = 2\n"
    env.ok("Read", file_path="app.py")
    env.ok("Edit", file_path="app.py", old_string="x = 1", new_string="x = 9")
    assert f.read_text() == "x = 9\ny = 2\n"


def test_a_crlf_file_is_edited_across_lines_and_keeps_its_crlf(env: Env) -> None:
    f = env.root / "win.txt"
    f.write_bytes(b"one\r\ntwo\r\nthree\r\n")
    out = env.ok("Read", file_path="win.txt")
    assert "\r" not in out  # Read shows the lines without their \r, so the model writes \n
    env.ok("Edit", file_path="win.txt", old_string="one\ntwo", new_string="uno\ndos\nextra")
    assert f.read_bytes() == b"uno\r\ndos\r\nextra\r\nthree\r\n"


def test_straight_quotes_match_a_files_curly_quotes_and_the_file_keeps_its_style(env: Env) -> None:
    f = env.root / "prose.md"
    f.write_text("She said \u201chello\u201d and it\u2019s fine.\n")
    env.ok("Read", file_path="prose.md")
    env.ok("Edit", file_path="prose.md", old_string='said "hello" and it\'s', new_string='said "goodbye" and it\'s')
    assert f.read_text() == "She said \u201cgoodbye\u201d and it\u2019s fine.\n"


def test_curly_quotes_in_old_string_match_a_files_straight_quotes(env: Env) -> None:
    f = env.root / "code.py"
    f.write_text('name = "x"\n')
    env.ok("Read", file_path="code.py")
    env.ok("Edit", file_path="code.py", old_string="name = \u201cx\u201d", new_string='name = "y"')
    assert f.read_text() == 'name = "y"\n'


def test_fifos_devices_and_sparse_files_are_refused_before_they_are_opened(env: Env) -> None:
    os.mkfifo(env.root / "pipe")  # opening it for reading would block for ever
    for tool, args in (("Read", {}), ("Edit", {"old_string": "a", "new_string": "b"}), ("Write", {"content": "x"})):
        assert "not a regular file (a FIFO)" in env.err(tool, file_path="pipe", **args)
    with open(env.root / "holes.txt", "wb") as f:
        f.write(b"text\n")
        f.truncate(2 << 30)
    assert "binary" in env.err("Read", file_path="holes.txt")  # Read streams: its first 8 KiB decide
    assert "sparse file" in env.err("Edit", file_path="holes.txt", old_string="text", new_string="t")
    assert os.path.getsize(env.root / "holes.txt") == 2 << 30


# --- Grep and Glob ---------------------------------------------------------------------------


@pytest.fixture
def tree(env: Env) -> Env:
    r = env.root
    (r / "src").mkdir()
    (r / "src" / "a.py").write_text("import os\nfoo = 1\nbar = foo + 1\nfoo()\n")
    (r / "src" / "b.py").write_text("foo = 2\n")
    (r / "src" / "c.js").write_text("const foo = 3;\n")
    (r / ".gitignore").write_text("dist/\n")
    (r / "dist").mkdir()
    (r / "dist" / "out.py").write_text("foo = 'built'\n")
    os.utime(r / "src" / "b.py", (1_000_000, 1_000_000))
    return env


def test_grep_type_takes_language_names_as_ripgrep_types(tree: Env) -> None:
    out = tree.ok("Grep", pattern="foo", type="python")
    assert out.splitlines()[1:] == [f"{tree.root}/src/a.py", f"{tree.root}/src/b.py"]
    assert tree.ok("Grep", pattern="foo", type="py") == out
    assert "unknown file type 'cobol'" in tree.err("Grep", pattern="foo", type="cobol")


def test_grep_count_mode_ends_with_the_total(tree: Env) -> None:
    out = tree.ok("Grep", pattern="foo", output_mode="count")
    assert out.splitlines()[-1] == "Found 5 matches in 3 files"


def test_grep_only_matching_context_and_offset(tree: Env) -> None:
    a = f"{tree.root}/src/a.py"
    only = tree.ok("Grep", pattern=r"foo \+ \d", path="src/a.py", output_mode="content", **{"-o": True})
    assert only == f"{a}:3:foo + 1"
    ctx = tree.ok("Grep", pattern="bar", path="src/a.py", output_mode="content", context=1)
    assert ctx.splitlines() == [f"{a}-2-foo = 1", f"{a}:3:bar = foo + 1", f"{a}-4-foo()"]
    page = tree.ok("Grep", pattern="foo", path="src", output_mode="content", head_limit=2, offset=1)
    lines = page.splitlines()
    assert lines[:2] == [f"{a}:3:bar = foo + 1", f"{a}:4:foo()"]
    assert lines[2] == "(showing results 2-3 of 5; call again with offset=3 to see more)"


def test_glob_includes_files_git_ignores_newest_first(tree: Env) -> None:
    out = tree.ok("Glob", pattern="**/*.py").splitlines()
    assert set(out) == {f"{tree.root}/src/a.py", f"{tree.root}/src/b.py", f"{tree.root}/dist/out.py"}
    assert out[-1] == f"{tree.root}/src/b.py"  # the oldest last
    assert tree.ok("Glob", pattern="src/*.js") == f"{tree.root}/src/c.js"
    assert tree.ok("Glob", pattern="./src/*.js") == f"{tree.root}/src/c.js"


# --- apply_patch -----------------------------------------------------------------------------


def test_apply_patch_adds_updates_moves_and_deletes_files(env: Env) -> None:
    r = env.root
    (r / "app.py").write_text("def greet():\n    print('Hi')\n\n\ndef main():\n    greet()\n")
    (r / "old.txt").write_text("bye\n")
    (r / "win.txt").write_bytes(b"a\r\nb\r\n")
    patch = """*** Begin Patch
*** Add File: docs/hello.txt
+Hello
+world
*** Update File: app.py
*** Move to: main.py
@@ def greet():
-    print('Hi')
+    print('Hello, world!')
*** Update File: win.txt
 a
-b
+c
*** Delete File: old.txt
*** End Patch"""
    out = env.ok("apply_patch", input=patch)
    assert out.splitlines()[1:] == ["A docs/hello.txt", "R app.py -> main.py", "M win.txt", "D old.txt"]
    assert (r / "docs" / "hello.txt").read_text() == "Hello\nworld\n"
    assert (r / "main.py").read_text() == "def greet():\n    print('Hello, world!')\n\n\ndef main():\n    greet()\n"
    assert not (r / "app.py").exists() and not (r / "old.txt").exists()
    assert (r / "win.txt").read_bytes() == b"a\r\nc\r\n"


def test_a_patch_with_a_hunk_that_does_not_match_changes_nothing(env: Env) -> None:
    r = env.root
    (r / "a.txt").write_text("one\ntwo\n")
    patch = "*** Begin Patch\n*** Add File: new.txt\n+x\n*** Update File: a.txt\n-three\n+four\n*** End Patch"
    msg = env.err("apply_patch", input=patch)
    assert "a.txt, hunk 1: these lines were not found" in msg
    assert not (r / "new.txt").exists() and (r / "a.txt").read_text() == "one\ntwo\n"
    assert "must start with" in env.err("apply_patch", input="--- a/x\n+++ b/x\n")


def test_apply_patch_matches_context_that_differs_only_in_whitespace_or_punctuation(env: Env) -> None:
    (env.root / "t.py").write_text("x = 1   \ns = \"a\u2014b\"\n")
    env.ok("apply_patch", input='*** Begin Patch\n*** Update File: t.py\n x = 1\n-s = "a-b"\n+s = "c"\n*** End Patch')
    assert (env.root / "t.py").read_text() == "x = 1   \ns = \"c\"\n"


def test_apply_patch_stays_in_the_workspace_and_obeys_the_guard(tmp_path: Path) -> None:
    e = Env(tmp_path, patch_guard=lambda p: "denied by the rule Edit(secret/**)" if "/secret/" in p else None)
    (e.root / "secret").mkdir()
    (e.root / "secret" / "k.txt").write_text("k\n")
    msg = e.err("apply_patch", input="*** Begin Patch\n*** Delete File: secret/k.txt\n*** End Patch")
    assert "may not change secret/k.txt: denied by the rule" in msg and (e.root / "secret" / "k.txt").exists()
    assert "outside the workspace" in e.err("apply_patch", input="*** Begin Patch\n*** Add File: ../escape.txt\n+x\n*** End Patch")
    assert not (tmp_path / "escape.txt").exists()


# --- TodoWrite, ExitPlanMode, AskUserQuestion --------------------------------------------------


def test_todo_write_keeps_the_list_in_the_session_and_returns_it(env: Env) -> None:
    todos = [{"content": "Run the tests", "status": "completed", "activeForm": "Running the tests"},
             {"content": "Fix the bug", "status": "in_progress", "activeForm": "Fixing the bug"},
             {"content": "Commit", "status": "pending", "activeForm": "Committing"}]
    out = env.ok("TodoWrite", todos=todos)
    assert out == "Task list updated (1 of 3 done):\n[x] Run the tests\n[>] Fix the bug\n[ ] Commit"
    assert env.link.todos == todos
    assert "invalid arguments" in env.err("TodoWrite", todos=[{"content": "x", "status": "doing"}])


def test_exit_plan_mode_asks_the_user_and_leaves_plan_mode_when_approved(tmp_path: Path) -> None:
    state = {"mode": "plan", "asked": []}
    answers = [{"approve": False}, {"approve": True}]

    def ask(source: str, message: str, schema: dict[str, Any]) -> dict[str, Any]:
        state["asked"].append(schema["properties"]["approve"]["description"])
        return answers.pop(0)

    def leave() -> str:
        state["mode"] = "default"
        return "default"

    e = Env(tmp_path, session=SessionLink(ask=lambda: ask, plan_mode=lambda: state["mode"] == "plan", leave_plan=leave))
    assert "did not approve" in e.err("ExitPlanMode", plan="1. edit x\n2. test")
    assert state["mode"] == "plan"
    assert "Plan mode is off" in e.ok("ExitPlanMode", plan="1. edit x\n2. test")
    assert state["mode"] == "default" and state["asked"] == ["1. edit x\n2. test"] * 2
    assert "not in plan mode" in e.ok("ExitPlanMode", plan="again")


def test_with_nobody_to_ask_the_session_tools_refuse_with_what_to_do(tmp_path: Path) -> None:
    e = Env(tmp_path, session=SessionLink(plan_mode=lambda: True))
    assert "End your turn with the plan" in e.err("ExitPlanMode", plan="the plan")
    q = [{"question": "Which database?", "header": "DB", "options": [{"label": "SQLite"}, {"label": "Postgres"}]}]
    assert "Choose the option that fits" in e.err("AskUserQuestion", questions=q)


def test_ask_user_question_puts_the_options_to_the_user(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []

    def ask(source: str, message: str, schema: dict[str, Any]) -> dict[str, Any]:
        seen.append(schema)
        return {"q0": "Postgres", "q1": "logs, metrics"}

    e = Env(tmp_path, session=SessionLink(ask=lambda: ask))
    q = [{"question": "Which database?", "header": "DB", "options": [{"label": "SQLite", "description": "a file"}, {"label": "Postgres"}]},
         {"question": "What to keep?", "multiSelect": True, "options": [{"label": "logs"}, {"label": "metrics"}]}]
    out = e.ok("AskUserQuestion", questions=q)
    assert out == "The user answered:\nWhich database? -> Postgres\nWhat to keep? -> logs, metrics"
    assert seen[0]["properties"]["q0"]["enum"] == ["SQLite", "Postgres"]


def test_every_parameter_of_claude_codes_bash_is_accepted_and_anything_else_gets_the_schemas_answer(env: Env) -> None:
    """Claude Code's Bash takes command, timeout, description, run_in_background and
    dangerouslyDisableSandbox (tools reference): none of them costs the model a turn here."""
    bash = next(t for t in env.reg if t.name == "Bash")
    assert bash.validate({"command": "true", "timeout": 1000, "description": "d", "run_in_background": False,
                          "dangerouslyDisableSandbox": False}) == []
    assert "Additional properties" in env.err("Bash", command="true", bogus=1)


