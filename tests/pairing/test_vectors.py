"""The pairing machine replays tests/vectors/pairing_machine.json (the browser's pairing.js replays the same file
in web/tests/pairing.test.mjs)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from p2pd.pairing.codes import parse_code
from p2pd.pairing.machine import Pairing
from tests.pairing.vectors import PATH, render

VECTORS = json.loads(PATH.read_text(encoding="utf-8"))
TRACES = VECTORS["traces"]


def machines_of(trace: dict[str, Any]) -> dict[str, Pairing]:
    return {key: Pairing(parse_code(spec["code"]), spec["role"], room=spec["room"],
                         sid=bytes.fromhex(spec["sid"]) if spec["sid"] else None, scalar=bytes.fromhex(spec["scalar"]))
            for key, spec in trace["machines"].items()}


def output_of(machine: Pairing, op: dict[str, Any]) -> dict[str, Any]:
    try:
        if op["op"] == "start":
            return {"send": machine.start(), "state": str(machine.state)}
        if op["op"] == "seal":
            return {"sealed": machine.seal(op["obj"])}
    except RuntimeError:
        return {"raises": True}
    step = machine.receive(op["data"])
    return {"send": step.send, "delivered": step.delivered, "paired": step.paired,
            "error": step.error.cause.value if step.error is not None else None, "state": str(machine.state),
            "verification": machine.verification}


@pytest.mark.parametrize("trace", TRACES, ids=[trace["name"] for trace in TRACES])
def test_the_machine_replays_the_trace(trace: dict[str, Any]) -> None:
    machines = machines_of(trace)
    for index, step in enumerate(trace["steps"]):
        got = output_of(machines[step["machine"]], step["input"])
        assert got == step["output"], f"step {index} ({step['machine']} {step['input']['op']})"


def test_the_vector_file_is_what_the_generator_writes() -> None:
    assert PATH.read_text(encoding="utf-8") == render(), "regenerate with python -m tests.pairing.vectors"


def test_the_traces_cover_every_state_and_pairing_failure() -> None:
    states = {step["output"].get("state") for trace in TRACES for step in trace["steps"]}
    assert states >= {"waiting-share", "waiting-confirm", "paired", "failed"}
    causes = {step["output"].get("error") for trace in TRACES for step in trace["steps"]}
    assert causes == {None, "wrong_code", "tampered", "role_clash", "protocol"}
    assert any(step["output"].get("raises") for trace in TRACES for step in trace["steps"])
    assert any(step["output"].get("delivered") for trace in TRACES for step in trace["steps"])

