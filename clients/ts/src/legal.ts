// The simplest player: the first command the view lists as legal. Tests and examples play
// with it; an app offers the player the view's `legal` list instead.
import { create } from "@bufbuild/protobuf";
import { SetAsideCardsSchema } from "./gen/dast/v1/hokm_pb.js";
import type { GameCommand, MoveToMake } from "./match.js";

/** Three-player Hokm: the hakem lays exactly this many of the listed cards aside. */
export const SET_ASIDE_COUNT = 4;

/**
 * The first legal command of the seat's view. Hokm's set-aside phase lists one
 * SetAsideCards holding the whole hand to choose from, so the first 4 of its cards are taken.
 */
export function firstLegalCommand(move: MoveToMake): GameCommand {
  const view = move.view;
  switch (view.case) {
    case "hokm": {
      const first = view.value.legal[0];
      if (first === undefined) throw new Error(`seq ${move.seq}: the seat's turn with no legal command`);
      if (first.kind.case === "setAsideCards") {
        const cards = first.kind.value.cards.slice(0, SET_ASIDE_COUNT);
        return {
          case: "hokm",
          value: { ...first, kind: { case: "setAsideCards", value: create(SetAsideCardsSchema, { cards }) } },
        };
      }
      return { case: "hokm", value: first };
    }
    case "hand": {
      const first = view.value.legal[0];
      if (first === undefined) throw new Error(`seq ${move.seq}: the seat's turn with no legal command`);
      return { case: "hand", value: first };
    }
    case "other":
      throw new Error("a game outside the schema: this client cannot choose its moves");
  }
}
