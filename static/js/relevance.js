// The relevance assessor pages: grade a passage 0-4, or mark PTKB statements, with the keyboard.
// Collection text is never written from here; the server renders it escaped.
import { bindHotkeys, startTimer } from "./hotkeys.js";

const elapsed = startTimer();

function say(text) {
  const hint = document.getElementById("hint");
  if (hint) hint.textContent = text;
}

function goBack(form) {
  const url = form.dataset.backUrl;
  if (url) window.location.assign(url);
}

function submit(form) {
  form.requestSubmit();
}

function recordTime(form) {
  // Filled on every submission, keyboard or mouse.
  form.addEventListener("submit", () => {
    document.getElementById("time-spent").value = String(elapsed());
  });
}

function gradePage(form) {
  const radios = Array.from(form.querySelectorAll('input[name="grade"]'));
  const pick = (value) => () => {
    const radio = radios.find((r) => r.value === value);
    radio.checked = true;
    radio.focus();
  };
  const bindings = { Enter: () => (radios.some((r) => r.checked) ? submit(form) : say("Choose a grade (0–4) first.")) };
  for (const value of ["0", "1", "2", "3", "4"]) bindings[value] = pick(value);
  bindings.b = () => goBack(form);
  bindings.Backspace = () => goBack(form);
  bindHotkeys(bindings);
}

function ptkbPage(form) {
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
  bindHotkeys({
    1: answer("1"),
    y: answer("1"),
    0: answer("0"),
    n: answer("0"),
    ArrowDown: move(1),
    j: move(1),
    ArrowUp: move(-1),
    k: move(-1),
    Enter: () => (complete() ? submit(form) : say("Answer every statement first (1 relevant, 0 not).")),
    b: () => goBack(form),
    Backspace: () => goBack(form),
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
for (const form of [gradeForm, ptkbForm]) if (form) recordTime(form);
if (gradeForm) gradePage(gradeForm);
if (ptkbForm) ptkbPage(ptkbForm);
// Lets scripted clients (the browser tests) know the keys are bound.
document.documentElement.dataset.hotkeysReady = "1";
