// Post-editing a nugget list by keyboard. Each edit is sent at once (the server keeps it, with who and
// when, and answers the list after it), so a reload loses nothing. Collection text is only ever set as
// textContent or a textarea's value, never parsed as HTML.
//   j/k move, Enter rewrite, x select, m merge selected, s split, d delete, a add, Alt+Up/Down move the
//   nugget, f finish. In an editor: Enter saves, Shift+Enter starts a line (split), Esc cancels.
import { bindHotkeys, isTypingTarget, startTimer } from "./hotkeys.js";

const list = document.getElementById("rag-nugget-list");
if (list) {
  const elapsed = startTimer();
  const errorBox = document.getElementById("rag-edit-error");
  const counter = document.getElementById("rag-edit-count");
  const finishForm = document.getElementById("rag-finish-form");
  const token = finishForm.querySelector('input[name="csrfmiddlewaretoken"]').value;
  const selected = new Set();
  let edits = parseInt(counter.textContent, 10) || 0;
  let focus = 0;
  let busy = false;

  const items = () => [...list.querySelectorAll(":scope > li")];
  const say = (message) => {
    errorBox.textContent = message;
    errorBox.hidden = !message;
  };

  function render(nuggets) {
    list.replaceChildren(
      ...nuggets.map((nugget) => {
        const li = document.createElement("li");
        li.tabIndex = -1;
        li.dataset.key = nugget.key;
        const text = document.createElement("span");
        text.className = "rag-ntext";
        text.textContent = nugget.text;
        li.append(text);
        return li;
      }),
    );
    for (const key of [...selected]) if (!list.querySelector(`li[data-key="${CSS.escape(key)}"]`)) selected.delete(key);
  }

  function move(to) {
    const all = items();
    all.forEach((li) => li.classList.toggle("rag-selected", selected.has(li.dataset.key)));
    if (!all.length) return;
    focus = Math.min(Math.max(to, 0), all.length - 1);
    all[focus].focus();
  }

  async function send(edit, focusAfter) {
    busy = true;
    try {
      const response = await fetch(list.dataset.url, {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": token },
        body: JSON.stringify({ ...edit, time_spent_ms: elapsed() }),
      });
      const body = await response.json().catch(() => ({ detail: "The server did not answer; try again." }));
      if (!response.ok) {
        say(body.detail || "The edit was refused.");
        return;
      }
      elapsed.restart();
      say("");
      edits += 1;
      counter.textContent = `${edits} edit${edits === 1 ? "" : "s"} so far`;
      render(body.nuggets);
      move(focusAfter);
      list.dataset.edits = String(edits);
    } finally {
      busy = false;
    }
  }

  // An editor in place of a nugget's text: Enter saves, Shift+Enter a new line, Esc cancels.
  function edit(li, initial, onSave, onCancel = () => move(focus)) {
    const old = [...li.childNodes];
    const area = document.createElement("textarea");
    area.value = initial;
    area.setAttribute("aria-label", "Nugget text");
    li.replaceChildren(area);
    area.focus();
    area.setSelectionRange(area.value.length, area.value.length);
    area.addEventListener("keydown", (event) => {
      if (event.key === "Escape") {
        event.preventDefault();
        li.replaceChildren(...old);
        onCancel();
      } else if (event.key === "Enter" && !event.shiftKey) {
        event.preventDefault();
        onSave(area.value);
      }
    });
  }

  const current = () => items()[focus];
  const actions = {
    j: () => move(focus + 1),
    k: () => move(focus - 1),
    Enter: () => {
      const li = current();
      if (li) edit(li, li.textContent, (text) => send({ action: "rewrite", key: li.dataset.key, text }, focus));
    },
    x: () => {
      const li = current();
      if (!li) return;
      if (selected.has(li.dataset.key)) selected.delete(li.dataset.key);
      else selected.add(li.dataset.key);
      move(focus);
    },
    m: () => {
      const chosen = items().filter((li) => selected.has(li.dataset.key));
      if (chosen.length < 2) {
        say("Select two or more nuggets with x, then press m to merge them.");
        return;
      }
      const at = items().indexOf(chosen[0]);
      focus = at;
      const joined = chosen.map((li) => li.textContent.trim()).join(" ");
      edit(chosen[0], joined, (text) => {
        const keys = chosen.map((li) => li.dataset.key);
        selected.clear();
        send({ action: "merge", keys, text }, at);
      });
    },
    s: () => {
      const li = current();
      if (!li) return;
      edit(li, `${li.textContent.trim()}\n`, (value) => {
        const texts = value.split("\n").map((line) => line.trim()).filter(Boolean);
        if (texts.length < 2) {
          say("Split: write one line per new nugget (Shift+Enter starts a line).");
          return;
        }
        send({ action: "split", key: li.dataset.key, texts }, focus);
      });
    },
    d: () => {
      const li = current();
      if (li) send({ action: "delete", key: li.dataset.key }, focus);
    },
    a: () => {
      const before = current();
      const li = document.createElement("li");
      li.tabIndex = -1;
      if (before) before.after(li);
      else list.append(li);
      const at = before ? focus + 1 : 0;
      edit(
        li,
        "",
        (text) => send({ action: "add", after: before ? before.dataset.key : null, text }, at),
        () => {
          li.remove();
          move(focus);
        },
      );
    },
    f: () => {
      document.getElementById("time-spent").value = String(elapsed());
      finishForm.requestSubmit();
    },
  };
  bindHotkeys(Object.fromEntries(Object.entries(actions).map(([key, run]) => [key, () => (busy ? undefined : run())])));

  // Alt+Up/Down reorder: bindHotkeys leaves modified keys to the browser, so this one is bound here.
  document.addEventListener("keydown", (event) => {
    if (!event.altKey || busy || isTypingTarget(event.target)) return;
    if (event.key !== "ArrowUp" && event.key !== "ArrowDown") return;
    event.preventDefault();
    const keys = items().map((li) => li.dataset.key);
    const to = focus + (event.key === "ArrowUp" ? -1 : 1);
    if (to < 0 || to >= keys.length) return;
    [keys[focus], keys[to]] = [keys[to], keys[focus]];
    send({ action: "reorder", keys }, to);
  });
  finishForm.addEventListener("submit", () => {
    const field = document.getElementById("time-spent");
    if (!field.value) field.value = String(elapsed());
  });
  list.addEventListener("focusin", (event) => {
    const index = items().indexOf(event.target.closest("li"));
    if (index >= 0) focus = index;
  });
  move(0);
  document.documentElement.dataset.hotkeysReady = "1";
}
