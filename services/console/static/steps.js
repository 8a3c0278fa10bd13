// The arrow keys step through a replay, following the page's own previous/next links.
document.addEventListener("keydown", (event) => {
  const link = { ArrowLeft: "previous-frame", ArrowRight: "next-frame" }[event.key];
  const target = link && document.getElementById(link);
  if (target) { window.location.assign(target.href); }
});
