// The adjudicator's page: grade a disputed pair 0-4 with the keyboard, as on the relevance page.
// The form posts to the page itself (it works without this script); the script picks a grade with
// 0-4, submits with Enter, and sends the time the page was visible.
import { bindHotkeys, startTimer } from "./hotkeys.js";

const elapsed = startTimer();
const form = document.getElementById("grade-form");

if (form) {
  const radios = Array.from(form.querySelectorAll('input[name="grade"]'));
  const hint = document.getElementById("hint");
  const pick = (value) => () => {
    const radio = radios.find((r) => r.value === value);
    if (radio) radio.checked = true;
  };
  form.addEventListener("submit", (event) => {
    if (!radios.some((r) => r.checked)) {
      event.preventDefault();
      if (hint) hint.textContent = "Pick a grade first (0-4).";
      return;
    }
    document.getElementById("time-spent").value = String(elapsed());
  });
  bindHotkeys({
    0: pick("0"),
    1: pick("1"),
    2: pick("2"),
    3: pick("3"),
    4: pick("4"),
    Enter: () => form.requestSubmit(),
  });
}
// Lets scripted clients (the browser tests) know the keys are bound.
document.documentElement.dataset.hotkeysReady = "1";
