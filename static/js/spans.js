// Gold nugget span selection and gold response autosave.
//
// Offsets sent to the server are Python string offsets (code points) into the stored passage text.
// The passage element holds exactly that text (white-space: pre-wrap, one text node); highlights use
// the CSS Custom Highlight API, so they never split the text node and never re-render the passage.
// Collection text only ever goes into the page through textContent.

const app = document.getElementById("nugget-app");
const goldForm = document.getElementById("gold-form");

function csrfToken() {
  const field = document.querySelector("input[name=csrfmiddlewaretoken]");
  return (app && app.dataset.csrf) || (field && field.value) || "";
}

async function post(url, body) {
  const response = await fetch(url, {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken(), Accept: "application/json" },
    body: JSON.stringify(body || {}),
    credentials: "same-origin",
  });
  let payload = {};
  try {
    payload = await response.json();
  } catch (_error) {
    payload = { detail: `the server answered ${response.status}` };
  }
  if (!response.ok) throw new Error(payload.detail || `the server answered ${response.status}`);
  return payload;
}

// --- code points <-> UTF-16 ------------------------------------------------------------------------

const SURROGATE = /[\uD800-\uDFFF]/;

function isHigh(code) {
  return code >= 0xd800 && code <= 0xdbff;
}

function toCodePoints(text, astral, u16) {
  if (!astral) return u16;
  let count = 0;
  for (let i = 0; i < u16; i += 1) {
    if (isHigh(text.charCodeAt(i)) && i + 1 < u16) i += 1;
    count += 1;
  }
  return count;
}

function toUtf16(text, astral, points) {
  if (!astral) return points;
  let i = 0;
  for (let n = 0; n < points && i < text.length; n += 1) {
    i += isHigh(text.charCodeAt(i)) && i + 1 < text.length ? 2 : 1;
  }
  return i;
}

// --- span selection page ---------------------------------------------------------------------------

