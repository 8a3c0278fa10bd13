// The states of a game after each event of its log, for the replay page.
//
// Nothing here knows the rules: every state follows from the events alone (the cards each
// deal, draw or pile gives, each card played, melded or discarded, the scores and totals
// the round ends record), so what the page shows is what the log says, and the log is
// what the verifier checked. `buildTimeline(entries)` takes the entries the verifier read
// and returns one frame per event: {seq, text, state}.
import { eventKind } from "../verify-js/src/index.js";

const SUITS = ["♠", "♥", "♣", "♦"];
const RANKS = ["2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K", "A"];
const JOKERS = new Set([104, 105]);

/** A card's name: `10♥`; a Hand joker is `★`. */
export function cardName(card) {
  if (JOKERS.has(card)) return "★";
  const face = card % 52;
  return RANKS[face % 13] + SUITS[Math.floor(face / 13)];
}

/** The suit of a card (0 ♠ … 3 ♦), or -1 for a joker. */
export const suitOf = (card) => (JOKERS.has(card) ? -1 : Math.floor((card % 52) / 13));

const SUIT_ENUM = { 1: "♠", 2: "♥", 3: "♣", 4: "♦" };
const HOKM_RESULTS = { 1: "win", 2: "kot", 3: "hakem kot", 4: "shelem" };
const HAND_FINISH = { 1: "out", 2: "hand" };
const CONTROL_REASONS = { 1: "disconnected", 2: "timed out", 3: "left", 4: "reconnected", 5: "rejoined" };

const sorted = (cards) => [...cards].sort((a, b) => suitOf(a) - suitOf(b) || (a % 13) - (b % 13) || a - b);
const list = (cards) => (cards ?? []).map(cardName).join(" ");

function removeCards(hand, cards) {
  const left = [...hand];
  for (const card of cards) {
    const at = left.indexOf(card);
    if (at >= 0) left.splice(at, 1);
  }
  return left;
}

function clone(state) {
  return structuredClone(state);
}

function hokmStart(body) {
  const players = body.players ?? [];
  const seating = body.seating ?? players.map((_, i) => i);
  const seats = seating.length;
  return {
    game: "hokm",
    seats,
    names: seating.map((index) => players[index]?.display_name || players[index]?.player_id || `seat ${index}`),
    bots: new Array(seats).fill(false),
    teams: seats === 4 ? [[0, 2], [1, 3]] : null,
    round: 0,
    hakem: null,
    trump: null,
    hands: Array.from({ length: seats }, () => []),
    trick: [],
    lastTrick: null,
    tricksWon: new Array(seats).fill(0),
    scores: new Array(seats).fill(0),
    piles: null,
    setAside: [],
    shown: [],
    result: null,
    winners: null,
  };
}

function handStart(body) {
  const players = body.players ?? [];
  const partnerships = body.rules?.partnerships === true;
  return {
    game: "hand",
    seats: players.length,
    names: players.map((p, i) => p.display_name || p.player_id || `seat ${i}`),
    bots: new Array(players.length).fill(false),
    teams: partnerships ? [[0, 2], [1, 3]] : null,
    round: 0,
    dealer: 0,
    hands: players.map(() => []),
    stockCount: 0,
    discard: [],
    melds: [],
    opened: players.map(() => false),
    totals: players.map(() => 0),
    lastPoints: null,
    result: null,
    winners: null,
  };
}

