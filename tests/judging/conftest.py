"""Fixtures of the judging tests: a loopback OpenAI-compatible server the LLM client is pointed at, a tiny
random NLI model saved to disk, an organiser's client, the two relevance collections the hybrid
tests share, and stored reports computed within the request."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from annotation.models import Pool, PoolEntry, RelevanceJudgment
from annotation.relevance.pooling import pool_counts_store
from tests.factories import (
    CollectionFactory,
    JudgeFactory,
    OrganiserFactory,
    RankingFactory,
    RunFactory,
    TopicFactory,
    TurnFactory,
)
from tests.judging.fake_openai import FakeOpenAI
from tests.judging.helpers import PASSAGES, TURNS
from tests.judging.nli_model import build_tiny_nli_model


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Built once per run: the tests only read it."""
    return build_tiny_nli_model(tmp_path_factory.mktemp("tiny-nli"))


@pytest.fixture
def fake_openai(settings):
    """A running fake server; settings point the LLM client at it with short timeouts and backoff."""
    server = FakeOpenAI().start()
    settings.OPENAI_BASE_URL = server.url
    settings.OPENAI_API_KEY = "sk-test"
    settings.AZURE_OPENAI_ENDPOINT = ""
    settings.OPENAI_MODEL = "gpt-4o-mini"
    settings.LLM_TIMEOUT = 1.0
    settings.LLM_MAX_RETRIES = 3
    settings.LLM_BACKOFF_BASE = 0.01
    yield server
    server.stop()


@pytest.fixture
def organiser(client):
    client.force_login(OrganiserFactory())
    return client


@pytest.fixture
def hybrid_collection():
    """The collection "hybrid": 40 turns of 6 pooled passages, 3 runs; a human grades every pair, two machines grade noisily."""
    rng = np.random.default_rng(0)
    collection = CollectionFactory(name="hybrid")
    human, machine, second = JudgeFactory(name="nist"), JudgeFactory(name="llm"), JudgeFactory(name="llm-b")
    runs = [RunFactory(collection=collection, name=f"run{i}") for i in range(3)]
    pool = Pool.objects.create(collection=collection, name="pool", depth=PASSAGES)
    rows, entries = [], []
    for t in range(TURNS):
        topic = TopicFactory(collection=collection, number=str(t + 1))
        turn = TurnFactory(topic=topic, position=1)
        ids = [f"d{t}_{p}" for p in range(PASSAGES)]
        grades = rng.integers(0, 5, PASSAGES)
        for p, (pid, grade) in enumerate(zip(ids, grades, strict=True)):
            entries.append(PoolEntry(pool=pool, turn=turn, passage_id=pid, best_rank=p + 1, order=p))
            rows.append(RelevanceJudgment(judge=human, turn=turn, passage_id=pid, grade=int(grade)))
            for judge in (machine, second):
                noisy = int(np.clip(grade + rng.integers(-1, 2), 0, 4))
                rows.append(RelevanceJudgment(judge=judge, turn=turn, passage_id=pid, grade=noisy))
        for i, run in enumerate(runs):
            order = list(rng.permutation(ids)) if i else sorted(ids, key=lambda d: -grades[ids.index(d)])
            RankingFactory(run=run, turn=turn, passage_ids=order, scores=list(range(PASSAGES, 0, -1)))
    RelevanceJudgment.objects.bulk_create(rows)
    PoolEntry.objects.bulk_create(entries)
    pool_counts_store(pool=pool)
    return collection


@pytest.fixture
def views_collection():
    """The collection "views": 12 turns of 3 passages, two runs (one named with HTML), nist and llm."""
    collection = CollectionFactory(name="views")
    human, machine = JudgeFactory(name="nist"), JudgeFactory(name="llm")
    runs = [
        RunFactory(collection=collection, name="<b>bold</b>"),
        RunFactory(collection=collection, name="plain"),
    ]
    rows = []
    for t in range(12):
        turn = TurnFactory(topic=TopicFactory(collection=collection), position=1)
        for p in range(3):
            rows.append(RelevanceJudgment(judge=human, turn=turn, passage_id=f"d{t}{p}", grade=(t + p) % 5))
            rows.append(
                RelevanceJudgment(judge=machine, turn=turn, passage_id=f"d{t}{p}", grade=(t + 2 * p) % 5)
            )
        for i, run in enumerate(runs):
            ids = [f"d{t}{p}" for p in (range(3) if i else range(2, -1, -1))]
            RankingFactory(run=run, turn=turn, passage_ids=ids, scores=[3, 2, 1])
    RelevanceJudgment.objects.bulk_create(rows)
    return collection
