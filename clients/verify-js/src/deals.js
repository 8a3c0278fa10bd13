// Re-deriving every deal of a Hokm or Hand log from its seed (docs/verification.md §3–§6).
//
// A walk over the events in order: whenever the rules draw from the match's stream
// (seating, the hakem's cards, a deal, the Hand stock and its restocks) the walker derives
// what the seed gives and the log must hold exactly that. Moves, tricks and scores are
// left to the engine's own audit; the walker only follows the events that move cards
// between the deck, the piles and the stock.
import { concat, utf8 } from "./bytes.js";
import { sha256 } from "./crypto.js";
import { encodeMessage } from "./protojson.js";
import { DeterministicRandom, range, shuffled } from "./rng.js";

const DECK_KEY_DOMAIN = utf8("dast/deck-key/v1");

/** sha256("dast/deck-key/v1" ‖ sha256(server seed) ‖ sha256(client seed) …). */
export async function deckKey(serverSeed, clientSeeds) {
  const parts = [DECK_KEY_DOMAIN, await sha256(serverSeed)];
  for (const seed of clientSeeds) parts.push(await sha256(seed));
  return sha256(concat(...parts));
}

/** The game, the kind of event and its body: {game: "hokm", kind: "cards_dealt", body}. */
export function eventKind(event) {
  if (event.seat_control) return { game: "control", kind: "seat_control", body: event.seat_control };
  for (const game of ["hokm", "hand"]) {
    if (event[game]) {
      const [kind] = Object.keys(event[game]);
      return { game, kind: kind ?? null, body: kind ? event[game][kind] : {} };
    }
  }
  return { game: null, kind: null, body: {} };
}

class DealProblem extends Error {}

const PACKET_FIRST = 5;
const PACKET = 4;
const ACE = 12;
const HOKM_SEATS = { 0: 4, 1: 4, 2: 3, 3: 2 };  // HokmVariant: unspecified means four
const HOKM_HAND_SIZE = { 4: 13, 3: 16, 2: 13 };
const SELECTION = { FIRST_ACE: 1, ACE_IN_FIVE: 2, RANDOM: 3 };
const ROTATION_REDETERMINE = 2;
const TRUMP_2P_HAKEM_DECLARES = 2;

/** Compare a logged event body with the one the seed gives, through their canonical bytes. */
function expectBody(seq, kind, type, logged, derived, what) {
  const a = encodeMessage(logged, type);
  const b = encodeMessage(derived, type);
  if (a.length !== b.length || a.some((byte, i) => byte !== b[i])) {
    throw new DealProblem(`seq ${seq}: the log's ${kind} differs from ${what}`);
  }
}

/** Hokm (docs/verification.md §5). */
class HokmDeals {
  constructor(key, started) {
    this.key = key;
    const rules = started.rules ?? {};
    this.seats = HOKM_SEATS[rules.variant ?? 0];
    if (this.seats === undefined) throw new DealProblem(`seq 1: unknown Hokm variant ${rules.variant}`);
    this.handSize = HOKM_HAND_SIZE[this.seats];
    this.selection = rules.hakem_selection || SELECTION.FIRST_ACE;
    if (!Object.values(SELECTION).includes(this.selection)) {
      throw new DealProblem(`seq 1: unknown hakem selection ${this.selection}`);
    }
    this.rotation = rules.hakem_rotation ?? 0;
    this.hakemDeclares = this.seats !== 2 || rules.trump_2p === TRUMP_2P_HAKEM_DECLARES;
    this.round = 0;
    this.hakem = null;
    this.hakemWon = null;
    this.expected = [];  // events the seed dictates next: [{kind, type, body, what, after}]
    this.deal = null;
    this.piles = null;
  }

  async start(started) {
    const seating = started.rules?.random_partners
      ? await shuffled(this.key, "match/seating", range(this.seats))
      : range(this.seats);
    const logged = started.seating ?? [];
    if (logged.length !== seating.length || logged.some((seat, i) => seat !== seating[i])) {
      throw new DealProblem("seq 1: the seating differs from the one the seed gives (label match/seating)");
    }
  }