/** Apply one Hokm event; returns the sentence that tells it. */
function hokmStep(s, kind, b) {
  const name = (seat) => `${s.names[seat] ?? `seat ${seat}`} (seat ${seat})`;
  switch (kind) {
    case "round_started":
      Object.assign(s, { round: b.round ?? 0, hakem: null, trump: null, trick: [], lastTrick: null, piles: null,
        tricksWon: new Array(s.seats).fill(0), hands: Array.from({ length: s.seats }, () => []), setAside: [], shown: [], result: null });
      return `Round ${s.round} starts`;
    case "hakem_cards_shown":
      s.shown = (b.cards ?? []).map((c) => ({ seat: c.seat ?? 0, card: c.card ?? 0 }));
      return `Cards shown to choose the hakem: ${s.shown.map((c) => `${cardName(c.card)}→${c.seat}`).join(" ")}`;
    case "hakem_chosen":
      s.hakem = b.seat ?? 0;
      return `${name(s.hakem)} is hakem`;
    case "cards_dealt":
      for (const share of b.hands ?? []) s.hands[share.seat ?? 0].push(...(share.cards ?? []));
      return `Cards dealt: ${(b.hands ?? []).map((h) => `${h.count ?? 0} to seat ${h.seat ?? 0}`).join(", ")}`;
    case "piles_laid":
      s.piles = { a: [...(b.pile_a ?? [])], b: [...(b.pile_b ?? [])] };
      return `Two piles laid; face up ${cardName(b.top_a ?? 0)} and ${cardName(b.top_b ?? 0)}`;
    case "trump_declared":
      s.trump = SUIT_ENUM[b.suit] ?? "?";
      return `${name(b.seat ?? 0)} declares ${s.trump} trump${b.from_pile ? " (pile A's top card)" : ""}`;
    case "kitty_taken":
      s.hands[b.seat ?? 0].push(...(b.cards ?? []));
      return `${name(b.seat ?? 0)} takes the kitty`;
    case "cards_set_aside":
      s.hands[b.seat ?? 0] = removeCards(s.hands[b.seat ?? 0], b.cards ?? []);
      s.setAside = [...(b.cards ?? [])];
      return `${name(b.seat ?? 0)} lays 4 cards aside`;
    case "card_played":
      s.hands[b.seat ?? 0] = removeCards(s.hands[b.seat ?? 0], [b.card ?? 0]);
      s.trick = [...s.trick, { seat: b.seat ?? 0, card: b.card ?? 0 }];
      return `${name(b.seat ?? 0)} plays ${cardName(b.card ?? 0)}`;
    case "trick_taken":
      s.tricksWon[b.seat ?? 0] += 1;
      s.lastTrick = { plays: s.trick, winner: b.seat ?? 0, number: b.trick ?? 0 };
      s.trick = [];
      return `Trick ${b.trick ?? 0} to ${name(b.seat ?? 0)}`;
    case "pile_cards_taken": {
      const winner = b.winner ?? 0;
      const loser = (winner + 1) % 2;
      s.hands[winner].push(b.winner_card ?? 0);
      s.hands[loser].push(b.loser_card ?? 0);
      if (s.piles) s.piles = { a: s.piles.a.slice(1), b: s.piles.b.slice(1) };
      return `${name(winner)} takes ${cardName(b.winner_card ?? 0)}, seat ${loser} takes ${cardName(b.loser_card ?? 0)}`;
    }
    case "round_ended":
      s.scores = [...(b.scores ?? new Array(s.seats).fill(0))];
      while (s.scores.length < s.seats) s.scores.push(0);
      s.result = { result: HOKM_RESULTS[b.result] ?? "?", winners: b.winners ?? [], points: b.points ?? [], tricks: b.tricks ?? [] };
      if ((b.set_aside ?? []).length) s.setAside = [...b.set_aside];
      return `Round ${b.round ?? 0} ends: ${s.result.result} for seat${s.result.winners.length > 1 ? "s" : ""} ${s.result.winners.join(" and ")}`;
    case "match_ended":
      s.winners = b.winners ?? [];
      s.scores = [...(b.scores ?? s.scores)];
      while (s.scores.length < s.seats) s.scores.push(0);
      return `Match over: seat${s.winners.length > 1 ? "s" : ""} ${s.winners.join(" and ")} win`;
    default:
      return kind;
  }
}

function replaceMeld(s, meld) {
  const id = meld.id ?? 0;
  s.melds = s.melds.filter((m) => m.id !== id).concat([{ id, owner: meld.owner ?? 0, cards: meld.cards ?? [] }])
    .sort((x, y) => x.id - y.id);
}

