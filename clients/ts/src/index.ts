// The dast TypeScript client: the generated messages and services (./gen), and a small
// layer over them for what every app does: sign in, reach a table, follow a match across
// network drops, and act with `expected_seq` and idempotent command ids.
export {
  DastClient,
  createDastTransport,
  callOrThrow,
  type ConnectOptions,
  type GuestOptions,
  type IdTokenOptions,
  type ResumeOptions,
  type SignInOptions,
} from "./client.js";
export { REFRESH_MARGIN_MS, isTokenExpired, type SessionListener, type StoredSession } from "./session.js";
export {
  Match,
  PLAY_OUTCOME_MS,
  PLAY_SILENCE_MS,
  type StreamAuth,
  type ActOutcome,
  type GameCommand,
  type MatchOptions,
  type MatchUpdate,
  type MoveToMake,
  type SeatState,
  type SeatView,
} from "./match.js";
export { Code, DAST_ERROR_DOMAIN, DastError, ErrorReason, StreamContractError, reasonOf } from "./errors.js";
export { DEFAULT_BACKOFF, backoffDelayMs, type Backoff } from "./retry.js";
export { SET_ASIDE_COUNT, firstLegalCommand } from "./legal.js";
