"""Coverage-guided fuzzing of one parser with atheris (libFuzzer); run by tests/test_fuzz.py.

    python tests/atheris_fuzz.py TARGET WORKDIR [libFuzzer flags, e.g. -runs=100000 -seed=1]

TARGET is a key of ``test_fuzz.ATHERIS_TARGETS``: its seed corpus is written
to WORKDIR/corpus (where libFuzzer adds what it finds), and a crashing or
hanging input is kept as WORKDIR/crash-* or WORKDIR/timeout-*. Replay one with
``python tests/atheris_fuzz.py TARGET WORKDIR WORKDIR/crash-...``. The check
is the same function the mutation loop runs: any exception it lets out is a
finding, and libFuzzer exits non-zero.
"""

from __future__ import annotations

import os
import sys

import atheris

with atheris.instrument_imports(include=["agentloop"]):
    import test_fuzz


def main() -> None:
    target, workdir, *flags = sys.argv[1:]
    seeds, check = test_fuzz.ATHERIS_TARGETS[target]
    corpus = os.path.join(workdir, "corpus")
    os.makedirs(corpus, exist_ok=True)
    for i, seed in enumerate(seeds()):
        with open(os.path.join(corpus, f"seed-{i}"), "wb") as f:
            f.write(seed)
    os.chdir(workdir)  # libFuzzer writes crash-*/timeout-* files here
    if target == "planted":
        atheris.instrument_func(check)
    replaying = any(not f.startswith("-") for f in flags)
    atheris.Setup([sys.argv[0], *flags, *([] if replaying else [corpus])], check)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
