// Support assessment keys: 1/2/3 or f/p/n pick Full / Partial / No support, Enter submits and goes on
// (or, with no label picked, says to pick one).
// The visible time on the page is sent with the label. Collection text is never touched here.
import { bindHotkeys, startTimer } from "./hotkeys.js";

const form = document.getElementById("support-form");
if (form) {
  const elapsed = startTimer();
  const missing = document.getElementById("support-missing");
  const pick = (label) => () => {
    const radio = document.getElementById(`label-${label}`);
    radio.checked = true;
    radio.focus();
    missing.hidden = true;
  };
  // Enter without a label said nothing before: the assessor is told what to press instead.
  const submit = () => {
    if (form.querySelector('input[name="label"]:checked')) form.requestSubmit();
    else missing.hidden = false;
  };
  form.addEventListener("change", () => {
    if (form.querySelector('input[name="label"]:checked')) missing.hidden = true;
  });

  form.addEventListener("submit", () => {
    document.getElementById("time-spent").value = String(elapsed());
  });

  bindHotkeys({
    1: pick("FS"),
    2: pick("PS"),
    3: pick("NS"),
    f: pick("FS"),
    p: pick("PS"),
    n: pick("NS"),
    F: pick("FS"),
    P: pick("PS"),
    N: pick("NS"),
    Enter: submit,
  });
  // Module scripts run after the page shows: tests wait for this before their first key.
  document.documentElement.dataset.hotkeysReady = "1";
}
