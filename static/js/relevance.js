// The relevance assessor pages: grade a passage 0-4, or mark PTKB statements, with the keyboard.
//
// A passage page is loaded once per unit (turn). From then on this script stays on it: a grade goes to
// the same JSON endpoint scripted clients use, asking for the unit's next passage in the same answer
// (as the next-passage endpoint gives it), which is drawn in place, and Back walks the passages shown since the page loaded (then the server's
// own back link). Whatever the page cannot show in place (another turn, the PTKB step) is left to the
// server: the script goes to the unit's resume URL, which shows that screen; at the end of the unit it
// goes back to the queue.
// Without JavaScript the forms post to the pages themselves. Collection text is only ever written as
// text (textContent), never as markup.
import { bindHotkeys, startTimer } from "./hotkeys.js";

const elapsed = startTimer();

function say(text) {
  const hint = document.getElementById("hint");
  if (hint) hint.textContent = text;
}

function leave(url) {
  window.location.assign(url);
}

function csrfToken(form) {
  const input = form.querySelector('input[name="csrfmiddlewaretoken"]');
  return input ? input.value : "";
}

// A random (version 4) UUID. crypto.randomUUID exists only on HTTPS and localhost pages; getRandomValues
// everywhere, plain-HTTP intranet deployments included.
function newKey() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = (bytes[6] & 0x0f) | 0x40;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

async function postJson(form, url, body, headers = {}) {
  const response = await fetch(url, {
    method: "POST",
    credentials: "same-origin",
    headers: {
      "Content-Type": "application/json",
      Accept: "application/json",
      "X-CSRFToken": csrfToken(form),
      ...headers,
    },
    body: JSON.stringify(body),
  });
  const data = response.status === 204 ? null : await response.json().catch(() => null);
  return { status: response.status, data };
}

function gradePage(form) {
  const radios = Array.from(form.querySelectorAll('input[name="grade"]'));
  const progress = document.getElementById("progress");
  const counts = {
    judged: Number(progress.dataset.judged),
    total: Number(progress.dataset.total),
    turnJudged: Number(progress.dataset.turnJudged),
    turnTotal: Number(progress.dataset.turnTotal),
  };
  const text = document.getElementById("passage-text");
  const checked = radios.find((r) => r.checked);
  // The passages shown since the page loaded, in order; `at` is the one on screen.
  const shown = [
    {
      slot: Number(form.dataset.slot),
      turn_pk: Number(form.dataset.turnPk),
      passage_id: form.dataset.passageId,
      index: Number(form.dataset.index),
      title: document.getElementById("passage-title").textContent,
      text: text.hasAttribute("data-missing") ? "" : text.textContent,
      // The screen's own address (the page may have been opened through the unit's resume URL).
      url: form.dataset.url || window.location.pathname,
      grade: checked ? Number(checked.value) : null,
      judged: form.dataset.judged === "1",
    },
  ];
  let at = 0;
  let busy = false;
  // The grade sent and not yet answered for sure. A retry sends it again as it was, with its idempotency
  // key: if the first attempt was stored and only its answer lost (the server or the network failed just
  // after the commit), the server stores nothing more and adds no time.
  let pending = null;
  history.replaceState({ shownAt: 0 }, "", shown[0].url);

  function draw(i, { push }) {
    at = i;
    const item = shown[i];
    document.getElementById("passage-id").textContent = item.passage_id;
    const title = document.getElementById("passage-title");
    title.textContent = item.title;
    title.hidden = !item.title;
    text.textContent = item.text || "The collection does not hold this passage's text.";
    text.classList.toggle("muted", !item.text);
    for (const radio of radios) radio.checked = item.grade !== null && Number(radio.value) === item.grade;
    const back = document.getElementById("back");
    if (back) back.hidden = i === 0 && !form.dataset.backUrl;
    progress.textContent =
      `Unit ${progress.dataset.unit} · turn ${progress.dataset.turnId}: passage ${item.index + 1} of ` +
      `${counts.turnTotal} (${counts.turnJudged} judged) · ${counts.judged} / ${counts.total} judged in the unit`;
    document.title = `Grade passage · ${progress.dataset.turnId}`;
    say("");
    if (push) history.pushState({ shownAt: i }, "", item.url);
    elapsed.restart();
  }

  async function submit() {
    const item = shown[at];
    const grade = Number(radios.find((r) => r.checked).value);
    if (!pending || pending.item !== item || pending.body.grade !== grade) {
      const body = {
        turn_pk: item.turn_pk,
        passage_id: item.passage_id,
        grade,
        time_spent_ms: elapsed(),
        next: true,
      };
      pending = { item, body, key: newKey() };
    }
    busy = true;
    try {
      const graded = await postJson(form, form.dataset.gradeUrl, pending.body, { "Idempotency-Key": pending.key });
      if (graded.status >= 500) {
        // Stored or not, the server cannot say now (an outage answers 503): the retry is safe.
        say("The server did not answer; press Enter to try again.");
        return;
      }
      pending = null;
      if (graded.status !== 201) {
        // Signed out, the lease passed to someone else, a bad value: the server's page says which.
        if (graded.status === 400) say((graded.data && graded.data.detail) || "Not saved.");
        else leave(form.dataset.resumeUrl);
        return;
      }
      if (!item.judged) {
        item.judged = true;
        counts.judged += 1;
        counts.turnJudged += 1;
      }
      item.grade = graded.data.grade;
      // The grade's answer carries the unit's next passage (null: the unit is done, or its PTKB step is
      // left); another turn's passage needs that turn's conversation, which the server's page shows.
      const step = graded.data.next;
      if (!step || step.turn_pk !== item.turn_pk) {
        leave(graded.data.unit_complete ? form.dataset.queueUrl : form.dataset.resumeUrl);
        return;
      }
      let i = shown.findIndex((s) => s.turn_pk === step.turn_pk && s.passage_id === step.passage_id);
      if (i < 0) {
        shown.push({ ...step, grade: null, judged: false });
        i = shown.length - 1;
      }
      draw(i, { push: true });
    } catch (error) {
      say("Could not reach the server; press Enter to try again.");
    } finally {
      busy = false;
    }
  }

  function goBack() {
    if (at > 0) draw(at - 1, { push: true });
    else if (form.dataset.backUrl) leave(form.dataset.backUrl);
  }

  const pick = (value) => () => {
    const radio = radios.find((r) => r.value === value);
    radio.checked = true;
    radio.focus();
  };
  const guard = (handler) => (event) => (busy ? undefined : handler(event));
  const bindings = {
    Enter: guard(() => (radios.some((r) => r.checked) ? submit() : say("Choose a grade (0–4) first."))),
    b: guard(goBack),
    Backspace: guard(goBack),
  };
  for (const value of ["0", "1", "2", "3", "4"]) bindings[value] = guard(pick(value));
  bindHotkeys(bindings);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (!busy && radios.some((r) => r.checked)) submit();
  });
  const back = document.getElementById("back");
  if (back)
    back.addEventListener("click", (event) => {
      event.preventDefault();
      if (!busy) goBack();
    });
  window.addEventListener("popstate", (event) => {
    const i = event.state && event.state.shownAt;
    if (typeof i === "number" && shown[i]) draw(i, { push: false });
    else window.location.reload();
  });
}

