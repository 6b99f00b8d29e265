// Package venue is the Bybit V5 REST client: it signs requests, retries
// reads, parses the venue's envelope and rate-limit headers, and translates
// every failure into a *messages.Error with a stable docs/errors.md code.
//
// # Contract
//
//   - Every error a Client returns is a *messages.Error (match it with
//     errors.As or messages.CodeOf). The cause is kept in Err for logs.
//   - Exchange text (retMsg) is placed only in UntrustedText, never in
//     Message or NextStep. The API secret, signatures and signed strings never
//     appear in errors or logs.
//   - Reads (GET) are retried with backoff on transient failures (network,
//     timeouts, HTTP 5xx, non-JSON bodies, retCodes 10000, 10016, 170007,
//     170032 ...), at most Config.ReadRetries extra times, honouring ctx.
//     Rate limits, clock errors and definite refusals are never retried.
//   - Writes (POST) are sent exactly once. A transient failure on a write
//     becomes outcome_unknown: the order may exist and the caller must look
//     it up by its client order id, never resend.
//   - The query string or JSON body is encoded once; those exact bytes are
//     signed and sent (Bybit verifies the raw bytes, docs/bybit.md "Signing"). Query
//     values are percent-encoded (a space is %20), so caller-supplied text
//     such as a cursor can neither add parameters nor change the signature.
//   - Account reads (account.go) are signed GETs returning messages values;
//     list reads return a messages.Page whose NextCursor is passed back
//     unchanged. Limits and the 7-day history window are checked before
//     anything is sent; a hedge-mode position is unsupported_position_mode.
//   - Order and position writes (orders.go) take typed requests and
//     classify every failure as not_sent, refused or unknown
//     (ClassifyWrite); an unknown outcome is settled by Settle
//     (outcome.go), never resent. The private stream client is Stream
//     (stream.go). See docs/venue-trading.md.
//
// The one retCode/HTTP-status mapping lives in errorTable (errors.go) and is
// documented in docs/venue-errors.md.
//
// # Concurrency
//
// A Client and an InstrumentCache are safe for concurrent use by several
// goroutines. Config is read once by NewClient and must not be changed
// afterwards.
//
// # Imports
//
// venue imports messages and nothing else from this module (docs/invariants.md "Rules of the code").
package venue
