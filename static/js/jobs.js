// Live counts on the jobs page: rows of unfinished jobs poll their progress and update their cells.
const POLL_MS = 2000;

function statusText(row, data) {
  // The state in words (failures and their reason, an interruption) beside the bare state.
  let cell = row.querySelector('[data-field="status_text"]');
  if (data.status_text === data.status) {
    if (cell) cell.remove();
    return;
  }
  if (!cell) {
    cell = document.createElement("span");
    cell.className = "muted";
    cell.dataset.field = "status_text";
    row.querySelector('[data-field="status"]').after(" ", cell);
  }
  cell.textContent = data.status_text;
}

function refresh(row) {
  fetch(row.dataset.url, { credentials: "same-origin", headers: { Accept: "application/json" } })
    .then((response) => (response.ok ? response.json() : null))
    .then((data) => {
      if (!data) return;
      for (const cell of row.querySelectorAll("[data-field]")) {
        if (cell.dataset.field in data && cell.dataset.field !== "status_text") {
          cell.textContent = String(data[cell.dataset.field]);
        }
      }
      if ("status_text" in data) statusText(row, data);
      const bar = row.querySelector("progress");
      if (bar) bar.value = data.percent;
      row.dataset.status = data.status;
    })
    .catch(() => {});
}

function tick() {
  for (const row of document.querySelectorAll("#jobs tr[data-job]")) {
    if (row.dataset.status === "pending" || row.dataset.status === "running") refresh(row);
  }
}

setInterval(tick, POLL_MS);
