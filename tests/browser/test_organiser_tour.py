"""The organiser's whole tour in real Chromium, as a new organiser who never opens a terminal: a collection
from the public iKAT 2024 files by upload, a pool, two assessors who grade in their own browsers, a third
invited by a link that is renewed (the old one then refused), an in-platform crowd campaign answered
through its study address, an LLM judge against the loopback fake as `make run` starts it, a human sample
drawn against that judge and handed to an assessor, the agreement report, and the qrels downloaded and
checked against NIST's.

Only the organiser's own account is made outside the pages. Two turns keep it fast. The iKAT 2024
passage texts are not public (ClueWeb22), so the pool's six passages are uploaded with texts of iKAT 2023
passages as stand-ins (the pages need something to show); the assessors type NIST's official grades
for their passages, so the qrels the organiser downloads must agree with NIST's file line for line.

With ASSAY_TOUR_SCREENSHOTS=1 each step saves docs/tour/NN-step.png (1280x800), which the docs' tutorial
(docs/tutorial.md) shows; without it the test writes nothing. bench/bench_tour.py runs it twice: as it is, and
with ASSAY_TOUR_REAL_SIZE=1, which first builds a collection of real size beside the tour's own (so the
home page, the people, jobs and organise pages and every judge menu carry it), each time writing how long
each step took to the file ASSAY_TOUR_TIMINGS names.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest
from playwright.sync_api import expect

from annotation.models import Judge, RelevanceJudgment, Turn
from crowd.models import CrowdAnswer, CrowdCampaign
from devtools.openai_server import FakeOpenAI, toy_responder
from judging.models import HumanSample, JudgeJob
from tests.background import IMMEDIATE
from tests.factories import OrganiserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TURNS = ["8_4", "9_2"]
DEPTH = 3
PASSWORD = "pw-for-tests-123"
TOUR = Path(__file__).resolve().parents[2] / "docs" / "tour"
VIEWPORT = {"width": 1280, "height": 800}


class Tour:
    """Numbered screenshots of the steps, written only when ASSAY_TOUR_SCREENSHOTS=1."""

    def __init__(self) -> None:
        self.enabled = os.environ.get("ASSAY_TOUR_SCREENSHOTS") == "1"
        self.count = 0
        self.names: list[str] = []
        self.seconds: list[float] = []  # each step's time, from the previous step's picture to its own
        self.last = time.monotonic()
        if self.enabled:
            TOUR.mkdir(parents=True, exist_ok=True)

    def shot(self, page, step: str) -> None:
        self.count += 1
        self.names.append(f"{self.count:02d}-{step}.png")
        now = time.monotonic()
        self.seconds.append(now - self.last)
        if self.enabled:
            path = TOUR / self.names[-1]
            page.screenshot(path=str(path), full_page=False)
            # A 64-colour palette keeps the committed pictures small; pages are flat colours and text.
            from PIL import Image

            with Image.open(path) as picture:
                small = picture.convert("RGB").quantize(colors=64)
            small.save(path, optimize=True)
        self.last = time.monotonic()  # the picture's own time is not the step's

    def timings_write(self) -> None:
        target = os.environ.get("ASSAY_TOUR_TIMINGS")
        if target:
            Path(target).write_text(json.dumps(dict(zip(self.names, self.seconds, strict=True)), indent=1))


def _login(page, username: str) -> None:
    page.goto("/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("#login-submit")
    page.wait_for_url(re.compile(r"/$"))


def _upload(page, collection: str, kind: str, path: Path, **options: str) -> None:
    page.goto(f"/console/collections/{collection}/")
    page.select_option("#id_kind", kind)
    for name, value in options.items():
        page.fill(f"#id_{name}", value)
    page.set_input_files("#id_file", str(path))
    page.click("#upload-submit")
    page.wait_for_selector("#import-done", timeout=30_000)


def _welcome(browser, base_url: str, link: str):
    """The invitation link opened by its owner, in their own browser."""
    context = browser.new_context(base_url=base_url, viewport=VIEWPORT)
    page = context.new_page()
    page.set_default_timeout(10_000)
    page.goto(link)
    return context, page


def _invite(browser, page, base_url: str, username: str) -> None:
    """The organiser invites someone without a password, then renews the link: the first link is refused,
    the new one shows the user name and sets the password the invited person logs in with."""
    page.fill("#id_username", username)
    page.select_option("#id_role", "assessor")
    page.click("#person-create")
    page.wait_for_url("**/console/people/")
    first = page.locator(".messages").inner_text().rsplit(": ", 1)[1].strip()
    page.locator(f'#people tr[data-person="{username}"] .invitation-renew').click()
    page.wait_for_url("**/console/people/")
    expect(page.locator(".messages")).to_contain_text(f"{username} is invited again")
    second = page.locator(".messages").inner_text().rsplit(": ", 1)[1].strip()
    assert second != first

    context, welcome = _welcome(browser, base_url, first)
    expect(welcome.locator("#welcome-invalid")).to_be_visible()
    context.close()
    context, welcome = _welcome(browser, base_url, second)
    expect(welcome.locator("#welcome-username")).to_have_text(username)
    welcome.fill("#id_new_password1", PASSWORD)
    welcome.fill("#id_new_password2", PASSWORD)
    welcome.click("#welcome-submit")
    welcome.wait_for_url("**/accounts/login/")
    _login(welcome, username)
    context.close()


def _words(text: str) -> set[str]:
    return {word for word in re.findall(r"[a-z]+", text.lower()) if len(word) > 3}


def _files(shared: Path, out: Path) -> dict[str, object]:
    """From the shared files: the pool's passages (stand-in texts: the iKAT 2023 passages sharing most words
    with each turn), gold nuggets copied as sentences of them, and NIST's grades for the pool's pairs."""
    run = json.loads((shared / "ikat2024" / "sample_run.json").read_text())
    pooled = {
        turn["turn_id"]: [p["id"] for p in turn["responses"][0]["passage_provenance"][:DEPTH]]
        for turn in run["turns"]
        if turn["turn_id"] in TURNS
    }
    topics = json.loads((shared / "ikat2024" / "2024_test_topics.json").read_text())
    asked = {
        f"{topic['number']}_{turn['turn_id']}": _words(f"{topic['title']} {turn['resolved_utterance']}")
        for topic in topics
        for turn in topic["turns"]
    }
    with (shared / "ikat2023" / "2023_test_topics_psg_text.jsonl").open() as lines:
        texts = [" ".join(json.loads(line)["passage_text"].split()) for line in lines]
    texts_by_id: dict[str, str] = {}
    for turn in TURNS:
        ranked = sorted(texts, key=lambda text: -len(asked[turn] & _words(text)))
        fresh = [text for text in ranked if text not in texts_by_id.values()]
        texts_by_id.update(zip(pooled[turn], fresh, strict=False))
    passages = out / "pool-passages.jsonl"
    passages.write_text(
        "".join(json.dumps({"id": pid, "text": text}) + "\n" for pid, text in texts_by_id.items())
    )

    nuggets = out / "gold-nuggets.jsonl"
    rows = []
    for turn in TURNS:
        pid = pooled[turn][0]
        sentences = list(re.finditer(r"[^.!?]+[.!?]", texts_by_id[pid]))[:2]
        for key, sentence in enumerate(sentences, start=1):
            start = sentence.start() + len(sentence.group()) - len(sentence.group().lstrip())
            rows.append(
                {
                    "turn_id": turn,
                    "nugget_id": f"[{key}]",
                    "text": texts_by_id[pid][start : sentence.end()],
                    "passage_id": pid,
                    "start": start,
                    "end": sentence.end(),
                    "relevance": "2",
                    "duplicate_of": None,
                }
            )
    nuggets.write_text("".join(json.dumps(row) + "\n" for row in rows))

    nist: dict[tuple[str, str], int] = {}
    for line in (shared / "ikat2024" / "2024_test_qrels.trec").read_text().splitlines():
        qid, _, pid, grade = line.split()
        if qid in pooled and pid in pooled[qid]:
            nist[(qid, pid)] = int(grade)
    return {"passages": passages, "nuggets": nuggets, "nist": nist}


def _assess(
    browser, base_url: str, username: str, nist: dict[tuple[str, str], int], tour: Tour | None
) -> str:
    """An assessor logs in in their own browser and grades one unit with the keyboard; NIST's grades."""
    context = browser.new_context(base_url=base_url, viewport=VIEWPORT)
    page = context.new_page()
    page.set_default_timeout(10_000)
    _login(page, username)
    page.goto("/relevance/")
    expect(page.locator("button[id^=start-]")).to_be_focused()
    if tour:
        tour.shot(page, "assessor-queue")
    page.keyboard.press("Enter")
    expect(page.locator("#grade-form")).to_be_visible()
    turn = ""
    for index in range(DEPTH):
        expect(page).to_have_url(re.compile(rf"/relevance/work/\d+/\d+/{index}/$"))
        page.wait_for_selector("html[data-hotkeys-ready]", state="attached")
        passage = page.locator("#passage-id").text_content()
        turn = next(t for (t, pid) in nist if pid == passage)
        page.keyboard.press(str(nist[(turn, passage)]))
        if tour and index == 1:
            page.evaluate("window.scrollTo(0, 0)")
            tour.shot(page, "assessor-grades")
        page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/relevance/$"))
    expect(page.locator(".units")).to_contain_text("complete")
    context.close()
    return turn