  async drawHakem(round) {
    const seats = this.seats;
    if (this.selection === SELECTION.RANDOM) {
      const rng = await DeterministicRandom.open(this.key, `round/${round}/hakem`);
      return { attempts: [], hakem: await rng.randbelow(seats) };
    }
    const attempts = [];
    for (;;) {
      const label = `round/${round}/hakem/${attempts.length + 1}`;
      const deck = await shuffled(this.key, label, range(52));
      if (this.selection === SELECTION.ACE_IN_FIVE) {
        const shown = range(PACKET_FIRST * seats).map((i) => ({ seat: i % seats, card: deck[i] }));
        attempts.push({ shown, label });
        const aces = shown.filter(({ card }) => card % 13 === ACE).sort((a, b) => a.card - b.card);
        if (aces.length > 0) return { attempts, hakem: aces[0].seat };
        continue;
      }
      const first = deck.findIndex((card) => card % 13 === ACE);
      attempts.push({ shown: range(first + 1).map((j) => ({ seat: j % seats, card: deck[j] })), label });
      return { attempts, hakem: first % seats };
    }
  }

  async dealRound(round, hakem) {
    const deck = await shuffled(this.key, `round/${round}/deal`, range(52));
    const seats = this.seats;
    const order = range(seats).map((k) => (hakem + k) % seats);
    const first = deck.slice(0, PACKET_FIRST);
    let position = PACKET_FIRST;
    const rest = range(seats).map(() => []);
    for (const seat of order.slice(1)) {
      rest[seat].push(...deck.slice(position, position + PACKET_FIRST));
      position += PACKET_FIRST;
    }
    const held = new Array(seats).fill(PACKET_FIRST);
    while (held.some((count) => count < this.handSize)) {
      for (const seat of order) {
        const take = Math.min(PACKET, this.handSize - held[seat]);
        rest[seat].push(...deck.slice(position, position + take));
        position += take;
        held[seat] += take;
      }
    }
    const leftover = deck.slice(position);
    return { first, rest, leftover, label: `round/${round}/deal` };
  }

  expect(kind, type, body, what, after = null) {
    this.expected.push({ kind, type, body, what, after });
  }

  dealtHands(hands) {
    return { hands: hands.map(([seat, cards]) => withoutDefaults({ seat, cards, count: cards.length })) };
  }

