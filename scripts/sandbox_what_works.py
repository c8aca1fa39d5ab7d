#!/usr/bin/env python3
"""What ordinary work still does inside the Bash sandbox, measured on this machine.

    .venv/bin/python scripts/sandbox_what_works.py

Each check runs real commands through the real sandbox (the default
``workspace-write`` mode, no network, the account's home hidden but for its
toolchain folders) in a fresh workspace under /var/tmp, and prints one line:
``ok`` or ``FAILS`` with the last line the command printed. Checks whose tool is
not installed are ``skipped``. It changes nothing outside the workspace (and
the sandbox's own /tmp); the README's Security section quotes its output.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src"))

from agentloop.agent.sandbox import bubblewrap as sbx  # noqa: E402

CHECKS = [
    # a new repository is made under /tmp: in the workspace, git init is refused (record 0025)
    ("git commit (identity from ~/.gitconfig)", "git", "git init -q /tmp/r && cd /tmp/r && echo a > a && git add a && git commit -qm one && git log --oneline | wc -l"),
    ("a venv under /tmp", "python3", "python3 -m venv /tmp/v && /tmp/v/bin/python -c 'import sys; print(sys.prefix)'"),
    ("pip install from a wheel folder, offline", "python3",
     "python3 -m venv /tmp/w && mkdir -p wheels && python3 -c \"import zipfile; z = zipfile.ZipFile('wheels/demo_pkg-1-py3-none-any.whl', 'w');"
     " z.writestr('demo_pkg/__init__.py', 'X = 42'); z.writestr('demo_pkg-1.dist-info/METADATA', 'Metadata-Version: 2.1\\nName: demo-pkg\\nVersion: 1\\n');"
     " z.writestr('demo_pkg-1.dist-info/WHEEL', 'Wheel-Version: 1.0\\nGenerator: x\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n');"
     " z.writestr('demo_pkg-1.dist-info/RECORD', ''); z.close()\""
     " && /tmp/w/bin/pip -q install --no-index --find-links wheels demo-pkg && /tmp/w/bin/python -c 'import demo_pkg; print(demo_pkg.X)'"),
    ("pip's own cache folder", "python3",
     "d=$(python3 -m pip cache dir 2>/dev/null || echo ~/.cache/pip); mkdir -p $d 2>/dev/null;"
     " if touch $d/.probe 2>/dev/null; then echo \"$d: writable (a throw-away folder: you have none)\";"
     " else echo \"$d: read-only (pip, as a user other than root, then turns its cache off)\"; fi"),
    ("npm test", "npm", "mkdir -p n && cd n && printf '{\"name\":\"n\",\"version\":\"1.0.0\",\"scripts\":{\"test\":\"node -e \\\\\"console.log(6*7)\\\\\"\"}}' > package.json && npm test --silent"),
    ("cargo build (offline, no dependencies)", "cargo", "cargo new -q --vcs none c && cd c && cargo build -q --offline && ./target/debug/c"),
    ("go build", "go", "mkdir -p g && cd g && printf 'package main\\nfunc main(){println(42)}\\n' > m.go && go mod init g >/dev/null 2>&1 && go build -o m . && ./m"),
]


def main() -> int:
    home = sbx.user_home_of(os.environ)
    ws = tempfile.mkdtemp(prefix="agentloop-what-works-", dir="/var/tmp" if os.access("/var/tmp", os.W_OK) else None)
    settings = sbx.settings_from([], mode=None, cwd=ws, user_home=home)
    sb = sbx.Sandbox.create(settings, roots=[ws], agentloop_home=os.path.join(home, ".agentloop"), user_home=home)
    if not sb.active:
        print(f"no sandbox here: {sb.unavailable}")
        return 2
    failed = 0
    try:
        for name, tool, command in CHECKS:
            if shutil.which(tool) is None:
                print(f"skipped  {name} ({tool} is not installed)")
                continue
            argv, extra = sb.wrap(["/bin/bash", "-c", command], ws, command)
            p = subprocess.run(argv, cwd=ws, env={**os.environ, **extra}, capture_output=True, text=True, timeout=300)
            out = (p.stdout + p.stderr).strip().splitlines()
            note = sb.explain(command, "\n".join(out))
            failed += p.returncode != 0
            print(f"{'ok' if p.returncode == 0 else 'FAILS':<8} {name}: {out[-1] if out else '(no output)'}")
            if note:
                print(f"         {note}")
    finally:
        sb.close()
        shutil.rmtree(ws, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