@pytest.fixture
def llm(settings):
    """The loopback OpenAI-compatible fake, answering each judge prompt in the form it asks for, set up as
    `make run` sets it up (scripts/run.sh): the site points at it and knows it is the local fake."""
    fake = FakeOpenAI(model_responder=toy_responder).start()
    settings.OPENAI_BASE_URL = fake.url
    settings.OPENAI_API_KEY = ""
    settings.LOCAL_FAKES = ["llm"]
    yield fake
    fake.stop()


def test_a_new_organiser_runs_the_whole_ikat_campaign_in_the_browser(
    browser, live_server, shared_data, settings, tmp_path, llm
):
    # The judge job and the large upload run inside their requests (the immediate backend): the suite's
    # SQLite database lives in this process's memory, where no worker process reaches it;
    # tests/judging/machine/test_llm_jobs_views.py pins the queue and its worker.
    settings.TASKS = IMMEDIATE
    files = _files(shared_data, tmp_path)
    nist: dict[tuple[str, str], int] = files["nist"]  # type: ignore[assignment]
    assert len(nist) == len(TURNS) * DEPTH  # every pooled pair has an official grade
    # The 277 KB topics file is imported in the background while its page follows it.
    settings.CONSOLE_INLINE_IMPORT_BYTES = 250 * 1024
    if os.environ.get("ASSAY_TOUR_REAL_SIZE") == "1":
        from devtools.realsize import REAL, realsize_build

        ikat = shared_data / "ikat2024"
        realsize_build(
            size=REAL, topics_path=ikat / "2024_test_topics.json", qrels_path=ikat / "2024_test_qrels.trec"
        )
    tour = Tour()
    errors: list[str] = []

    OrganiserFactory(username="olga")
    context = browser.new_context(base_url=live_server.url, viewport=VIEWPORT)
    page = context.new_page()
    page.set_default_timeout(10_000)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    _login(page, "olga")
    tour.shot(page, "home")

    # 1. A collection, and its files by upload.
    page.click("#new-collection")
    page.fill("#id_name", "ikat24")
    page.fill("#id_description", "TREC iKAT 2024 test topics, the sample run")
    tour.shot(page, "new-collection")
    page.click("#collection-create")
    page.wait_for_url("**/console/collections/ikat24/")
    page.select_option("#id_kind", "topics")
    page.set_input_files("#id_file", str(shared_data / "ikat2024" / "2024_test_topics.json"))
    page.click("#upload-submit")
    page.wait_for_selector("#import-done", timeout=30_000)
    rows = page.locator("#import-result tbody tr").all_inner_texts()
    assert [row.split("\t")[:2] for row in rows] == [
        ["topics", "17"],
        ["turns", "218"],
        ["PTKB statements", "288"],
    ]
    tour.shot(page, "topics-imported")
    _upload(page, "ikat24", "run", shared_data / "ikat2024" / "sample_run.json")
    _upload(page, "ikat24", "passages", files["passages"])  # type: ignore[arg-type]
    page.goto("/console/collections/ikat24/")
    tour.shot(page, "collection-files")

    # 2. A pool: the run's top 3 of two turns.
    page.click("#console-nav >> text=Pools")
    page.fill("#id_name", "tour")
    page.fill("#id_depth", str(DEPTH))
    page.fill("#id_turns", " ".join(TURNS))
    tour.shot(page, "pool-form")
    page.click("#pool-build")
    page.wait_for_url("**/pools/tour/")
    assert "pairs over 2 turns" in page.locator("#pool-summary").inner_text()
    tour.shot(page, "pool")

    # 3. Two assessors, and the pool's two turns handed out to them.
    page.goto("/console/people/")
    for username in ("ana", "ben"):
        page.fill("#id_username", username)
        page.select_option("#id_role", "assessor")
        page.fill("#id_password", PASSWORD)
        page.click("#person-create")
        page.wait_for_url("**/console/people/")
    for username in ("olga", "ana", "ben"):  # beside the real-size collection's assessors, when built
        expect(page.locator("#people tbody tr", has_text=username)).to_have_count(1)
    tour.shot(page, "people")
    _invite(browser, page, live_server.url, "cy")
    page.goto("/console/collections/ikat24/work/")
    page.select_option("#id_pool", page.locator("#id_pool option", has_text="tour").get_attribute("value"))
    page.fill("#id_name", "tour-relevance")
    for username in ("ana", "ben"):
        page.locator("#relevance-work-form label", has_text=username).locator("input").check()
    page.uncheck("#id_with_ptkb")
    tour.shot(page, "work-form")
    page.click("#relevance-assign")
    page.wait_for_url("**/console/collections/ikat24/work/")
    expect(page.locator("#assignments tbody tr").first).to_contain_text("tour-relevance")

    # 4. Each assessor grades a unit in their own browser, with the keyboard.
    graded = {
        username: _assess(browser, live_server.url, username, nist, tour if username == "ana" else None)
        for username in ("ana", "ben")
    }
    assert sorted(graded.values()) == sorted(TURNS)
    page.goto("/console/collections/ikat24/dashboard/")
    tour.shot(page, "dashboard")

    # 5. Gold nuggets, and an in-platform crowd campaign answered through a panel's study address.
    _upload(page, "ikat24", "nuggets", files["nuggets"], judge="gold")  # type: ignore[arg-type]
    page.goto("/crowd/campaigns/new/?collection=ikat24")
    page.fill("#id_name", "tour-ntr")
    page.select_option("#id_provider", CrowdCampaign.Provider.PLATFORM)
    page.select_option("#id_nugget_judge", "gold")
    page.fill("#id_batch_size", "4")
    page.fill("#id_tests_per_batch", "0")
    page.fill("#id_assignments", "1")
    page.fill("#id_generate_tests", "0")
    tour.shot(page, "crowd-compose")
    page.click("#campaign-compose button[type=submit]")
    page.wait_for_url("**/crowd/campaigns/tour-ntr/")
    page.fill("#id_completion_code", "TOUR2024")
    page.click("#action-study button[type=submit]")
    page.wait_for_selector(".crowd-study")
    address = page.locator(".crowd-study code").first.text_content()
    tour.shot(page, "crowd-campaign")

    participant = browser.new_context(viewport=VIEWPORT)
    worker = participant.new_page()
    worker.goto(f"{address}?PROLIFIC_PID=tour0participant&STUDY_ID=&SESSION_ID=s1")
    worker.wait_for_selector("html[data-hotkeys-ready]", state="attached")
    total = int(re.search(r"of (\d+)", worker.locator("#crowd-progress").text_content()).group(1))
    assert total == 4  # two turns x one response x two nuggets
    tour.shot(worker, "crowd-question")
    for answer in "ynyn":
        worker.keyboard.press(answer)
    worker.click("#crowd-submit")
    expect(worker.locator("#crowd-code")).to_have_text("TOUR2024")
    participant.close()
    page.goto("/crowd/campaigns/tour-ntr/")
    page.fill("#id_min_votes", "1")
    page.click("#action-aggregate button[type=submit]")
    page.wait_for_url("**/crowd/campaigns/tour-ntr/")
    expect(page.locator("body")).to_contain_text("4 labels as")
    tour.shot(page, "crowd-aggregated")

    # 6. An LLM judge over the same pairs, against the loopback OpenAI-compatible fake.
    page.goto("/judging/jobs/?collection=ikat24")
    page.wait_for_selector("html[data-jobs-ready]")
    page.select_option("#id_task", "relevance")
    page.fill("#id_judge_name", "llm-fake")
    page.fill("#id_turns", " ".join(TURNS))
    page.fill("#id_depth", str(DEPTH))
    expect(page.locator("#llm-local-fake")).to_contain_text(llm.url)
    expect(page.locator("#llm-warning")).to_have_count(0)
    tour.shot(page, "judge-form")
    page.click("#job-start button.primary")
    page.wait_for_url(re.compile(r"/judging/jobs/\d+/$"))
    job = JudgeJob.objects.get()
    page.goto("/judging/jobs/")
    page.wait_for_function(
        f"""() => document.querySelector('#jobs tr[data-job="{job.pk}"] [data-field="status"]')
              .textContent === "done" """,
        timeout=30_000,
    )
    tour.shot(page, "judge-done")
    assert len(llm.answered) == len(TURNS) * DEPTH
    page.click(f'#jobs tr[data-job="{job.pk}"] a')
    expect(page.locator("body")).to_contain_text(f"Job {job.pk}")

    # 6b. A human sample drawn against the LLM's labels and handed to an assessor, for a valid estimate.
    page.goto("/judging/evaluation/ikat24/")
    page.click("#hybrid-draw-link")
    page.wait_for_url("**/judging/evaluation/ikat24/hybrid/**")
    page.fill("#id_draw-name", "tour-sample")
    page.select_option("#id_draw-pool", "tour")
    page.select_option("#id_draw-machine_judge", "llm-fake")
    page.fill("#id_draw-budget", "1")
    page.get_by_label("ana", exact=True).check()
    page.click("#hybrid-draw")
    page.wait_for_url(re.compile(r"/hybrid/\?(.*&)?sample=tour-sample(&|$)"))
    expect(page.locator(".messages")).to_contain_text("Sample tour-sample: 1 of 2 turns drawn")
    # The drawn turn counts as labelled when it is the one ana graded (the human judge the page chose).
    [drawn] = HumanSample.objects.get(name="tour-sample").units.values_list("key", flat=True)
    labelled = int(drawn == graded["ana"])
    expect(page.locator("#hybrid-sample-list tbody tr", has_text="tour-sample")).to_contain_text(
        f"{labelled} of 1"
    )

    # 7. How far the LLM agrees with the assessors.
    page.goto("/judging/agreement/ikat24/")
    page.select_option("#id_task", "relevance")
    page.select_option("#id_a", "assessor:ana")
    page.select_option("#id_b", "llm-fake")
    page.locator("form", has=page.locator("#id_a")).locator("button[type=submit]").first.click()
    page.wait_for_url(re.compile(r"/judging/agreement/ikat24/\?"))
    expect(page.locator("body")).to_contain_text("Cohen")
    # ana's unit is one conversation: kappa without a bootstrap interval over topics, and the note says why
    expect(page.locator("body")).to_contain_text("Only one topic: no bootstrap interval over topics")
    tour.shot(page, "agreement")

    # 8. Each assessor's qrels as a download: NIST's grades, line for line.
    page.goto("/console/collections/ikat24/exports/")
    tour.shot(page, "downloads")
    for username, turn in graded.items():
        page.select_option("#export-qrels select[name=judge]", f"assessor:{username}")
        with page.expect_download() as download:
            page.click("#export-qrels button[type=submit]")
        lines = Path(download.value.path()).read_text().splitlines()
        expected = {f"{qid} 0 {pid} {grade}" for (qid, pid), grade in nist.items() if qid == turn}
        assert {" ".join(line.split()) for line in lines} == expected
    context.close()

    assert errors == []
    tour.timings_write()
    # The tutorial shows exactly these steps, in this order.
    tutorial = (TOUR.parent / "tutorial.md").read_text()
    assert re.findall(r"\]\(tour/([^)]+)\)", tutorial) == tour.names
    tour_grades = RelevanceJudgment.objects.filter(turn__collection__name="ikat24")
    assert tour_grades.filter(judge__kind=Judge.Kind.ASSESSOR).count() == len(TURNS) * DEPTH
    assert tour_grades.filter(judge__name="llm-fake").count() == len(TURNS) * DEPTH
    assert CrowdAnswer.objects.filter(assignment__batch__campaign__name="tour-ntr").count() == 4
    assert Turn.objects.filter(collection__name="ikat24").count() == 218
