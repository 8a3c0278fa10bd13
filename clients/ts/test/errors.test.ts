// DastError from the gRPC trailers a dast server sends: google.rpc.Status in
// grpc-status-details-bin, holding ErrorInfo (the reason enum's name) and RetryInfo.
import assert from "node:assert/strict";
import { test } from "node:test";
import { create, toBinary, type MessageInitShape } from "@bufbuild/protobuf";
import { anyPack, DurationSchema } from "@bufbuild/protobuf/wkt";
import { ConnectError } from "@connectrpc/connect";
import { findTrailerError } from "@connectrpc/connect/protocol-grpc";
import { ErrorInfoSchema, RetryInfoSchema } from "../src/gen/google/rpc/error_details_pb.js";
import { StatusSchema } from "../src/gen/google/rpc/status_pb.js";
import { Code, DAST_ERROR_DOMAIN, DastError, ErrorReason } from "../src/errors.js";
import { backoffDelayMs } from "../src/retry.js";

/** The trailers of a refused call, as the Python server writes them. */
function refusal(
  code: Code,
  info?: MessageInitShape<typeof ErrorInfoSchema>,
  retryDelay?: MessageInitShape<typeof DurationSchema>,
): ConnectError {
  const details = [];
  if (info !== undefined) details.push(anyPack(ErrorInfoSchema, create(ErrorInfoSchema, info)));
  if (retryDelay !== undefined) {
    details.push(anyPack(RetryInfoSchema, create(RetryInfoSchema, { retryDelay })));
  }
  const status = create(StatusSchema, { code, message: "refused", details });
  const trailer = new Headers({
    "grpc-status": String(code),
    "grpc-message": "refused",
    "grpc-status-details-bin": Buffer.from(toBinary(StatusSchema, status)).toString("base64"),
  });
  const error = findTrailerError(trailer);
  assert.ok(error !== undefined);
  return error;
}

test("a reason, its metadata and RetryInfo's delay are decoded", () => {
  const error = DastError.from(
    refusal(
      Code.ResourceExhausted,
      { reason: "ERROR_REASON_RATE_LIMITED", domain: DAST_ERROR_DOMAIN, metadata: { method: "SignInGuest" } },
      { seconds: 2n, nanos: 500_000_000 },
    ),
  );
  assert.equal(error.code, Code.ResourceExhausted);
  assert.equal(error.reason, ErrorReason.RATE_LIMITED);
  assert.equal(error.reasonName, "ERROR_REASON_RATE_LIMITED");
  assert.deepEqual(error.metadata, { method: "SignInGuest" });
  assert.equal(error.retryDelayMs, 2_500);
  assert.equal(error.rawMessage, "refused");
  assert.ok(error.transient, "a limit passes: retry after the delay");
});

test("a stale expected_seq is the server's refusal, not a network failure", () => {
  const error = DastError.from(
    refusal(Code.Aborted, { reason: "ERROR_REASON_STALE_EXPECTED_SEQ", domain: DAST_ERROR_DOMAIN }),
  );
  assert.equal(error.reason, ErrorReason.STALE_EXPECTED_SEQ);
  assert.ok(error.refusedByServer);
  assert.ok(!error.transient, "resending the same move would be refused again");
});

test("a server fault with a reason is not retried at once", () => {
  const error = DastError.from(
    refusal(Code.Internal, { reason: "ERROR_REASON_INTERNAL", domain: DAST_ERROR_DOMAIN, metadata: { ref: "r1" } }),
  );
  assert.equal(error.metadata.ref, "r1");
  assert.ok(!error.transient);
});

test("a dropped connection (no reason) may be retried whatever code Node gives it", () => {
  for (const code of [Code.Aborted, Code.Internal, Code.Unavailable, Code.Canceled, Code.Unknown]) {
    const error = DastError.from(new ConnectError("read ECONNRESET", code));
    assert.equal(error.reason, ErrorReason.UNSPECIFIED);
    assert.ok(!error.refusedByServer);
    assert.ok(error.transient, Code[code]);
  }
  assert.ok(!DastError.from(new ConnectError("no", Code.PermissionDenied)).transient);
});

test("a reason this client does not know keeps its name and reads as UNSPECIFIED", () => {
  const error = DastError.from(
    refusal(Code.FailedPrecondition, { reason: "ERROR_REASON_FROM_A_NEWER_SERVER", domain: DAST_ERROR_DOMAIN }),
  );
  assert.equal(error.reason, ErrorReason.UNSPECIFIED);
  assert.equal(error.reasonName, "ERROR_REASON_FROM_A_NEWER_SERVER");
  assert.ok(!error.transient);
});

test("ErrorInfo of another domain is not a dast reason", () => {
  const error = DastError.from(refusal(Code.Unavailable, { reason: "UPSTREAM_DOWN", domain: "proxy.example" }));
  assert.equal(error.reasonName, "");
  assert.equal(error.reason, ErrorReason.UNSPECIFIED);
});

test("anything thrown becomes a DastError", () => {
  const error = DastError.from(new Error("boom"));
  assert.equal(error.code, Code.Unknown);
  assert.equal(DastError.from(error), error);
});

test("backoff waits grow, stay under the cap, and never undercut RetryInfo", () => {
  const backoff = { initialMs: 100, maxMs: 1_000, maxAttempts: 5 };
  for (let attempt = 1; attempt <= 8; attempt += 1) {
    const wait = backoffDelayMs(backoff, attempt);
    assert.ok(wait >= 0 && wait <= Math.min(1_000, 100 * 2 ** (attempt - 1)), `${attempt}: ${wait}`);
  }
  assert.ok(backoffDelayMs(backoff, 1, 3_000) >= 3_000);
});