  async onEvent(seq, kind, body) {
    if (this.expected.length > 0) {
      const want = this.expected.shift();
      if (kind !== want.kind) throw new DealProblem(`seq ${seq}: the log has ${kind} where the rules deal ${want.kind} (${want.what})`);
      expectBody(seq, kind, want.type, body, want.body, want.what);
      if (want.after !== null) want.after();
      return;
    }
    switch (kind) {
      case "round_started": {
        const round = body.round ?? 0;
        if (round !== this.round + 1) throw new DealProblem(`seq ${seq}: round ${round} follows round ${this.round}`);
        this.round = round;
        this.piles = null;
        if (round === 1 || this.rotation === ROTATION_REDETERMINE) {
          const draw = await this.drawHakem(round);
          for (const [index, { shown, label }] of draw.attempts.entries()) {
            this.expect("hakem_cards_shown", "dast.v1.HakemCardsShown",
              withoutDefaults({ attempt: index + 1, cards: shown.map(withoutDefaults) }),
              `the cards the seed shows to choose the hakem (label ${label})`);
          }
          this.hakem = draw.hakem;
        } else {
          this.hakem = this.hakemWon ? this.hakem : (this.hakem + 1) % this.seats;
        }
        this.expect("hakem_chosen", "dast.v1.HakemChosen", withoutDefaults({ seat: this.hakem }),
          round === 1 || this.rotation === ROTATION_REDETERMINE
            ? "the hakem the seed chooses" : "the hakem the rotation gives");
        this.deal = await this.dealRound(round, this.hakem);
        const what = `the deal of the seed (label ${this.deal.label})`;
        if (this.hakemDeclares) {
          this.expect("cards_dealt", "dast.v1.CardsDealt", this.dealtHands([[this.hakem, this.deal.first]]), what);
        } else {
          const whole = range(this.seats).map((seat) =>
            [seat, seat === this.hakem ? [...this.deal.first, ...this.deal.rest[seat]] : this.deal.rest[seat]]);
          this.expect("cards_dealt", "dast.v1.CardsDealt", this.dealtHands(whole), what);
          this.expectPiles(what);
          this.expect("trump_declared", "dast.v1.TrumpDeclared",
            withoutDefaults({ seat: this.hakem, suit: Math.floor(this.deal.leftover[0] / 13) + 1, from_pile: true }),
            "the trump of pile A's top card");
        }
        return;
      }
      case "trump_declared": {
        if (!this.hakemDeclares || this.deal === null) throw new DealProblem(`seq ${seq}: a trump declaration the deal does not allow here`);
        const what = `the deal of the seed (label ${this.deal.label})`;
        this.expect("cards_dealt", "dast.v1.CardsDealt",
          this.dealtHands(range(this.seats).map((seat) => [seat, this.deal.rest[seat]])), what);
        if (this.seats === 3) {
          this.expect("kitty_taken", "dast.v1.KittyTaken",
            withoutDefaults({ seat: this.hakem, cards: this.deal.leftover, count: this.deal.leftover.length }), what);
        } else if (this.seats === 2) {
          this.expectPiles(what);
        }
        this.deal = null;  // declared once per round
        return;
      }
      case "pile_cards_taken": {
        if (this.piles === null || this.piles[0].length === 0) throw new DealProblem(`seq ${seq}: a pile card taken while no pile is left`);
        const pile = body.winner_pile ?? 0;
        if (pile > 1) throw new DealProblem(`seq ${seq}: pile ${pile} does not exist`);
        const [a, b] = this.piles;
        const derived = withoutDefaults({
          winner: body.winner ?? 0, winner_pile: pile,
          winner_card: (pile === 0 ? a : b)[0], loser_card: (pile === 0 ? b : a)[0],
          has_top_a: a.length > 1, top_a: a.length > 1 ? a[1] : 0,
          has_top_b: b.length > 1, top_b: b.length > 1 ? b[1] : 0,
        });
        expectBody(seq, kind, "dast.v1.PileCardsTaken", body, derived, "the piles the seed laid");
        this.piles = [a.slice(1), b.slice(1)];
        return;
      }
      case "round_ended":
        this.hakemWon = (body.winners ?? []).includes(this.hakem);
        return;
      case "hakem_cards_shown":
      case "hakem_chosen":
      case "cards_dealt":
      case "kitty_taken":
      case "piles_laid":
        throw new DealProblem(`seq ${seq}: ${kind} where the seed deals nothing`);
      default:
    }
  }

  /** Two players: pile A is the first half of what the deal leaves, pile B the rest. */
  expectPiles(what) {
    const half = this.deal.leftover.length / 2;
    const piles = [this.deal.leftover.slice(0, half), this.deal.leftover.slice(half)];
    const [a, b] = piles;
    this.expect("piles_laid", "dast.v1.PilesLaid",
      withoutDefaults({ pile_a: a, pile_b: b, top_a: a[0], top_b: b[0] }), what, () => { this.piles = piles; });
  }

  finish() {
    if (this.expected.length > 0) throw new DealProblem(`the log ends where the rules deal ${this.expected[0].kind}`);
  }
}

const HAND_DECK = 106;
const HAND_SIZE = 14;

/** Hand (docs/verification.md §6). */
class HandDeals {
  constructor(key, started) {
    this.key = key;
    this.seats = started.rules?.players ?? (started.players ?? []).length;
    if (![2, 3, 4].includes(this.seats)) throw new DealProblem(`seq 1: a Hand match of ${this.seats} seats`);
    this.deal = 0;
    this.stock = null;
    this.discard = [];
    this.restocks = 0;
    this.expected = null;
  }

  async start() {}

