"""The write wall's watch looks as often as the tree allows: a small tree every tenth of a second, a large
one no more often than four times what a look costs, and never less often than every half second
(docs/decisions/0014-one-write-wall-for-every-write-path.md; ``bench/bench_write_window.py`` measures the
window this leaves)."""

from __future__ import annotations

from agentloop.agent.sandbox.watch import INTERVAL_S, MIN_INTERVAL_S, next_wait


def test_a_cheap_look_is_repeated_after_the_shortest_wait() -> None:
    assert next_wait(0.001) == MIN_INTERVAL_S == 0.1


def test_a_costly_look_waits_four_times_its_cost_up_to_half_a_second() -> None:
    assert next_wait(0.05) == 0.2
    assert next_wait(0.3) == next_wait(5.0) == INTERVAL_S == 0.5
