"""Judge menus offer the judges with labels of the task in the collection (the kept `JudgeLabels`), each
menu in one query."""

import pytest
from django import forms
from django.urls import reverse

from annotation.judge_menus import (
    judge_fields,
    judge_names_by_task,
    judges_with_label_counts,
    judges_with_labels,
    label_conditions,
)
from annotation.models import (
    NUGGET_LABEL_FAILED,
    Condition,
    Judge,
    Nugget,
    NuggetImportanceJudgment,
    SupportJudgment,
    Turn,
)
from judging.models import JudgeJob
from tests.factories import (
    CollectionFactory,
    JudgeFactory,
    OrganiserFactory,
    RelevanceJudgmentFactory,
    ResponseFactory,
    ResponseSentenceFactory,
    RunFactory,
    TopicFactory,
    TurnFactory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def menus():
    """Collection `here` with a relevance judge and a support judge; `there` with a judge of its own."""
    here, there = CollectionFactory(name="here"), CollectionFactory(name="there")
    turn = TurnFactory(topic=TopicFactory(collection=here), collection=here)
    grader = JudgeFactory(name="grader-here", kind=Judge.Kind.LLM)
    RelevanceJudgmentFactory(judge=grader, turn=turn, passage_id="p1", grade=2)
    supporter = JudgeFactory(name="supporter-here", kind=Judge.Kind.LLM)
    sentence = ResponseSentenceFactory(
        response=ResponseFactory(run=RunFactory(collection=here), turn=turn), citations=["p1"]
    )
    SupportJudgment.objects.create(
        judge=supporter,
        sentence=sentence,
        citation_index=0,
        passage_id="p1",
        label="FS",
        condition=Condition.MACHINE,
    )
    elsewhere = JudgeFactory(name="grader-there", kind=Judge.Kind.LLM)
    RelevanceJudgmentFactory(
        judge=elsewhere, turn=TurnFactory(topic=TopicFactory(collection=there), collection=there)
    )
    JudgeFactory(name="no-labels", kind=Judge.Kind.LLM)
    return here, there


def test_it_lists_the_judges_with_labels_of_each_task_in_one_query(menus, django_assert_num_queries):
    here, _there = menus

    with django_assert_num_queries(1):
        relevance = list(judges_with_labels(collection=here, task="relevance").values_list("name", flat=True))
    with django_assert_num_queries(1):
        by_task = judge_names_by_task(collection=here, tasks=["relevance", "support", "ntr"])

    assert relevance == ["grader-here"]
    assert by_task == {"relevance": ["grader-here"], "support": ["supporter-here"], "ntr": []}
    with pytest.raises(ValueError, match="unknown task 'vibes'"):
        judges_with_labels(collection=here, task="vibes")


def test_a_menu_narrowed_to_conditions_or_widened_to_several_tasks_is_one_query(
    menus, django_assert_num_queries
):
    here, _there = menus
    blind = JudgeFactory(name="blind-here")
    SupportJudgment.objects.create(
        judge=blind,
        sentence=SupportJudgment.objects.get().sentence,
        citation_index=0,
        passage_id="p1",
        label="PS",
        condition=Condition.BLIND,
    )

    with django_assert_num_queries(1):
        machine = [
            j.name
            for j in judges_with_labels(collection=here, task="support", conditions=[Condition.MACHINE])
        ]
    with django_assert_num_queries(1):
        either = [j.name for j in judges_with_labels(collection=here, task=("relevance", "support"))]

    assert machine == ["supporter-here"]
    assert either == ["blind-here", "grader-here", "supporter-here"]
    assert label_conditions(collection=here, task="support") == {Condition.MACHINE, Condition.BLIND}


def test_the_label_counts_are_the_judges_labels_here_in_one_query(menus, django_assert_num_queries):
    here, there = menus
    grader = Judge.objects.get(name="grader-here")
    RelevanceJudgmentFactory(judge=grader, turn=Turn.objects.get(collection=here), passage_id="p2")

    with django_assert_num_queries(1):
        counts = [(j.name, j.labels) for j in judges_with_label_counts(collection=here, task="relevance")]
    among = judges_with_label_counts(
        collection=there, task="relevance", judges=Judge.objects.exclude(name="grader-there")
    )

    assert counts == [("grader-here", 2)]
    assert list(among) == []


def test_a_judge_whose_labels_are_all_no_judgment_is_not_offered():
    collection = CollectionFactory()
    turn = TurnFactory(topic=TopicFactory(collection=collection), collection=collection)
    nugget = Nugget.objects.create(judge=JudgeFactory(), turn=turn, key="1", text="a nugget")
    failed, labelled = JudgeFactory(name="all-failed"), JudgeFactory(name="one-vital")
    NuggetImportanceJudgment.objects.create(judge=failed, nugget=nugget, importance=NUGGET_LABEL_FAILED)
    NuggetImportanceJudgment.objects.create(judge=labelled, nugget=nugget, importance="vital")

    offered = judges_with_labels(collection=collection, task="nugget-importance")

    assert [j.name for j in offered] == ["one-vital"]


def menu_of(page: str, field: str) -> str:
    return page.split(f'name="{field}"')[1].split("</select>")[0]


def test_the_ranking_page_offers_this_collections_judges_under_their_task(client, menus):
    client.force_login(OrganiserFactory())

    url = reverse("judging:agreement-ranking", args=["here"])

    response = client.get(url)

    assert response.status_code == 200
    menu = menu_of(response.content.decode(), "a")
    assert '<optgroup label="relevance">' in menu and '<optgroup label="support">' in menu
    assert menu.index("grader-here") < menu.index("supporter-here")  # nDCG@5 reads relevance labels
    assert "grader-there" not in menu and "no-labels" not in menu
    query = {"measure": "support-weighted-recall", "a": "supporter-here", "b": "grader-there"}
    chosen = menu_of(client.get(url, query).content.decode(), "b")
    assert chosen.index("supporter-here") < chosen.index("grader-here")
    assert "grader-there" not in chosen


def test_the_hybrid_page_offers_this_collections_judges(client, menus):
    client.force_login(OrganiserFactory())

    response = client.get(reverse("judging:hybrid-estimate", args=["here"]))

    assert response.status_code == 200
    page = response.content.decode()
    for field in ("human_judge", "machine_judge"):
        menu = menu_of(page, field)
        assert "grader-here" in menu and "supporter-here" in menu
        assert "grader-there" not in menu and "no-labels" not in menu


def test_the_jobs_page_suggests_only_judges_that_ran_the_task_on_the_collection(client, menus):
    here, there = menus
    for collection, name in ((here, "grader-here"), (there, "grader-there")):
        JudgeJob.objects.create(
            collection=collection,
            judge=Judge.objects.get(name=name),
            task="relevance",
            model="gpt-4o",
            prompt_version="relevance_v1",
        )
    client.force_login(OrganiserFactory())

    response = client.get(reverse("judging:job-list"), {"collection": "here", "task": "relevance"})

    assert response.status_code == 200
    suggested = response.content.decode().split('id="judges-relevance">')[1].split("</datalist>")[0]
    assert suggested == '<option value="grader-here">'


class TwoMenus(forms.Form):
    machine = forms.ModelChoiceField(queryset=Judge.objects.none(), to_field_name="name")
    others = forms.ModelMultipleChoiceField(
        queryset=Judge.objects.none(), to_field_name="name", required=False
    )


def test_two_menus_of_the_same_judges_read_them_once_and_take_only_them(menus, django_assert_num_queries):
    here, _there = menus
    form = TwoMenus()
    judge_fields(form, judges_with_labels(collection=here, task="relevance"), ["machine", "others"])

    with django_assert_num_queries(1):
        html = form.as_p()

    assert '<option value="" selected>---------</option>' in html  # the single menu's empty choice
    assert html.count('<option value="grader-here">grader-here</option>') == 2
    assert "grader-there" not in html and "supporter-here" not in html
    chosen = TwoMenus({"machine": "grader-here", "others": ["grader-there"]})
    judge_fields(chosen, judges_with_labels(collection=here, task="relevance"), ["machine", "others"])
    assert not chosen.is_valid()
    assert list(chosen.errors) == ["others"]  # a judge of another collection is refused, as before
