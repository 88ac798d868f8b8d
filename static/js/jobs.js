// Live counts on the jobs page: rows of unfinished jobs poll their progress and update their cells.
const POLL_MS = 2000;

function refresh(row) {
  fetch(row.dataset.url, { credentials: "same-origin", headers: { Accept: "application/json" } })
    .then((response) => (response.ok ? response.json() : null))
    .then((data) => {
      if (!data) return;
      for (const cell of row.querySelectorAll("[data-field]")) {
        if (cell.dataset.field in data) cell.textContent = String(data[cell.dataset.field]);
      }
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
