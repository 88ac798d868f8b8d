// Keys of the nugget label pages (vital/okay, and answer-nugget assignment): j/k or the arrows move
// between nuggets, a label's key (shown beside it: v/o, or s/p/n) picks it and moves on, Enter submits
// once every nugget has a label. The visible time on the page is sent with the labels.
import { bindHotkeys, startTimer } from "./hotkeys.js";

const form = document.getElementById("rag-labels-form");
if (form) {
  const elapsed = startTimer();
  const missing = document.getElementById("rag-missing");
  const rows = [...form.querySelectorAll("li[data-nugget]")];
  const labelled = (row) => row.querySelector("input[type=radio]:checked") !== null;
  let focus = Math.max(0, rows.findIndex((row) => !labelled(row)));
  const move = (to) => {
    if (!rows.length) return;
    focus = Math.min(Math.max(to, 0), rows.length - 1);
    rows[focus].focus();
  };
  const pick = (key) => () => {
    const radio = rows[focus] && rows[focus].querySelector(`input[data-key="${key}"]`);
    if (!radio) return;
    radio.checked = true;
    if (rows.every(labelled)) missing.hidden = true;
    move(focus + 1);
  };
  const submit = () => {
    const first = rows.findIndex((row) => !labelled(row));
    if (first === -1) {
      form.requestSubmit();
      return;
    }
    missing.hidden = false;
    move(first);
  };
  form.addEventListener("submit", () => {
    document.getElementById("time-spent").value = String(elapsed());
  });
  rows.forEach((row, index) => row.addEventListener("focusin", () => (focus = index)));

  const bindings = { j: () => move(focus + 1), k: () => move(focus - 1), Enter: submit };
  bindings.ArrowDown = bindings.j;
  bindings.ArrowUp = bindings.k;
  for (const radio of form.querySelectorAll("input[data-key]")) {
    bindings[radio.dataset.key] = pick(radio.dataset.key);
    bindings[radio.dataset.key.toUpperCase()] = pick(radio.dataset.key);
  }
  bindHotkeys(bindings);
  move(focus);
  // Module scripts run after the page shows: tests wait for this before their first key.
  document.documentElement.dataset.hotkeysReady = "1";
}
