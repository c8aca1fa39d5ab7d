"""The REPL's working line: nothing during its grace period, nothing after stop, and erased."""

from __future__ import annotations

import threading

from agentloop.cli.spinner import Spinner


def test_a_quick_stop_inside_the_grace_period_draws_nothing() -> None:
    writes: list[str] = []
    s = Spinner(writes.append, grace_s=5)
    s.start("thinking")
    s.stop()
    assert writes == [] and not s.running


def test_after_stop_returns_the_line_is_erased_and_nothing_more_is_written() -> None:
    writes: list[str] = []
    drawn = threading.Event()

    def write(text: str) -> None:
        writes.append(text)
        drawn.set()

    s = Spinner(write, grace_s=0, interval_s=0.005)
    s.start("running Bash")
    assert drawn.wait(5)
    s.stop()
    n = len(writes)
    assert writes[-1] == "\r\x1b[2K" and "running Bash… 0s" in writes[0]
    threading.Event().wait(0.05)
    assert len(writes) == n, "the thread has ended"
    s.stop()  # a second stop is harmless
    assert len(writes) == n


def test_what_was_typed_is_drawn_on_the_line_below_within_the_width_and_both_lines_are_erased() -> None:
    writes: list[str] = []
    drawn = threading.Event()

    def write(text: str) -> None:
        writes.append(text)
        if "> " in text:
            drawn.set()

    s = Spinner(write, grace_s=0, interval_s=0.005, columns=lambda: 30)
    s.typed = "a long line the user is typing while the model works"
    s.start("thinking")
    assert drawn.wait(5)
    s.stop()
    below = next(w for w in writes if "> " in w).split("\n", 1)[1]
    shown = below.removeprefix("\x1b[2K").split("\x1b[1A")[0]
    assert shown.startswith("> …") and shown.endswith("model works") and len(shown) <= 29
    assert writes[-1] == "\r\x1b[2K\n\x1b[2K\x1b[1A\r"  # the working line and the one under it
