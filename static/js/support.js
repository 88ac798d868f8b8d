// Support assessment keys: 1/2/3 or f/p/n pick Full / Partial / No support, Enter submits and goes on.
// The time spent on the page is sent with the label. Collection text is never touched here.
const form = document.getElementById("support-form");
if (form) {
  const started = performance.now();
  const keys = { 1: "FS", 2: "PS", 3: "NS", f: "FS", p: "PS", n: "NS" };

  form.addEventListener("submit", () => {
    document.getElementById("time-spent").value = String(Math.round(performance.now() - started));
  });

  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey || event.isComposing) return;
    const target = event.target;
    if (target instanceof HTMLElement && (target.isContentEditable || /^(TEXTAREA|SELECT)$/.test(target.tagName))) return;
    if (target instanceof HTMLInputElement && !["radio", "checkbox"].includes(target.type)) return;
    const label = keys[event.key.toLowerCase()];
    if (label) {
      const radio = document.getElementById(`label-${label}`);
      radio.checked = true;
      radio.focus();
      event.preventDefault();
    } else if (event.key === "Enter") {
      event.preventDefault();
      if (form.querySelector('input[name="label"]:checked')) form.requestSubmit();
    }
  });
}
