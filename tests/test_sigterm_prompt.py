"""SIGTERM while a prompt_toolkit prompt runs ends the prompt as Ctrl+C would, never inside its tasks.

Raising KeyboardInterrupt from the signal handler can land inside one of
prompt_toolkit's coroutines; it then reports an unhandled error and waits
for Enter, and the REPL never exits (seen once in CI: SIGTERM at the prompt,
no exit within 40 s). The handler now asks the running prompt to end from
its own loop. tests/test_repl_pty.py checks the whole REPL in a terminal.
"""

from __future__ import annotations

import os
import signal
import threading

import pytest
from prompt_toolkit import PromptSession
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from agentloop.cli.agent_entry import Signals, _end_prompt


def test_sigterm_at_a_running_prompt_ends_it_with_keyboardinterrupt_and_marks_terminating() -> None:
    signals = Signals()
    old = signal.getsignal(signal.SIGTERM)
    signals.install()
    raised_in_handler: list[bool] = []
    real = signals._on_term

    def watched(signum: int, frame: object) -> None:
        try:
            real(signum, frame)
        except KeyboardInterrupt:
            raised_in_handler.append(True)
            raise
        raised_in_handler.append(False)

    signal.signal(signal.SIGTERM, watched)
    try:
        with create_pipe_input() as inp:
            session: PromptSession[str] = PromptSession(input=inp, output=DummyOutput())
            timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGTERM))
            unblock = threading.Timer(10, inp.send_text, ("\r",))  # the old behaviour waited for Enter
            timer.start()
            unblock.start()
            try:
                with pytest.raises(KeyboardInterrupt):
                    session.prompt("> ")
            finally:
                unblock.cancel()
    finally:
        signal.signal(signal.SIGTERM, old)
    assert signals.terminating
    assert raised_in_handler == [False], "the handler raised instead of ending the prompt from its loop"


def test_with_no_prompt_running_the_handler_raises_keyboardinterrupt() -> None:
    assert _end_prompt() is False
    signals = Signals()
    with pytest.raises(KeyboardInterrupt):
        signals._on_term(signal.SIGTERM, None)
    assert signals.terminating
