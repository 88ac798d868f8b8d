"""A small TREC RAG topic built for the nugget page tests: one question, answers of several runs with
cited sentences, judged passages, an LLM's ordered nuggets and its vital/okay and assignment labels."""

from __future__ import annotations

from dataclasses import dataclass, field

from annotation.models import Judge, Nugget, Response, Topic, Turn
from annotation.rag_nuggets import writer
from tests.factories import (
    CollectionFactory,
    JudgeFactory,
    PassageFactory,
    RelevanceJudgmentFactory,
    ResponseFactory,
    ResponseSentenceFactory,
    RunFactory,
    TopicFactory,
    TurnFactory,
)


@dataclass
class RagTopic:
    topic: Topic
    turn: Turn
    llm: Judge
    nuggets: list[Nugget]
    answers: list[Response] = field(default_factory=list)


def rag_topic(*, nuggets: int = 3, answers: int = 2, number: str = "2024-1", collection=None) -> RagTopic:
    collection = collection or CollectionFactory(name="rag24")
    topic = TopicFactory(collection=collection, number=number, title="how do bees make honey")
    turn = TurnFactory(topic=topic, turn_id=number, position=1, utterance="how do bees make honey")
    llm = Judge.objects.filter(name="gpt-4o").first() or JudgeFactory(name="gpt-4o", kind=Judge.Kind.LLM)
    qrels = JudgeFactory(name=f"qrels-{number}")
    for i in range(2):
        passage = PassageFactory(
            collection=collection, passage_id=f"{number}-doc{i}#0", text=f"Bees <b>{i}</b>"
        )
        RelevanceJudgmentFactory(judge=qrels, turn=turn, passage_id=passage.passage_id, grade=3 - i)
    writer.nugget_list_replace(
        judge=llm,
        turn=turn,
        nuggets=[writer.NuggetDraft(str(i + 1), f"nugget {i + 1} <i>text</i>") for i in range(nuggets)],
    )
    made = list(Nugget.objects.filter(judge=llm, turn=turn).order_by("position"))
    data = RagTopic(topic, turn, llm, made)
    for a in range(answers):
        response = ResponseFactory(run=RunFactory(collection=collection, name=f"run-{number}-{a}"), turn=turn)
        ResponseSentenceFactory(
            response=response, index=0, text="Bees make honey from nectar.", citations=[f"{number}-doc0#0"]
        )
        ResponseSentenceFactory(response=response, index=1, text="They fan it dry.", citations=[])
        data.answers.append(response)
    writer.importance_judgments_upsert(
        judge=llm,
        collection=collection,
        rows=[writer.ImportanceRow(n.pk, "vital" if i == 0 else "okay") for i, n in enumerate(made)],
        condition="machine",
    )
    writer.nugget_assignments_upsert(
        judge=llm,
        collection=collection,
        rows=[writer.AssignmentRow(r.pk, n.pk, "partial_support") for r in data.answers for n in made],
        condition="machine",
    )
    return data
