// The replay page: open an exported log (file picker, or ?log=URL), verify it with the
// JavaScript verifier, then step through it from any seat or from above.
//
// URL parameters: log (a URL to fetch), key (the server's public key, base64), unsealed=1
// (accept a log without a seal), seat (a seat number, or "above"), seq (the event to show).
// Everything shown comes from the log's events (timeline.js); the log's text is hostile
// input, so the page only ever writes it as text (textContent), never as markup.
import { fromBase64, verifyLog } from "../verify-js/src/index.js";
import { buildTimeline, cardName, sortCards, suitOf } from "./timeline.js";

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
let frames = [];
let current = 0;

function element(tag, { className, text, attrs } = {}, children = []) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  for (const [name, value] of Object.entries(attrs ?? {})) node.setAttribute(name, value);
  for (const child of children) node.append(child);
  return node;
}

function cardNode(card, visible = true) {
  if (!visible) return element("span", { className: "card back", text: "·", attrs: { "aria-label": "hidden card" } });
  const suit = suitOf(card);
  const colour = suit < 0 ? "joker" : suit === 1 || suit === 3 ? "red" : "";
  return element("span", { className: `card ${colour}`.trim(), text: cardName(card), attrs: { "data-card": String(card) } });
}

const cardsNode = (cards, visible = true) => element("div", { className: "cards" }, cards.map((c) => cardNode(c, visible)));

function setStatus(text, kind) {
  const status = $("status");
  status.textContent = text;
  status.className = kind;
}

function showVerdict(report) {
  const checks = $("checks");
  const warnings = $("warnings");
  checks.replaceChildren(...report.checks.map((check) => element("li", {
    className: check.ok ? "ok" : "failed",
    text: check.ok ? `${check.label}${check.note ? ` (${check.note})` : ""}` : `${check.label}: ${check.problem}`,
    attrs: { "data-check": check.id },
  })));
  warnings.replaceChildren(...report.warnings.map((warning) => element("li", { text: `warning: ${warning}` })));
  if (report.ok) {
    setStatus("verified", "ok");
  } else {
    const failed = report.checks.filter((check) => !check.ok).map((check) => check.label);
    setStatus(`not verified: ${failed.join(", ")} failed`, "failed");
  }
}

function viewpoint() {
  const value = $("viewpoint").value;
  return value === "above" ? null : Number(value);
}

function seatPanel(state, seat, seeing) {
  const visible = seeing === null || seeing === seat;
  const hand = sortCards(state.hands[seat] ?? []);
  const title = `${state.names[seat]} · seat ${seat}${state.bots[seat] ? " · bot playing" : ""}`;
  const notes = [];
  if (state.game === "hokm") {
    if (state.hakem === seat) notes.push("hakem");
    notes.push(`${state.tricksWon[seat]} tricks`);
  } else {
    if (state.dealer === seat) notes.push("dealer");
    if (state.opened[seat]) notes.push("opened");
  }
  notes.push(`${hand.length} cards`);
  return element("div", { className: "seat", attrs: { "data-seat": String(seat) } }, [
    element("h3", { text: title }),
    element("p", { className: "muted", text: notes.join(" · ") }),
    cardsNode(hand, visible),
  ]);
}

function hokmCentre(state, seeing) {
  const children = [element("h3", { text: `Round ${state.round}` })];
  const facts = [];
  if (state.trump) facts.push(`trump ${state.trump}`);
  if (state.hakem !== null) facts.push(`hakem seat ${state.hakem}`);
  children.push(element("p", { className: "muted", text: facts.join(" · ") || "choosing the hakem" }));
  if (state.shown.length && state.trump === null) {
    children.push(element("p", { text: "Cards shown to choose the hakem:" }), cardsNode(state.shown.map((c) => c.card)));
  }
  const trick = state.trick.length ? state.trick : state.lastTrick?.plays ?? [];
  if (trick.length) {
    const label = state.trick.length ? "This trick:" : `Trick ${state.lastTrick.number}, to seat ${state.lastTrick.winner}:`;
    children.push(element("p", { text: label }), element("div", { className: "cards" },
      trick.map((play) => element("span", {}, [cardNode(play.card), element("span", { className: "muted", text: ` s${play.seat} ` })]))));
  }
  if (state.piles) {
    children.push(element("p", { text: `Piles: A ${state.piles.a.length} cards, B ${state.piles.b.length} cards; face up:` }),
      cardsNode([state.piles.a[0], state.piles.b[0]].filter((c) => c !== undefined)));
  }
  if (state.setAside.length && (seeing === null || seeing === state.hakem || state.result)) {
    children.push(element("p", { text: "Laid aside:" }), cardsNode(state.setAside));
  }
  return element("div", { className: "centre" }, children);
}

function handCentre(state) {
  const top = state.discard.at(-1);
  const children = [
    element("h3", { text: `Round ${state.round}` }),
    element("p", { className: "muted", text: `stock ${state.stockCount} · discard pile ${state.discard.length}` }),
  ];
  if (top !== undefined) children.push(element("p", { text: "Discard top:" }), cardsNode([top]));
  children.push(element("p", { text: state.melds.length ? "Melds on the table:" : "No meld on the table." }));
  for (const meld of state.melds) {
    children.push(element("div", { className: "meld" }, [
      element("span", { className: "muted", text: `#${meld.id} (seat ${meld.owner}) ` }), cardsNode(meld.cards),
    ]));
  }
  return element("div", { className: "centre" }, children);
}

