"""The runner hands results back without building the main task's repr (the repr of a large result cost seconds)."""

from __future__ import annotations

import time

from p2pd.support.eventloop import run


class _CostlyRepr:
    reprs = 0

    def __repr__(self) -> str:
        type(self).reprs += 1
        time.sleep(0.5)
        return "costly"


async def _make() -> _CostlyRepr:
    return _CostlyRepr()


def test_result_is_returned_without_its_repr() -> None:
    _CostlyRepr.reprs = 0
    result = run(_make())
    assert isinstance(result, _CostlyRepr)
    assert _CostlyRepr.reprs == 0


async def _fail() -> None:
    raise ValueError("boom")


def test_exceptions_propagate() -> None:
    try:
        run(_fail())
    except ValueError as exc:
        assert exc.args == ("boom",)
    else:  # pragma: no cover - the test fails here
        raise AssertionError("run() swallowed the exception")
