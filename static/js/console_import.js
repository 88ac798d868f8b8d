// Follows a background import: polls its status, fills the bar with the share of the file stored so far
// and, once it has ended (or was interrupted), reloads the page to show the outcome (counts by kind, or
// the file's problems).
const POLL_MS = 1000;
const box = document.getElementById("import-job");
const label = document.getElementById("import-status");
const count = document.getElementById("import-count");
const bar = document.getElementById("import-progress");

function poll() {
  fetch(box.dataset.url, { credentials: "same-origin", headers: { Accept: "application/json" } })
    .then((response) => (response.ok ? response.json() : null))
    .then((data) => {
      if (data) {
        label.textContent = data.status_label;
        box.dataset.status = data.status;
        if (data.finished) {
          bar.value = data.status === "interrupted" ? data.percent : 100;
          window.location.reload();
          return;
        }
        if (data.percent > 0) bar.value = data.percent;
        if (count) count.textContent = data.total ? `${data.done} of ${data.total} ${count.dataset.unit}` : "";
      }
      setTimeout(poll, POLL_MS);
    })
    .catch(() => setTimeout(poll, POLL_MS * 3));
}

setTimeout(poll, POLL_MS);
