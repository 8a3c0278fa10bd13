// The public face of the verifier: an ES module without Node-only imports, for Node 20 and
// browsers alike (WebCrypto only).
export { verifyLog, CHECKS } from "./verify.js";
export { readLog, readReceipts, LogFormatError } from "./logfile.js";
export { eventKind, deckKey, findDealProblem } from "./deals.js";
export { DeterministicRandom, shuffled } from "./rng.js";
export { canonicalBytes, findChainBreak } from "./chain.js";
export { sealMessage } from "./seal.js";
export { fromBase64, toBase64 } from "./bytes.js";
export { readMessage, encodeMessage, ProtoJsonError } from "./protojson.js";