function scoreRows(state) {
  const final = state.winners !== null;
  const figures = state.game === "hokm" ? state.scores : state.totals;
  const groups = state.teams ?? Array.from({ length: state.seats }, (_, seat) => [seat]);
  const header = element("tr", {}, [element("th", { text: state.teams ? "team" : "seat" }),
    element("th", { text: state.game === "hokm" ? "score" : "total (penalty)" }),
    element("th", { text: state.game === "hokm" ? "tricks this round" : "last round" })]);
  const rows = groups.map((seats) => {
    const won = final && seats.some((seat) => state.winners.includes(seat));
    const name = seats.map((seat) => `${state.names[seat]} (${seat})`).join(" + ");
    const last = state.game === "hokm"
      ? String(seats.reduce((sum, seat) => sum + state.tricksWon[seat], 0))
      : state.lastPoints ? seats.map((seat) => state.lastPoints[seat] ?? 0).join(" / ") : "–";
    return element("tr", { className: won ? "winner" : "", attrs: { "data-seats": seats.join(",") } }, [
      element("td", { text: won ? `${name} — winner` : name }),
      element("td", { className: "score", text: String(figures[seats[0]] ?? 0) }),
      element("td", { text: last }),
    ]);
  });
  return [header, ...rows];
}

function render() {
  const frame = frames[current];
  if (!frame) return;
  const { state } = frame;
  const seeing = viewpoint();
  $("slider").value = String(current + 1);
  $("position").textContent = `event ${frame.seq} of ${frames.length}`;
  $("event-text").textContent = frame.text;
  const panels = Array.from({ length: state.seats }, (_, seat) => seatPanel(state, seat, seeing));
  panels.splice(Math.min(1, panels.length), 0, state.game === "hokm" ? hokmCentre(state, seeing) : handCentre(state));
  $("table").replaceChildren(...panels);
  $("scores").replaceChildren(...scoreRows(state));
  $("scores").dataset.final = state.winners !== null ? "true" : "false";
}

function go(index) {
  current = Math.max(0, Math.min(frames.length - 1, index));
  render();
}

async function open(text) {
  setStatus("verifying…", "pending");
  $("player").hidden = true;
  let publicKey = null;
  const keyText = $("key").value.trim();
  if (keyText) {
    try {
      publicKey = fromBase64(keyText);
      if (publicKey.length !== 32) throw new Error(`${publicKey.length} bytes; an Ed25519 key has 32`);
    } catch (error) {
      setStatus(`the server key is not usable: ${error.message}`, "failed");
      return;
    }
  }
  const report = await verifyLog(text, { publicKey, unsealed: $("unsealed").checked });
  showVerdict(report);
  frames = buildTimeline(report.entries);
  if (frames.length === 0) {
    document.body.dataset.ready = "true";
    return;
  }
  const state = frames[0].state;
  $("viewpoint").replaceChildren(element("option", { text: "above (every hand)", attrs: { value: "above" } }),
    ...Array.from({ length: state.seats }, (_, seat) =>
      element("option", { text: `seat ${seat}: ${state.names[seat]}`, attrs: { value: String(seat) } })));
  const wanted = params.get("seat");
  if (wanted !== null && [...$("viewpoint").options].some((o) => o.value === wanted)) $("viewpoint").value = wanted;
  $("slider").max = String(frames.length);
  $("player").hidden = false;
  const seq = Number(params.get("seq"));
  go(Number.isInteger(seq) && seq > 0 ? seq - 1 : 0);
  document.body.dataset.ready = "true";
}

$("step-first").addEventListener("click", () => go(0));
$("step-prev").addEventListener("click", () => go(current - 1));
$("step-next").addEventListener("click", () => go(current + 1));
$("step-last").addEventListener("click", () => go(frames.length - 1));
$("slider").addEventListener("input", (event) => go(Number(event.target.value) - 1));
$("viewpoint").addEventListener("change", render);
document.addEventListener("keydown", (event) => {
  if (event.target instanceof HTMLInputElement && event.target.type !== "range") return;
  const moves = { ArrowLeft: current - 1, ArrowRight: current + 1, Home: 0, End: frames.length - 1 };
  if (event.key in moves && frames.length) {
    event.preventDefault();
    go(moves[event.key]);
  }
});
$("file").addEventListener("change", async () => {
  const file = $("file").files[0];
  if (file) await open(await file.text());
});

if (params.get("key")) $("key").value = params.get("key");
if (params.get("unsealed") === "1") $("unsealed").checked = true;
if (params.get("log")) {
  try {
    const response = await fetch(params.get("log"));
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    await open(await response.text());
  } catch (error) {
    setStatus(`cannot load the log: ${error.message}`, "failed");
    document.body.dataset.ready = "true";
  }
}