function startSpans() {
  const data = JSON.parse(document.getElementById("nugget-data").textContent);
  const status = document.getElementById("nugget-status");
  const list = document.getElementById("nugget-list");
  const count = document.getElementById("nugget-count");
  const itemBase = data.urls.item.replace(/0\/$/, "");
  const highlights = typeof CSS !== "undefined" && CSS.highlights && typeof Highlight === "function";
  const marks = highlights
    ? { plain: new Highlight(), duplicate: new Highlight(), active: new Highlight() }
    : null;
  if (marks) {
    CSS.highlights.set("nugget", marks.plain);
    CSS.highlights.set("nugget-duplicate", marks.duplicate);
    CSS.highlights.set("nugget-active", marks.active);
  }

  const passages = new Map();
  const articles = [...app.querySelectorAll(".nugget-passage")];
  for (const article of articles) {
    const id = article.dataset.passageId;
    const el = article.querySelector(".passage-text");
    if (!el) continue;
    const text = data.texts[id];
    // HTML parsing turns \r\n into \n; put the stored text back so DOM offsets are stored-text offsets.
    if (el.textContent !== text) el.textContent = text;
    passages.set(id, { id, el, text, astral: SURROGATE.test(text), article });
  }
  let current = 0;
  const nuggets = new Map(); // id -> {data, item, range}
  let activeId = null;

  function say(message, isError = false) {
    if (!status) return; // no passage shown, so nothing to select or save
    status.textContent = message;
    status.classList.toggle("error", isError);
  }

  function showPassage(index) {
    if (!articles.length) return;
    current = (index + articles.length) % articles.length;
    articles.forEach((article, i) => {
      article.hidden = i !== current;
    });
    document.getElementById("passage-position").textContent = String(current + 1);
  }

  function textPoint(el, u16) {
    // The passage is one text node; walk text nodes anyway in case something split it.
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    let left = u16;
    let node = walker.nextNode();
    while (node) {
      if (left <= node.length) return [node, left];
      left -= node.length;
      const next = walker.nextNode();
      if (!next) return [node, node.length];
      node = next;
    }
    return [el, 0];
  }

  function rangeFor(nugget) {
    const passage = passages.get(nugget.passage_id);
    if (!passage || nugget.start === null) return null;
    const range = document.createRange();
    range.setStart(...textPoint(passage.el, toUtf16(passage.text, passage.astral, nugget.start)));
    range.setEnd(...textPoint(passage.el, toUtf16(passage.text, passage.astral, nugget.end)));
    return range;
  }

  function prefixLength(el, node, offset) {
    const range = document.createRange();
    range.setStart(el, 0);
    range.setEnd(node, offset);
    return range.toString().length;
  }

  function selectedSpan() {
    const passage = passages.get(articles[current] && articles[current].dataset.passageId);
    const selection = window.getSelection();
    if (!passage || !selection || selection.rangeCount === 0 || selection.isCollapsed) return null;
    const range = selection.getRangeAt(0);
    if (!range.intersectsNode(passage.el)) return null;
    const whole = document.createRange();
    whole.selectNodeContents(passage.el);
    const s16 =
      whole.comparePoint(range.startContainer, range.startOffset) < 0
        ? 0
        : prefixLength(passage.el, range.startContainer, range.startOffset);
    const e16 =
      whole.comparePoint(range.endContainer, range.endOffset) > 0
        ? passage.text.length
        : prefixLength(passage.el, range.endContainer, range.endOffset);
    if (e16 <= s16) return null;
    return {
      passage,
      start: toCodePoints(passage.text, passage.astral, s16),
      end: toCodePoints(passage.text, passage.astral, e16),
      text: passage.text.slice(s16, e16),
    };
  }

  function refreshDuplicateChoices() {
    // Choices change only when a nugget is added, removed or re-marked, never per key press.
    for (const entry of nuggets.values()) {
      const select = entry.item.querySelector("select");
      const wanted = [...nuggets.values()].filter((other) => other !== entry && other.data.duplicate_of === null);
      select.replaceChildren(new Option("not a duplicate", ""));
      for (const other of wanted) select.add(new Option(`duplicate of ${other.data.key}`, String(other.data.id)));
      select.value = entry.data.duplicate_of === null ? "" : String(entry.data.duplicate_of);
    }
  }

  function paint(entry) {
    // A nugget whose passage is not shown has no range: Highlight.delete(null) throws, which stopped
    // the page listing the remaining nuggets.
    if (!marks || !entry.range) return;
    marks.plain.delete(entry.range);
    marks.duplicate.delete(entry.range);
    (entry.data.duplicate_of === null ? marks.plain : marks.duplicate).add(entry.range);
  }

  function offPage(nugget) {
    // A span on a passage the chosen relevance judge and grade do not show: still the assessor's nugget.
    return nugget.start !== null && nugget.passage_id !== "" && !passages.has(nugget.passage_id);
  }

  function describe(entry) {
    const n = entry.data;
    entry.item.dataset.start = n.start === null ? "" : String(n.start);
    entry.item.dataset.end = n.end === null ? "" : String(n.end);
    entry.item.querySelector(".key").textContent = n.key;
    entry.item.querySelector(".where").textContent = n.start === null ? "" : ` ${n.passage_id} ${n.start}–${n.end}`;
    entry.item.querySelector(".ntext").textContent = n.text;
    entry.item.classList.toggle("duplicate", n.duplicate_of !== null);
    entry.item.classList.toggle("off-page", offPage(n));
    entry.item.querySelector(".note").textContent = offPage(n)
      ? "Its passage is not among the passages shown: choose another relevance judge or a lower grade to see it."
      : "";
  }

  function setNugget(payload) {
    let entry = nuggets.get(payload.id);
    if (!entry) {
      const item = document.createElement("li");
      item.dataset.id = String(payload.id);
      item.innerHTML =
        '<strong class="key"></strong><span class="where muted"></span><span class="ntext"></span>' +
        '<span class="note muted"></span>' +
        '<span class="actions"><button type="button" data-act="show">Show</button>' +
        '<button type="button" data-act="fix">Set to selection</button>' +
        '<button type="button" data-act="delete">Delete</button>' +
        '<select data-act="duplicate" aria-label="Duplicate of"></select></span>';
      entry = { data: payload, item, range: null };
      nuggets.set(payload.id, entry);
      list.append(item);
    }
    if (marks && entry.range) {
      marks.plain.delete(entry.range);
      marks.duplicate.delete(entry.range);
      marks.active.delete(entry.range);
    }
    entry.data = payload;
    entry.range = rangeFor(payload);
    describe(entry);
    paint(entry);
    if (activeId === payload.id && marks && entry.range) marks.active.add(entry.range);
    count.textContent = String(nuggets.size);
    return entry;
  }

  function dropNugget(id) {
    const entry = nuggets.get(id);
    if (!entry) return;
    if (marks && entry.range) {
      marks.plain.delete(entry.range);
      marks.duplicate.delete(entry.range);
      marks.active.delete(entry.range);
    }
    entry.item.remove();
    nuggets.delete(id);
    count.textContent = String(nuggets.size);
  }

  function activate(id) {
    if (marks) marks.active.clear();
    for (const item of list.querySelectorAll("li.active")) item.classList.remove("active");
    activeId = id;
    const entry = nuggets.get(id);
    if (!entry) return;
    entry.item.classList.add("active");
    const index = articles.findIndex((article) => article.dataset.passageId === entry.data.passage_id);
    if (index >= 0) showPassage(index);
    if (marks && entry.range) marks.active.add(entry.range);
  }

  function clearSelectionIf(span) {
    // The assessor may have selected the next span while this one was saving: keep that one.
    const now = selectedSpan();
    if (now && now.passage === span.passage && now.start === span.start && now.end === span.end) {
      window.getSelection().removeAllRanges();
    }
  }

  async function saveSelection() {
    const span = selectedSpan();
    if (!span) {
      say("Select some text of the passage first.", true);
      return;
    }
    try {
      const payload = await post(data.urls.create, {
        passage_id: span.passage.id,
        start: span.start,
        end: span.end,
        text: span.text,
        relevance_judge: data.relevance_judge,
      });
      const entry = setNugget(payload.nugget);
      refreshDuplicateChoices();
      clearSelectionIf(span);
      say(`Saved ${entry.data.key}.`);
    } catch (error) {
      say(`Not saved: ${error.message}`, true);
    }
  }

  list.addEventListener("click", async (event) => {
    const button = event.target.closest("button[data-act]");
    if (!button) return;
    const id = Number(button.closest("li").dataset.id);
    const entry = nuggets.get(id);
    try {
      if (button.dataset.act === "show") {
        activate(id);
        if (offPage(entry.data)) say(`The passage of ${entry.data.key} is not among the passages shown.`, true);
      } else if (button.dataset.act === "delete") {
        const payload = await post(`${itemBase}${id}/delete/`);
        dropNugget(payload.deleted);
        payload.changed.forEach(setNugget);
        refreshDuplicateChoices();
        say(`Deleted ${entry.data.key}.`);
      } else if (button.dataset.act === "fix") {
        const span = selectedSpan();
        if (!span || span.passage.id !== entry.data.passage_id) {
          say(`Select the new text of ${entry.data.key} in its passage first.`, true);
          return;
        }
        const payload = await post(`${itemBase}${id}/`, { start: span.start, end: span.end, text: span.text });
        setNugget(payload.nugget);
        clearSelectionIf(span);
        say(`Moved ${entry.data.key}.`);
      }
    } catch (error) {
      say(`Not saved: ${error.message}`, true);
    }
  });

  list.addEventListener("change", async (event) => {
    const select = event.target.closest("select[data-act=duplicate]");
    if (!select) return;
    const id = Number(select.closest("li").dataset.id);
    try {
      const payload = await post(`${itemBase}${id}/duplicate/`, {
        duplicate_of: select.value === "" ? null : Number(select.value),
      });
      payload.changed.forEach(setNugget);
      refreshDuplicateChoices();
      say("Duplicate mark saved.");
    } catch (error) {
      say(`Not saved: ${error.message}`, true);
      refreshDuplicateChoices();
    }
  });

  const saveButton = document.getElementById("save-span");
  if (saveButton) {
    // Keep the selection when the button takes the mouse press.
    saveButton.addEventListener("mousedown", (event) => event.preventDefault());
    saveButton.addEventListener("click", saveSelection);
    document.getElementById("prev-passage").addEventListener("click", () => showPassage(current - 1));
    document.getElementById("next-passage").addEventListener("click", () => showPassage(current + 1));
  }

  document.addEventListener("keydown", (event) => {
    if (event.target.closest("input, textarea, select, button") || event.metaKey) return;
    const passageEl = event.target.closest(".passage-text");
    if (passageEl && event.key.startsWith("Arrow") && !event.ctrlKey) {
      // Keyboard selection inside the focused passage: arrows move a caret, Shift+arrows extend it.
      const selection = window.getSelection();
      if (!selection.rangeCount || !passageEl.contains(selection.anchorNode)) {
        selection.collapse(...textPoint(passageEl, 0));
      }
      const direction = { ArrowLeft: "backward", ArrowRight: "forward", ArrowUp: "backward", ArrowDown: "forward" }[
        event.key
      ];
      const unit = event.altKey ? "word" : event.key === "ArrowUp" || event.key === "ArrowDown" ? "line" : "character";
      selection.modify(event.shiftKey ? "extend" : "move", direction, unit);
      event.preventDefault();
      return;
    }
    if (event.ctrlKey || event.altKey) return;
    if (event.key === "s" || event.key === "Enter") {
      event.preventDefault();
      saveSelection();
    } else if (event.key === "]") {
      showPassage(current + 1);
    } else if (event.key === "[") {
      showPassage(current - 1);
    }
  });

  for (const nugget of data.nuggets) setNugget(nugget);
  refreshDuplicateChoices();
  showPassage(0);
}

// --- gold response autosave ------------------------------------------------------------------------

function startGoldResponse() {
  const status = document.getElementById("gold-status");
  let timer = null;
  async function autosave() {
    const body = new FormData(goldForm);
    body.set("action", "draft");
    try {
      // Not goldForm.action: the submit buttons named "action" shadow that property.
      const response = await fetch(goldForm.getAttribute("action") || window.location.href, {
        method: "POST",
        body,
        headers: { Accept: "application/json", "X-CSRFToken": csrfToken() },
        credentials: "same-origin",
      });
      const payload = await response.json();
      if (!response.ok) throw new Error(payload.detail || `the server answered ${response.status}`);
      status.textContent = `Draft saved ${new Date(payload.saved).toLocaleTimeString()}`;
    } catch (error) {
      status.textContent = `Draft not saved: ${error.message}`;
    }
  }
  goldForm.addEventListener("input", () => {
    clearTimeout(timer);
    status.textContent = "Unsaved changes…";
    timer = setTimeout(autosave, 1000);
  });
}

if (app) startSpans();
if (goldForm) startGoldResponse();
