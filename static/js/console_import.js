// Follows a background import: polls its status and, once it has finished, reloads the page to show the
// outcome (counts by kind, or the file's problems).
const POLL_MS = 1000;
const box = document.getElementById("import-job");
const label = document.getElementById("import-status");
const bar = document.getElementById("import-progress");

function poll() {
  fetch(box.dataset.url, { credentials: "same-origin", headers: { Accept: "application/json" } })
    .then((response) => (response.ok ? response.json() : null))
    .then((data) => {
      if (data) {
        label.textContent = data.status_label;
        box.dataset.status = data.status;
        if (data.finished) {
          bar.value = 100;
          window.location.reload();
          return;
        }
      }
      setTimeout(poll, POLL_MS);
    })
    .catch(() => setTimeout(poll, POLL_MS * 3));
}

setTimeout(poll, POLL_MS);
