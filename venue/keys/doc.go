// Package keys keeps exchange credentials secret and decides whether an
// exchange key may be used: it seals an API key and secret for storage,
// opens them again, and checks a key's permissions against the allowlist of
// docs/invariants.md "Keys". It is pure: no I/O besides crypto/rand, no clock, no state.
//
// One idea: keys knows credentials and permissions, not users, the journal
// or the exchange. It imports only messages from this module.
//
// # Threat model (docs/invariants.md "G6")
//
// API secrets must never reach logs, the journal, errors, tool results or
// command output, and are encrypted at rest. Secret redacts itself on every
// printing, encoding and logging path; Reveal is the only way to the value.
// Seal encrypts with AES-256-GCM under a sub-key derived by HKDF-SHA256 from
// the 256-bit master key (a 0600 file outside the data directory, read by
// the caller), with associated data that binds the credential id, user,
// exchange and environment: a sealed credential copied into another user's
// record, relabelled to another environment, exchange or id, altered in any
// bit, or opened with another master key fails with ErrDecrypt and never
// yields garbage. Out of scope: whoever can read the master key (an agent
// with a shell under the server's OS account, see docs/invariants.md "The honest
// boundary") can open every credential; Go strings cannot be wiped, so a
// revealed secret lives in memory until collected (derived keys and
// plaintext buffers are cleared, best effort).
//
// # Sealed format, version 1
//
// A Sealed is stored as JSON, byte slices in standard base64:
//
//	{"v":1,"salt":"<32 bytes>","nonce":"<12 bytes>","ct":"<ciphertext || 16-byte tag>"}
//
//	sub-key   = HKDF-SHA256(secret = master key (32 bytes), salt = salt,
//	                        info = "guarded-exchange credentials v1", 32 bytes)
//	plaintext = u32 len | API key | u32 len | API secret
//	AD        = 0x01 (version)
//	            | u32 len | CredentialID | u32 len | User
//	            | u32 len | Exchange     | u32 len | Environment
//	ct        = AES-256-GCM(sub-key, nonce, plaintext, AD)
//
// u32 is a 4-byte big-endian length. Length prefixes make the encodings
// unambiguous: ("ab","c") and ("a","bc") give different AD. Salt and nonce
// are fresh random bytes for every Seal, so sealing the same credential
// twice gives different output and a nonce never repeats under a sub-key.
// Both the API key and the secret are sealed: the API key alone cannot sign,
// but it names the account and need not be in the journal. Open accepts
// only version 1, exact salt and nonce lengths and a plaintext of exactly
// two non-empty bounded fields. The master key cannot be rotated in place
// (a new key means sealing every credential again).
//
// # What is journaled
//
// A credential_added record may hold: the credential id (NewCredentialID),
// user, exchange, environment, the API key's Fingerprint, the permission
// names and the Verdict of Check, and the Sealed value. Never: the secret,
// the API key in clear, the master key or a sub-key. The journal is
// append-only, so a deleted credential's Sealed stays in it; revoke the key
// on Bybit when deleting it.
//
// # Permissions
//
// Check takes the readOnly flag and permissions object of GET
// /v5/user/query-api. A key is accepted only if every permission it carries
// is one of ContractTrade.Order, ContractTrade.Position and Spot.SpotTrade;
// any other non-empty entry (Wallet transfers and withdrawals, Options,
// Derivatives.DerivativesTrade, Exchange.ExchangeHistory, Earn, CopyTrading,
// BlockTrade, NFT, Affiliate, Fiat*, and every unknown group or value)
// rejects it and is named in Verdict.Offending. Empty arrays grant nothing.
// A read-only key, or a key without any allowlisted permission, is accepted
// with ReadOnlyCap: the user is capped at read_only. Names from the exchange
// are sanitised (Sanitize) before they are shown or journaled.
//
// # Concurrency
//
// Every function is safe for concurrent use; Secret values are immutable.
package keys
