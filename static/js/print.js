// The report's Print link: a javascript: URL would be refused by the content security policy.
for (const link of document.querySelectorAll("[data-print]")) {
  link.addEventListener("click", (event) => {
    event.preventDefault();
    window.print();
  });
}
