// Keyboard shortcuts for assessment pages: a small module any page can import.
//
//   import { bindHotkeys, startTimer } from "./hotkeys.js";
//   const unbind = bindHotkeys({ "0": () => pick(0), Enter: submit });
//
// Keys are matched on KeyboardEvent.key. Keys typed into text fields are left alone (so notes and
// search boxes keep working) unless listed in `allowInFields`; modified keys (Ctrl, Alt, Meta) are
// never taken, so browser shortcuts keep working. A handler returning false lets the browser's own
// action happen; otherwise the default is prevented.

const TEXT_INPUT_TYPES = new Set(["text", "search", "email", "url", "password", "number", "tel", "date"]);

export function isTypingTarget(element) {
  if (!element || !element.tagName) return false;
  if (element.isContentEditable) return true;
  const tag = element.tagName.toLowerCase();
  if (tag === "textarea" || tag === "select") return true;
  return tag === "input" && TEXT_INPUT_TYPES.has((element.type || "text").toLowerCase());
}

export function bindHotkeys(bindings, { target = document, allowInFields = [] } = {}) {
  function onKeydown(event) {
    if (event.ctrlKey || event.altKey || event.metaKey || event.isComposing) return;
    const handler = bindings[event.key];
    if (!handler) return;
    if (isTypingTarget(event.target) && !allowInFields.includes(event.key)) return;
    if (handler(event) !== false) event.preventDefault();
  }
  target.addEventListener("keydown", onKeydown);
  return () => target.removeEventListener("keydown", onKeydown);
}

// Milliseconds the page was visible since the call (or the last `restart()`): time in a background tab
// is not time spent judging. A page that shows one item after another restarts it for each.
export function startTimer(doc = document) {
  let visibleMs = 0;
  let since = doc.visibilityState === "hidden" ? null : performance.now();
  doc.addEventListener("visibilitychange", () => {
    if (doc.visibilityState === "hidden" && since !== null) {
      visibleMs += performance.now() - since;
      since = null;
    } else if (doc.visibilityState !== "hidden" && since === null) {
      since = performance.now();
    }
  });
  const elapsed = () => Math.round(visibleMs + (since === null ? 0 : performance.now() - since));
  elapsed.restart = () => {
    visibleMs = 0;
    since = doc.visibilityState === "hidden" ? null : performance.now();
  };
  return elapsed;
}
