"""The preference pairs a turn's answers give (cube_lab/chat/preferences.py, docs/chat.md)."""

from __future__ import annotations

from cube_lab.chat.preferences import Counts, build_records, turn_pairs
from cube_lab.store.models import ChatConversation, ChatMessage


def answer(mid: int, text: str, **kw: object) -> ChatMessage:
    fields = {"turn": 0, "role": "assistant", "active": False, "status": "complete"} | kw
    return ChatMessage(id=mid, content=text, **fields)


def test_rules_per_turn() -> None:
    counts = Counts()
    # an edit: the edited text over the original
    assert turn_pairs([answer(1, "a", active=True, edited="A")], counts) == [("A", "a")]
    # thumbs up over every other answer that is not up (down, unrated, stopped)
    got = turn_pairs(
        [
            answer(1, "x", rating="down"),
            answer(2, "y"),
            answer(3, "z", status="stopped"),
            answer(4, "w", rating="up", active=True),
        ],
        counts,
    )
    assert got == [("w", "x"), ("w", "y"), ("w", "z")]
    # no up: the active answer over a thumbs-down alternative
    assert turn_pairs([answer(1, "x", rating="down"), answer(2, "y", active=True)], counts) == [
        ("y", "x")
    ]
    # ... unless the active one is the thumbs-down one, or is rated down too, or stopped
    for answers in (
        [answer(1, "x"), answer(2, "y", rating="down", active=True)],
        [answer(1, "x", rating="down"), answer(2, "y", rating="down", active=True)],
        [answer(1, "x", rating="down"), answer(2, "y", status="stopped", active=True)],
    ):
        assert turn_pairs(answers, counts) == []
    # a stopped answer is never chosen, even thumbed up
    assert turn_pairs([answer(1, "x", rating="up", status="stopped", active=True)], counts) == []
    # nothing said: no pair
    assert turn_pairs([answer(1, "x", active=True), answer(2, "y")], counts) == []
    assert counts.skipped == {"no_preference": 3, "stopped": 2}


def test_records_carry_the_conversation_so_far() -> None:
    conv = ChatConversation(id=7, system="Be brief.")
    messages = [
        ChatMessage(id=1, turn=0, role="user", content="hi", active=True, status="complete"),
        answer(2, "hello", active=True, edited="Hello!"),
        ChatMessage(id=3, turn=1, role="user", content="more", active=True, status="complete"),
        answer(4, "no", turn=1, rating="down"),
        answer(5, "yes", turn=1, active=True),
    ]
    records = build_records(conv, messages, Counts())
    assert records == [
        {
            "prompt": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "hi"},
            ],
            "chosen": "Hello!",
            "rejected": "hello",
            "conversation_id": 7,
            "turn": 0,
        },
        {
            "prompt": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "Hello!"},
                {"role": "user", "content": "more"},
            ],
            "chosen": "yes",
            "rejected": "no",
            "conversation_id": 7,
            "turn": 1,
        },
    ]