/** Apply one Hand event; returns the sentence that tells it. */
function handStep(s, kind, b) {
  const name = (seat) => `${s.names[seat] ?? `seat ${seat}`} (seat ${seat})`;
  switch (kind) {
    case "round_started":
      Object.assign(s, { round: b.round ?? 0, dealer: b.dealer ?? 0, hands: s.hands.map(() => []), discard: [], melds: [],
        opened: s.hands.map(() => false), stockCount: 0, result: null });
      return `Round ${s.round} (deal ${b.deal ?? 0}) starts; ${name(s.dealer)} deals`;
    case "cards_dealt":
      for (const share of b.hands ?? []) s.hands[share.seat ?? 0] = [...(share.cards ?? [])];
      s.stockCount = b.stock_count ?? 0;
      return `Cards dealt; ${s.stockCount} in the stock`;
    case "card_drawn": {
      const seat = b.seat ?? 0;
      if (b.card !== undefined) s.hands[seat].push(b.card);
      if (b.from_discard) s.discard.pop();
      else s.stockCount = Math.max(0, s.stockCount - 1);
      return `${name(seat)} ${b.from_discard ? "takes the discard" : "draws from the stock"}${b.card !== undefined ? ` (${cardName(b.card)})` : ""}`;
    }
    case "melds_laid": {
      const seat = b.seat ?? 0;
      for (const meld of b.melds ?? []) {
        s.hands[seat] = removeCards(s.hands[seat], meld.cards ?? []);
        replaceMeld(s, meld);
      }
      if (b.opening) s.opened[seat] = true;
      return `${name(seat)} lays ${(b.melds ?? []).map((m) => list(m.cards)).join(" | ")}${b.opening ? ` (opening, ${b.total ?? 0})` : ""}`;
    }
    case "card_laid_off":
      s.hands[b.seat ?? 0] = removeCards(s.hands[b.seat ?? 0], [b.card ?? 0]);
      if (b.meld) replaceMeld(s, b.meld);
      return `${name(b.seat ?? 0)} lays ${cardName(b.card ?? 0)} off`;
    case "joker_retrieved":
      s.hands[b.seat ?? 0] = removeCards(s.hands[b.seat ?? 0], b.cards ?? []);
      s.hands[b.seat ?? 0].push(b.joker ?? 104);
      if (b.meld) replaceMeld(s, b.meld);
      return `${name(b.seat ?? 0)} takes a joker back for ${list(b.cards)}`;
    case "card_discarded":
      s.hands[b.seat ?? 0] = removeCards(s.hands[b.seat ?? 0], [b.card ?? 0]);
      s.discard.push(b.card ?? 0);
      return `${name(b.seat ?? 0)} discards ${cardName(b.card ?? 0)}`;
    case "stock_restocked":
      s.stockCount = b.stock_count ?? 0;
      s.discard = s.discard.slice(-1);
      return `The discard pile is shuffled into a new stock (${s.stockCount} cards)`;
    case "round_voided":
      return `Round ${b.round ?? 0} is void: the stock ran out`;
    case "round_ended":
      s.totals = [...(b.totals ?? s.totals)];
      while (s.totals.length < s.seats) s.totals.push(0);
      s.lastPoints = [...(b.points ?? [])];
      s.result = { wentOut: b.went_out ?? 0, finish: HAND_FINISH[b.finish] ?? "?", doubled: b.doubled === true };
      for (const share of b.remaining ?? []) s.hands[share.seat ?? 0] = [...(share.cards ?? [])];
      return `Round ${b.round ?? 0} ends: ${name(s.result.wentOut)} goes ${s.result.finish}${s.result.doubled ? " (doubled)" : ""}`;
    case "match_ended":
      s.winners = b.winners ?? [];
      s.totals = [...(b.totals ?? s.totals)];
      while (s.totals.length < s.seats) s.totals.push(0);
      return `Match over: seat${s.winners.length > 1 ? "s" : ""} ${s.winners.join(" and ")} win`;
    default:
      return kind;
  }
}

/** One frame per event: {seq, text, state}; states share nothing, so any can be shown. */
export function buildTimeline(entries) {
  if (entries.length === 0) return [];
  const first = eventKind(entries[0].event);
  if (first.kind !== "match_started" || (first.game !== "hokm" && first.game !== "hand")) return [];
  let state = first.game === "hokm" ? hokmStart(first.body) : handStart(first.body);
  const frames = [{ seq: 1, text: `${first.game === "hokm" ? "Hokm" : "Hand"} match of ${state.seats} starts`, state: clone(state) }];
  for (let index = 1; index < entries.length; index++) {
    const { game, kind, body } = eventKind(entries[index].event);
    state = clone(state);
    let text;
    if (game === "control") {
      const seat = body.seat ?? 0;
      state.bots[seat] = body.bot === true;
      text = body.bot
        ? `A ${body.bot_level || "bot"} bot plays seat ${seat} (${CONTROL_REASONS[body.reason] ?? "asked"}, by ${body.requested_by || "?"})`
        : `Seat ${seat} is back with its player (${CONTROL_REASONS[body.reason] ?? "asked"})`;
    } else if (game === state.game) {
      const before = clone(state);
      try {
        text = (game === "hokm" ? hokmStep : handStep)(state, kind, body);
      } catch (error) {
        // Only a log that failed verification gets here (a seat that does not exist…).
        state = before;
        text = `an event the replay cannot show (${kind}: ${error.message})`;
      }
    } else {
      text = "an event of another game";
    }
    frames.push({ seq: index + 1, text, state });
  }
  return frames;
}

export { sorted as sortCards };
