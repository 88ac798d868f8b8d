// Crowd nugget matching: one question at a time, a key per answer (y / n, or s / p / n for three-way
// nugget support; each choice button names its value and key), b goes back, progress 1..N.
// Collection text is rendered (escaped) by the server; this module only moves between sections and
// writes plain values and textContent, never HTML. On a phone the instructions would fill the first
// screen of every question, so they are folded once the first question is answered (a tap reopens them).
// The organiser's compose page uses it too: choosing another collection reloads its lists.

function autoSubmit() {
  const form = document.querySelector("form[data-autosubmit]");
  if (form) form.submit();
}

function task() {
  const root = document.getElementById("crowd");
  if (!root) return;
  const form = document.getElementById("crowd-form");
  const items = Array.from(root.querySelectorAll(".crowd-item"));
  const total = items.length;
  const preview = root.dataset.preview === "1";
  const progress = document.getElementById("crowd-progress");
  const bar = document.getElementById("crowd-bar");
  const finish = document.getElementById("crowd-finish");
  const back = document.getElementById("crowd-back");
  const choices = Array.from(root.querySelectorAll(".crowd-choice"));
  const instructions = document.getElementById("crowd-instructions");
  let current = 0;
  let shownAt = performance.now();

  function answered() {
    return items.filter((item) => item.querySelector(".crowd-answer").value !== "").length;
  }

  function show(index) {
    current = Math.max(0, Math.min(index, total));
    items.forEach((item, i) => { item.hidden = i !== current; });
    const done = current >= total;
    finish.hidden = !done;
    choices.forEach((choice) => { choice.hidden = done; });
    back.disabled = current === 0 || preview;
    progress.textContent = done ? `All ${total} answered` : `Question ${current + 1} of ${total}`;
    bar.style.width = `${(100 * answered()) / total}%`;
    if (!done) {
      const value = items[current].querySelector(".crowd-answer").value;
      choices.forEach((choice) => choice.setAttribute("aria-pressed", String(value === choice.dataset.value)));
      // A tapped button keeps focus (and, on touch screens, its hover look) on the next question.
      if (choices.includes(document.activeElement)) document.activeElement.blur();
    } else {
      document.getElementById("crowd-submit").focus();
    }
    shownAt = performance.now();
  }

  function answer(value) {
    if (preview || current >= total) return;
    const item = items[current];
    item.querySelector(".crowd-answer").value = value;
    const ms = item.querySelector(".crowd-ms");
    ms.value = String(Math.round((Number(ms.value) || 0) + performance.now() - shownAt));
    if (instructions && current === 0) instructions.open = false;
    show(current + 1);
  }

  choices.forEach((choice) => choice.addEventListener("click", () => answer(choice.dataset.value)));
  back.addEventListener("click", () => show(current - 1));
  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const target = event.target;
    if (target instanceof HTMLElement && target.closest("input, textarea, select")) return;
    const key = event.key.toLowerCase();
    const choice = choices.find((c) => c.dataset.key === key);
    if (choice) { event.preventDefault(); answer(choice.dataset.value); }
    else if (key === "b" || key === "backspace") { event.preventDefault(); show(current - 1); }
  });
  form.addEventListener("submit", (event) => {
    if (preview || answered() < total) {
      event.preventDefault();
      const first = items.findIndex((item) => item.querySelector(".crowd-answer").value === "");
      show(first < 0 ? 0 : first);
    }
  });
  show(0);
  // Tests (and impatient workers' first key) wait for this: module scripts run after the page shows.
  document.documentElement.dataset.hotkeysReady = "1";
}

function composeChooser() {
  const chooser = document.getElementById("campaign-collection");
  if (!chooser) return;
  const select = chooser.querySelector("select");
  select.addEventListener("change", () => chooser.submit());
}

autoSubmit();
task();
composeChooser();
