"""The machines against the behaviour vectors (tests/vectors/transfer_traces.json, also replayed by the browser's
tests), and their state tables against SPEC.md's "Allowed frames" lists."""

from __future__ import annotations

import json
import re
from enum import Enum
from pathlib import Path
from typing import Any

import pytest

from p2pd.transfer import receiver, sender
from p2pd.transfer.frames import Code, FrameType
from p2pd.transfer.receiver import ReceiverState
from p2pd.transfer.sender import SenderState
from tests.transfer.traces import PATH, build, dumps, new_machine, outcome, payload

SPEC = Path(receiver.__file__).with_name("SPEC.md")
_FILE = json.loads(PATH.read_text(encoding="utf-8"))
# the version-1 traces (the page replays them too) and those of streamed transfers (SPEC.md §12; the reference only)
TRACES: list[dict[str, Any]] = _FILE["traces"] + _FILE["streamed_traces"]


@pytest.mark.parametrize("trace", TRACES, ids=lambda t: t["name"])
def test_machine_replays_trace(trace: dict[str, Any]) -> None:
    m = new_machine(trace["machine"], trace["config"])
    data = payload(trace["config"]["compressed_size"]) if trace["machine"] == "sender" else b""
    for n, step in enumerate(trace["steps"]):
        expected = {k: step[k] for k in ("actions", "result", "state") if k in step}
        assert outcome(m, step, data) == expected, f"step {n}: {step['call']}"
    assert m.state.value == trace["end"]["state"]
    if "code" in trace["end"]:
        assert m.failure is not None
        assert (m.failure.code, m.failure.by_peer) == (trace["end"]["code"], trace["end"]["by_peer"])


def test_vector_file_is_what_the_generator_writes() -> None:
    """A change to the machines' behaviour or to the scenarios shows up here first (regenerate on purpose)."""
    assert json.loads(PATH.read_text(encoding="utf-8")) == json.loads(dumps(build()))


def test_traces_cover_the_scenarios_the_spec_names() -> None:
    ends = {(t["machine"], t["end"].get("code"), t["end"].get("by_peer")) for t in TRACES}
    for machine in ("sender", "receiver"):
        assert (machine, None, None) in ends  # completed
        assert (machine, Code.CANCELLED, True) in ends and (machine, Code.CANCELLED, False) in ends
        assert (machine, Code.PROTOCOL, False) in ends
    for end in [(Code.DECLINED, True), (Code.BUSY, True), (Code.CHECKSUM, True)]:
        assert ("sender", *end) in ends
    for end in [(Code.DECLINED, False), (Code.BUSY, False), (Code.CHECKSUM, False), (Code.TOO_LARGE, False)]:
        assert ("receiver", *end) in ends
    resumed = [t for t in TRACES if "resume" in t["name"] and t["end"]["state"] == "completed"]
    assert {t["machine"] for t in resumed} == {"sender", "receiver"}
    assert any(step.get("have") for t in resumed for step in t["steps"])  # the receiver accepts held ranges


@pytest.mark.parametrize(("machine", "allowed", "states"), [
    ("sender", sender.ALLOWED, SenderState), ("receiver", receiver.ALLOWED, ReceiverState)])
def test_every_disallowed_frame_has_a_trace(machine: str, allowed: dict[Any, frozenset[FrameType]],
                                            states: type[Enum]) -> None:
    names = {t["name"] for t in TRACES}
    stop = {FrameType.CANCEL, FrameType.ERROR}
    for state in states:
        if state.value in ("idle", "completed", "failed"):
            continue
        for ftype in set(FrameType) - allowed[state] - stop:
            assert f"{machine}-{state.value}-refuses-{ftype.name}" in names


def spec_allowed(heading: str) -> dict[str, set[str]]:
    """The "Allowed frames" paragraph under ``heading`` in SPEC.md, as state → frame type names."""
    text = SPEC.read_text(encoding="utf-8")
    section = text[text.index(heading):]
    section = section[:section.index("\n#", 1)]
    match = re.search(r"Allowed frames: (.*?)\. Anything else", section, re.S)
    assert match, f"no 'Allowed frames' list under {heading}"
    table: dict[str, set[str]] = {}
    everywhere: set[str] = set()
    for item in " ".join(match.group(1).split()).split(";"):
        item = item.strip()
        every = re.fullmatch(r"and ([A-Z, ]+) in every state from await-hello until the transfer ends", item)
        if every:
            everywhere = {name.strip() for name in every.group(1).split(",")}
            continue
        state, _, frames = item.partition(":")
        table[state.strip()] = set() if frames.strip() == "none" else {f.strip() for f in frames.split(",")}
    assert everywhere, "the spec no longer says which frames every state takes"
    return {state: frames | everywhere for state, frames in table.items()}


@pytest.mark.parametrize(("heading", "allowed", "states"), [
    ("### Sender states", sender.ALLOWED, SenderState), ("### Receiver states", receiver.ALLOWED, ReceiverState)])
def test_state_table_is_the_specs_allowed_frames(heading: str, allowed: dict[Any, frozenset[FrameType]],
                                                 states: type[Enum]) -> None:
    spec = spec_allowed(heading)
    listed = {state.value for state in states} - {"idle", "completed", "failed"}
    assert set(spec) == listed  # the spec names every state that takes frames, and no other
    for state in states:
        names = {ftype.name for ftype in allowed[state]}
        assert names == spec.get(state.value, set()), state
