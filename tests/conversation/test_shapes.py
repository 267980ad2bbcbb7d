"""The model-free pieces (:mod:`p2pd.conversation.shapes`) say what the models say."""

from __future__ import annotations

import random

from p2pd.conversation import media_types as mt
from p2pd.conversation.model import Counts, Message, Part, Role
from p2pd.conversation.shapes import Tally


def test_tally_has_the_counts_fields_in_order() -> None:
    assert list(Tally().to_json_dict()) == list(Counts().to_json_dict())


def test_tally_counts_as_counts_do() -> None:
    seed = random.randrange(1 << 30)
    print("seed", seed)
    rng = random.Random(seed)
    tally, counts = Tally(), Counts()
    media = [mt.TEXT, mt.TOOL_USE, mt.TOOL_RESULT, mt.THINKING]
    for n in range(200):
        parts = [Part(text="x", media_type=rng.choice(media)) for _ in range(rng.randrange(1, 4))]
        m = Message(message_id=str(n), role=rng.choice(list(Role)), parts=parts,
                    metadata={"p2pd": {"active": rng.random() < 0.8}})
        tally.add(m)
        counts.add(m)
    tally.source_lines = counts.source_lines = 7
    assert tally.to_json_dict() == counts.to_json_dict()
    assert tally.tool_calls and tally.side_branch_messages  # the draw did exercise the branches
