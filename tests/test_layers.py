"""The package's layers hold: scripts/check_layers.py passes on the tree and catches a breach."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "check_layers.py"
SRC = ROOT / "src" / "agentloop"


def _check(src: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), str(src)], capture_output=True, text=True, timeout=60)


def _copy(tmp_path: Path) -> Path:
    dst = tmp_path / "agentloop"
    shutil.copytree(SRC, dst, ignore=shutil.ignore_patterns("*.so", "__pycache__", "*.c"))
    return dst


def test_the_package_follows_its_layers_and_has_no_new_cycle() -> None:
    r = _check(SRC)
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_core_module_importing_the_agent_fails_the_check(tmp_path: Path) -> None:
    src = _copy(tmp_path)
    loop = src / "loop.py"
    loop.write_text(loop.read_text() + "\n\ndef _leak() -> None:\n    from .agent.permissions import rules  # noqa\n")
    r = _check(src)
    assert r.returncode == 1
    assert "agentloop.loop (core) imports agentloop.agent.permissions.rules (agent)" in r.stdout


def test_the_core_importing_the_test_kit_or_the_demo_fails_the_check(tmp_path: Path) -> None:
    src = _copy(tmp_path)
    budget = src / "budget.py"
    budget.write_text(budget.read_text() + "\nfrom agentloop.testing import reply  # noqa\nfrom agentloop.demo import run_demo  # noqa\n")
    r = _check(src)
    assert r.returncode == 1
    assert "(core) imports agentloop.testing (testing)" in r.stdout
    assert "(core) imports agentloop.demo (demo)" in r.stdout


def test_a_new_import_cycle_fails_the_check(tmp_path: Path) -> None:
    src = _copy(tmp_path)
    (src / "batch" / "ledger.py").write_text((src / "batch" / "ledger.py").read_text() + "\nfrom . import runner  # noqa\n")
    r = _check(src)
    assert r.returncode == 1
    assert "import cycle:" in r.stdout and "agentloop.batch.ledger" in r.stdout


def test_the_agent_or_the_batch_runner_importing_the_test_kit_fails_the_check(tmp_path: Path) -> None:
    """Production code takes the scripted model from its provider (providers/scripted.py), never from the test kit."""
    src = _copy(tmp_path)
    for rel in ("agent/model_options.py", "batch/worker.py"):
        f = src / rel
        f.write_text(f.read_text() + "\n\ndef _kit() -> None:\n    from ..testing import ScriptedModel  # noqa\n")
    r = _check(src)
    assert r.returncode == 1
    assert "agentloop.agent.model_options (agent) imports agentloop.testing (testing)" in r.stdout
    assert "agentloop.batch.worker (batch) imports agentloop.testing (testing)" in r.stdout


def test_no_shipped_module_imports_the_test_kit() -> None:
    """Only the test kit itself imports ``agentloop.testing``: the CLI (rewind's model that is never asked)
    and the demo (the scripted provider's model) do not."""
    import ast

    found = []
    for p in sorted(SRC.rglob("*.py")):
        rel = p.relative_to(SRC).with_suffix("").as_posix()
        if rel.startswith("testing/"):
            continue
        package = ["agentloop", *rel.split("/")[:-1]]
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            names: list[str] = []
            if isinstance(node, ast.ImportFrom):
                base = ".".join(package[: len(package) - node.level + 1]) if node.level else ""
                module = ".".join(x for x in (base, node.module or "") if x)
                names = [module] + [f"{module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            if any(n == "agentloop.testing" or n.startswith("agentloop.testing.") for n in names):
                found.append(rel)
    assert found == []


def test_the_cli_or_the_demo_importing_the_test_kit_fails_the_check(tmp_path: Path) -> None:
    src = _copy(tmp_path)
    for rel in ("cli/cmd_rewind.py", "demo/anchor_act.py"):
        f = src / rel
        f.write_text(f.read_text() + "\n\ndef _kit() -> None:\n    from agentloop.testing import FunctionModel  # noqa\n")
    r = _check(src)
    assert r.returncode == 1
    assert "agentloop.cli.cmd_rewind (cli) imports agentloop.testing (testing)" in r.stdout
    assert "agentloop.demo.anchor_act (demo) imports agentloop.testing (testing)" in r.stdout
