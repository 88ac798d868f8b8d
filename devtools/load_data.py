"""The relevance campaign the load benchmarks (bench/bench_assessors.py, bench/bench_stack.py) and the
outage check (scripts/outage_check.py) put assessors on: one way to build it, so their figures compare."""

from __future__ import annotations

from collections.abc import Sequence

from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.sessions.backends.db import SessionStore

from annotation.models import Collection, Passage, Pool, Ranking, Run, Topic, Turn
from annotation.relevance.pooling import pool_build

PASSAGE_TEXT = "A passage of moderate length about the topic at hand. " * 8


def load_pool_build(*, name: str, n_turns: int, per_turn: int, passage_text: str = PASSAGE_TEXT) -> Pool:
    """A collection `name` of n_turns turns (ten to a topic), one run ranking `per_turn` passages for each,
    pooled to that depth: n_turns x per_turn pairs to grade."""
    collection = Collection.objects.create(name=name)
    run = Run.objects.create(collection=collection, name="bm25")
    topics = Topic.objects.bulk_create(
        [Topic(collection=collection, number=str(t)) for t in range((n_turns + 9) // 10)]
    )
    turns = Turn.objects.bulk_create(
        [
            Turn(
                collection=collection,
                topic=topics[i // 10],
                turn_id=f"{topics[i // 10].number}_{i % 10 + 1}",
                position=i % 10 + 1,
                utterance=f"question {i}",
            )
            for i in range(n_turns)
        ]
    )
    Passage.objects.bulk_create(
        [
            Passage(collection=collection, passage_id=f"d{i}:{j}", text=passage_text)
            for i in range(n_turns)
            for j in range(per_turn)
        ],
        batch_size=5000,
    )
    Ranking.objects.bulk_create(
        [
            Ranking(
                run=run,
                turn=turn,
                passage_ids=[f"d{i}:{j}" for j in range(per_turn)],
                scores=[float(per_turn - j) for j in range(per_turn)],
            )
            for i, turn in enumerate(turns)
        ]
    )
    return pool_build(collection=collection, name=name, depth=per_turn).pool


def signed_in_sessions(users: Sequence[AbstractBaseUser]) -> list[str]:
    """A signed-in session key for each user, made in the session store: logging hundreds of people in
    would only measure password hashing."""
    keys = []
    for user in users:
        store = SessionStore()
        store[SESSION_KEY] = str(user.pk)
        store[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
        store[HASH_SESSION_KEY] = user.get_session_auth_hash()
        store.create()
        keys.append(store.session_key or "")
    return keys
