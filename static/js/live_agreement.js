// Live agreement: poll the JSON endpoint and redraw the table. Every value goes in through textContent,
// since judge names are user-provided text.

const table = document.getElementById("live-table");
const body = table.querySelector("tbody");
const updated = document.getElementById("live-updated");
const empty = document.getElementById("live-empty");
const error = document.getElementById("live-error");
const interval = Number(table.dataset.interval) || 5000;
const pages = document.getElementById("live-pages");
const range = document.getElementById("live-range");
const previous = document.getElementById("live-previous");
const next = document.getElementById("live-next");
// The page of assessors shown (most labels first); the poll asks for it, the buttons change it.
let page = 1;
let timer = null;
// Each poll's number: an answer to an older poll (a page chosen while it was in flight) is dropped.
let latest = 0;

function figure(value, digits = 3) {
  return value === null || value === undefined ? "n/a" : Number(value).toFixed(digits);
}

function cell(row, text, rowSpan = 1) {
  const td = document.createElement("td");
  td.textContent = text;
  if (rowSpan > 1) td.rowSpan = rowSpan;
  row.appendChild(td);
  return td;
}

function render(data) {
  const rows = [];
  for (const assessor of data.assessors) {
    const versus = assessor.llm.length ? assessor.llm : [null];
    versus.forEach((llm, i) => {
      const tr = document.createElement("tr");
      tr.dataset.judge = assessor.judge;
      if (i === 0) {
        cell(tr, assessor.judge, versus.length);
        cell(tr, String(assessor.labels), versus.length);
      }
      cell(tr, llm ? llm.judge : "no LLM judge");
      cell(tr, llm ? String(llm.n) : "");
      cell(tr, llm ? figure(llm.exact_agreement) : "");
      cell(tr, llm ? figure(llm.cohen_kappa) : "");
      if (i === 0) {
        cell(tr, String(assessor.assessors.n), versus.length);
        cell(tr, figure(assessor.assessors.exact_agreement), versus.length);
        cell(tr, figure(assessor.assessors.cohen_kappa), versus.length);
      }
      rows.push(tr);
    });
  }
  body.replaceChildren(...rows);
  empty.hidden = data.total > 0;
  const first = (data.page - 1) * data.per_page;
  range.textContent = `Assessors ${first + 1}–${first + data.assessors.length} of ${data.total}, page ${data.page} of ${data.pages}`;
  pages.hidden = data.pages <= 1;
  previous.disabled = data.page <= 1;
  next.disabled = data.page >= data.pages;
  updated.textContent = new Date(data.updated_at).toLocaleTimeString() + (data.current ? "" : " (newer labels being computed)");
}

async function poll() {
  clearTimeout(timer);
  const mine = ++latest;
  try {
    const response = await fetch(`${table.dataset.url}&page=${page}`, { headers: { Accept: "application/json" }, credentials: "same-origin" });
    const data = await response.json();
    if (mine !== latest) return;
    if (!response.ok) throw new Error(data.detail || `HTTP ${response.status}`);
    if (data.page > data.pages && data.pages > 0) {
      // Fewer assessors than when the page was chosen: show the last page there is.
      page = data.pages;
      return poll();
    }
    render(data);
    error.hidden = true;
  } catch (exc) {
    if (mine !== latest) return;
    error.textContent = `Could not update: ${exc.message}`;
    error.hidden = false;
  }
  timer = setTimeout(poll, interval);
}

previous.addEventListener("click", () => {
  page = Math.max(1, page - 1);
  poll();
});
next.addEventListener("click", () => {
  page += 1;
  poll();
});

poll();
