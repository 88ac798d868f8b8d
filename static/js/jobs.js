// The jobs page: the start form shows only the chosen task's fields (the server ignores the others and
// checks what the task needs), choosing another collection reloads its judge lists, and rows of
// unfinished jobs poll their progress and update their cells.
const POLL_MS = 2000;

function startForm() {
  const form = document.getElementById("job-start");
  if (!form) return;
  const task = form.querySelector("#id_task");
  const collection = form.querySelector("#id_collection");
  const judgeName = form.querySelector("#id_judge_name");
  const warning = document.getElementById("llm-warning");
  const show = document.getElementById("job-show");
  if (show) show.hidden = true;

  function apply() {
    const chosen = task.value;
    for (const row of form.querySelectorAll(".job-field[data-tasks]")) {
      const on = row.dataset.tasks.split(" ").includes(chosen);
      row.hidden = !on;
      for (const input of row.querySelectorAll("input, select, textarea")) input.disabled = !on;
    }
    if (warning) warning.hidden = !warning.dataset.tasks.split(" ").includes(chosen);
    if (judgeName) judgeName.setAttribute("list", `judges-${chosen}`);
  }

  task.addEventListener("change", apply);
  collection.addEventListener("change", () => {
    const query = new URLSearchParams({ collection: collection.value, task: task.value });
    window.location.search = query.toString();
  });
  apply();
  document.documentElement.dataset.jobsReady = "1";
}

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
startForm();