  async onEvent(seq, kind, body) {
    if (this.expected !== null) {
      const want = this.expected;
      this.expected = null;
      if (kind !== "cards_dealt") throw new DealProblem(`seq ${seq}: the log has ${kind} where the rules deal the cards`);
      expectBody(seq, kind, "dast.v1.HandCardsDealt", body, want.body, want.what);
      return;
    }
    switch (kind) {
      case "round_started": {
        const deal = body.deal ?? 0;
        if (deal !== this.deal + 1) throw new DealProblem(`seq ${seq}: deal ${deal} follows deal ${this.deal}`);
        this.deal = deal;
        const dealer = body.dealer ?? 0;
        if (dealer >= this.seats) throw new DealProblem(`seq ${seq}: dealer ${dealer} is no seat`);
        const label = `deal/${deal}`;
        const deck = await shuffled(this.key, label, range(HAND_DECK));
        const hands = new Array(this.seats);
        let position = 0;
        for (let step = 1; step <= this.seats; step++) {
          const seat = (dealer + step) % this.seats;
          const size = step === 1 ? HAND_SIZE + 1 : HAND_SIZE;
          const cards = deck.slice(position, position + size).sort((x, y) => x - y);
          position += size;
          hands[seat] = withoutDefaults({ seat, cards, count: cards.length });
        }
        this.stock = deck.slice(position);
        this.discard = [];
        this.restocks = 0;
        this.expected = {
          body: withoutDefaults({ hands, stock: this.stock, stock_count: this.stock.length }),
          what: `the deal of the seed (label ${label})`,
        };
        return;
      }
      case "card_drawn": {
        if (this.stock === null) throw new DealProblem(`seq ${seq}: a card drawn before any deal`);
        if (body.from_discard) {
          const top = this.discard.at(-1);
          if (top === undefined || body.card !== top) throw new DealProblem(`seq ${seq}: the card taken is not the discard pile's top`);
          this.discard.pop();
        } else {
          if (this.stock.length === 0 || body.card !== this.stock[0]) {
            throw new DealProblem(`seq ${seq}: the card drawn is not the top of the stock the seed dealt`);
          }
          this.stock = this.stock.slice(1);
        }
        return;
      }
      case "card_discarded":
        this.discard.push(body.card ?? 0);
        return;
      case "stock_restocked": {
        const restocks = this.restocks + 1;
        const label = `deal/${this.deal}/restock/${restocks}`;
        const stock = await shuffled(this.key, label, this.discard.slice(0, -1));
        expectBody(seq, kind, "dast.v1.StockRestocked", body,
          withoutDefaults({ stock, stock_count: stock.length, restocks }),
          `the restock of the seed (label ${label})`);
        this.restocks = restocks;
        this.stock = stock;
        this.discard = this.discard.slice(-1);
        return;
      }
      case "cards_dealt":
        throw new DealProblem(`seq ${seq}: cards dealt where the seed deals nothing`);
      default:
    }
  }

  finish() {
    if (this.expected !== null) throw new DealProblem("the log ends where the rules deal the cards");
  }
}

/** Drop the fields at their proto3 default, as the JSON mapping and the encoder do. */
function withoutDefaults(body) {
  return Object.fromEntries(Object.entries(body).filter(([, value]) =>
    !(value === 0 || value === false || (Array.isArray(value) && value.length === 0))));
}

/**
 * The first way the log's deals differ from its seed (a sentence), or null.
 * `events` are the log's events in order; `serverSeed` the revealed seed.
 */
export async function findDealProblem(events, serverSeed) {
  try {
    const first = eventKind(events[0]);
    if (first.kind !== "match_started" || (first.game !== "hokm" && first.game !== "hand")) {
      throw new DealProblem("seq 1: the first event is not a Hokm or Hand match start");
    }
    const started = first.body;
    const fairness = started.fairness ?? {};
    const clientSeeds = fairness.client_seeds ?? [];
    const players = started.players ?? [];
    if (clientSeeds.length !== players.length || players.some((player, i) =>
      !sameBytes(player.client_seed ?? new Uint8Array(0), clientSeeds[i]))) {
      throw new DealProblem("seq 1: the client seeds differ from the players' own");
    }
    const key = await deckKey(serverSeed, clientSeeds);
    const walker = first.game === "hokm" ? new HokmDeals(key, started) : new HandDeals(key, started);
    await walker.start(started);
    for (let index = 1; index < events.length; index++) {
      const { game, kind, body } = eventKind(events[index]);
      const seq = index + 1;
      if (game === "control") continue;  // who controls a seat moves no card
      if (game !== first.game) throw new DealProblem(`seq ${seq}: not a ${first.game} event`);
      if (kind === "match_started") throw new DealProblem(`seq ${seq}: a second match start`);
      await walker.onEvent(seq, kind, body);
    }
    walker.finish();
    return null;
  } catch (error) {
    if (error instanceof DealProblem) return error.message;
    throw error;
  }
}

function sameBytes(a, b) {
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}
