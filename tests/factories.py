"""Factories for test data; tests never hard-code primary keys."""

import factory
from django.contrib.auth import get_user_model

from annotation import models
from annotation.relevance.pooling import pool_counts_store


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ["username"]

    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.django.Password("pw-for-tests-123")


class OrganiserFactory(UserFactory):
    is_staff = True


class CollectionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.Collection

    name = factory.Sequence(lambda n: f"collection-{n}")


class TopicFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.Topic

    collection = factory.SubFactory(CollectionFactory)
    number = factory.Sequence(lambda n: str(n + 1))
    title = factory.Faker("sentence", nb_words=4)


class PtkbStatementFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.PtkbStatement

    topic = factory.SubFactory(TopicFactory)
    statement_id = factory.Sequence(lambda n: str(n + 1))
    text = factory.Faker("sentence")


class TurnFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.Turn

    topic = factory.SubFactory(TopicFactory)
    collection = factory.SelfAttribute("topic.collection")
    position = factory.Sequence(lambda n: n + 1)
    turn_id = factory.LazyAttribute(lambda o: f"{o.topic.number}_{o.position}")
    utterance = factory.Faker("sentence")
    resolved_utterance = factory.LazyAttribute(lambda o: o.utterance)
    response = factory.Faker("paragraph")


class PassageFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.Passage

    collection = factory.SubFactory(CollectionFactory)
    passage_id = factory.Sequence(lambda n: f"doc{n}:0")
    title = factory.Faker("sentence", nb_words=3)
    text = factory.Faker("paragraph", nb_sentences=6)


class RunFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.Run

    collection = factory.SubFactory(CollectionFactory)
    name = factory.Sequence(lambda n: f"run{n}")


class RankingFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.Ranking

    run = factory.SubFactory(RunFactory)
    turn = factory.SubFactory(TurnFactory)
    passage_ids = factory.LazyFunction(list)
    scores = factory.LazyAttribute(
        lambda o: [float(len(o.passage_ids) - i) for i in range(len(o.passage_ids))]
    )


class ResponseFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.Response

    run = factory.SubFactory(RunFactory)
    turn = factory.SubFactory(TurnFactory)
    rank = 1
    text = factory.Faker("paragraph")


class ResponseSentenceFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.ResponseSentence

    response = factory.SubFactory(ResponseFactory)
    index = factory.Sequence(lambda n: n)
    text = factory.Faker("sentence")
    citations = factory.LazyFunction(list)


class JudgeFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.Judge

    name = factory.Sequence(lambda n: f"judge-{n}")
    kind = models.Judge.Kind.IMPORTED


class AssessorJudgeFactory(JudgeFactory):
    kind = models.Judge.Kind.ASSESSOR
    user = factory.SubFactory(UserFactory)
    name = factory.LazyAttribute(lambda o: f"assessor:{o.user.username}")


class RelevanceJudgmentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.RelevanceJudgment

    judge = factory.SubFactory(JudgeFactory)
    turn = factory.SubFactory(TurnFactory)
    passage_id = factory.Sequence(lambda n: f"doc{n}:0")
    grade = 0


class NuggetFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.Nugget

    judge = factory.SubFactory(JudgeFactory)
    turn = factory.SubFactory(TurnFactory)
    key = factory.Sequence(lambda n: f"[{n + 1}]")
    text = factory.Faker("sentence")


# --- Relevance pooling and assignment ---


class PoolFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.Pool

    collection = factory.SubFactory(CollectionFactory)
    name = factory.Sequence(lambda n: f"pool{n}")
    depth = 10


class PoolEntryFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.PoolEntry

    pool = factory.SubFactory(PoolFactory)
    turn = factory.SubFactory(TurnFactory, topic__collection=factory.SelfAttribute("...pool.collection"))
    passage_id = factory.Sequence(lambda n: f"doc{n}:0")
    best_rank = 1
    order = factory.Sequence(lambda n: n)

    @factory.post_generation
    def counted(obj, create, extracted, **kwargs):  # noqa: N805 (factory_boy passes the object)
        """The pool keeps its counts as pool_build's entries leave them."""
        if create:
            pool_counts_store(pool=obj.pool)


def relevance_campaign(
    *,
    assessors,
    n_turns: int = 2,
    n_passages: int = 3,
    n_ptkb: int = 2,
    redundancy: int = 1,
    unit_kind: str = "turn",
    lease_minutes: int = 60,
    passage_texts=None,
):
    """A conversation whose turns each pool `n_passages` passages of one run, handed to `assessors`."""
    from annotation.relevance.assignments import assignment_create
    from annotation.relevance.pooling import pool_build

    collection = CollectionFactory()
    topic = TopicFactory(collection=collection)
    for _ in range(n_ptkb):
        PtkbStatementFactory(topic=topic)
    run = RunFactory(collection=collection)
    texts = list(passage_texts or [])
    for position in range(1, n_turns + 1):
        turn = TurnFactory(topic=topic, position=position)
        ids = []
        for _ in range(n_passages):
            text = texts.pop(0) if texts else None
            passage = PassageFactory(collection=collection, **({"text": text} if text is not None else {}))
            ids.append(passage.passage_id)
        RankingFactory(run=run, turn=turn, passage_ids=ids)
    pool = pool_build(collection=collection, name="pool", depth=n_passages).pool
    return assignment_create(
        pool=pool,
        name=f"assign-{collection.name}",
        assessors=assessors,
        unit_kind=unit_kind,
        redundancy=redundancy,
        lease_minutes=lease_minutes,
    )
