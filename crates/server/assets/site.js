// Progressive enhancement only: every page works without this file.
// Copy buttons put their data-copy text on the clipboard.
document.addEventListener("click", (event) => {
  const button = event.target.closest("button.copy");
  if (!button || !navigator.clipboard) return;
  navigator.clipboard.writeText(button.dataset.copy || "").then(() => {
    const before = button.textContent;
    button.textContent = "Copied";
    setTimeout(() => { button.textContent = before; }, 1500);
  });
});
