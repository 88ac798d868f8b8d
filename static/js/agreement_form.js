// The comparison form lists the judges of the chosen task only: choosing another task reloads the page
// with that task, so the judge lists follow it.
const form = document.querySelector("form.agreement-form");
const task = form && form.querySelector("#id_task");
if (task) {
  task.addEventListener("change", () => {
    window.location.search = new URLSearchParams({ task: task.value }).toString();
  });
}
