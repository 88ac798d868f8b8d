// The upload form shows only the options the chosen kind of file reads; the rest stay hidden (and unsent
// values are ignored by the server anyway, so the form also works without this script).
const options = JSON.parse(document.getElementById("upload-options").textContent);
const form = document.getElementById("upload-form");
const kind = form.querySelector("[name=kind]");
const ALWAYS = new Set(["kind", "file"]);

function show() {
  const wanted = new Set(options[kind.value] || []);
  for (const row of form.querySelectorAll(".upload-field")) {
    const name = row.dataset.field;
    row.hidden = !(ALWAYS.has(name) || wanted.has(name));
  }
}

kind.addEventListener("change", show);
show();
