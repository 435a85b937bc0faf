// cairn console: the only script the pages run (the Content-Security-Policy allows no other).
// It pages a session's turns on demand: "earlier" and "later" fetch the next turns as HTML the
// server escaped, and put them before or after those shown. Without it the links still work.
"use strict";
document.addEventListener("click", async (event) => {
  const link = event.target.closest("a[data-more]");
  if (!link) return;
  event.preventDefault();
  const file = link.dataset.file;
  const from = Number(link.dataset.from);
  const to = Number(link.dataset.to);
  const response = await fetch(
    `/turns?file=${encodeURIComponent(file)}&from=${from}&to=${to}`,
    { credentials: "same-origin" }
  );
  if (!response.ok) {
    link.textContent = `could not load turns ${from}–${to}`;
    return;
  }
  const html = await response.text();
  const list = document.getElementById("turns");
  const step = to - from + 1;
  if (link.dataset.more === "earlier") {
    list.insertAdjacentHTML("afterbegin", html);
    const next = Math.max(1, from - step);
    if (from <= 1) {
      link.remove();
    } else {
      link.dataset.from = String(next);
      link.dataset.to = String(from - 1);
    }
  } else {
    list.insertAdjacentHTML("beforeend", html);
    const total = Number(link.dataset.total);
    if (to >= total) {
      link.remove();
    } else {
      link.dataset.from = String(to + 1);
      link.dataset.to = String(Math.min(total, to + step));
    }
  }
});

// The turn a page opens on is in view, however far down its window it is (a link with
// `#turn-N` does the same without the script).
document.addEventListener("DOMContentLoaded", () => {
  const current = document.querySelector("#turns article.turn.current");
  if (current && !location.hash) current.scrollIntoView({ block: "start" });
});