function ptkbPage(form) {
  // Opened through the unit's resume URL, the address bar shows the screen's own.
  if (form.dataset.url && window.location.pathname !== form.dataset.url) {
    history.replaceState(null, "", form.dataset.url);
  }
  // Filled on every submission, keyboard or mouse.
  form.addEventListener("submit", () => {
    document.getElementById("time-spent").value = String(elapsed());
  });
  const rows = Array.from(form.querySelectorAll(".ptkb-row"));
  let current = Math.max(0, rows.findIndex((row) => !row.querySelector("input:checked")));
  const show = () => rows.forEach((row, i) => row.classList.toggle("current", i === current));
  const move = (delta) => () => {
    current = Math.min(rows.length - 1, Math.max(0, current + delta));
    show();
    rows[current].focus();
  };
  const answer = (value) => () => {
    if (!rows.length) return;
    rows[current].querySelector(`input[value="${value}"]`).checked = true;
    if (current < rows.length - 1) move(1)();
  };
  const complete = () => rows.every((row) => row.querySelector("input:checked"));
  const goBack = () => {
    if (form.dataset.backUrl) leave(form.dataset.backUrl);
  };
  bindHotkeys({
    1: answer("1"),
    y: answer("1"),
    0: answer("0"),
    n: answer("0"),
    ArrowDown: move(1),
    j: move(1),
    ArrowUp: move(-1),
    k: move(-1),
    Enter: () => (complete() ? form.requestSubmit() : say("Answer every statement first (1 relevant, 0 not).")),
    b: goBack,
    Backspace: goBack,
  });
  rows.forEach((row, i) =>
    row.addEventListener("click", () => {
      current = i;
      show();
    }),
  );
  show();
}

const gradeForm = document.getElementById("grade-form");
const ptkbForm = document.getElementById("ptkb-form");
if (gradeForm) gradePage(gradeForm);
if (ptkbForm) ptkbPage(ptkbForm);
// Lets scripted clients (the browser tests) know the keys are bound.
document.documentElement.dataset.hotkeysReady = "1";
