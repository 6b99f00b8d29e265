package messages

// Code is a stable error code of docs/errors.md. Codes are part of the product
// contract: they are never renamed or reused.
type Code string

// The error codes of docs/errors.md, spelled exactly as agents and scripts see them.
const (
	CodeInvalidParams                  Code = "invalid_params"
	CodePermissionDenied               Code = "permission_denied"
	CodeKillSwitchActive               Code = "kill_switch_active"
	CodeLimitExceeded                  Code = "limit_exceeded"
	CodeInstrumentRuleViolation        Code = "instrument_rule_violation"
	CodeConfirmationRequired           Code = "confirmation_required"
	CodeConfirmationChannelUnavailable Code = "confirmation_channel_unavailable"
	CodePendingLimitReached            Code = "pending_limit_reached"
	CodeIdempotencyConflict            Code = "idempotency_conflict"
	CodeOutcomeUnknown                 Code = "outcome_unknown"
	CodeRateLimited                    Code = "rate_limited"
	CodeExchangeRejected               Code = "exchange_rejected"
	CodeExchangeUnavailable            Code = "exchange_unavailable"
	CodeExchangeCredentialsInvalid     Code = "exchange_credentials_invalid"
	CodeCredentialsPermissionsChanged  Code = "credentials_permissions_changed"
	CodeUnsupportedPositionMode        Code = "unsupported_position_mode"
	CodeNotFound                       Code = "not_found"
	CodeVenueNotArmed                  Code = "venue_not_armed"
	CodeInternalError                  Code = "internal_error"
)

// CodeInfo documents one code: what it means and whether retrying the same
// call later can succeed.
type CodeInfo struct {
	Code        Code
	Description string
	// Retryable is true when the same call may succeed later without any
	// change by the agent or the human (rate limits, venue outages).
	Retryable bool
}

// Codes lists every code with its description, in the order of docs/errors.md.
// A test fails on a duplicate or an undocumented code.
var Codes = []CodeInfo{
	{CodeInvalidParams, "an argument is missing, malformed or out of range; details name the field and the reason", false},
	{CodePermissionDenied, "the principal's profile, the allowlist or the venue arming does not allow this", false},
	{CodeKillSwitchActive, "the kill switch is on; risk-increasing actions are refused", false},
	{CodeLimitExceeded, "a policy limit (notional, leverage, daily cap, rate) would be exceeded; details name the limit and the allowed value", false},
	{CodeInstrumentRuleViolation, "the order breaks the instrument's tick, step, minimum or price-band rules", false},
	{CodeConfirmationRequired, "the action is parked until a human approves it", false},
	{CodeConfirmationChannelUnavailable, "the action needs confirmation but no confirmation channel is available", false},
	{CodePendingLimitReached, "too many confirmations are already pending", false},
	{CodeIdempotencyConflict, "the idempotency key was used before with other arguments", false},
	{CodeOutcomeUnknown, "the venue may or may not have applied the action; it is being reconciled, never resent", false},
	{CodeRateLimited, "the venue or the server rate limit was hit; retry after retry_after_s", true},
	{CodeExchangeRejected, "the exchange refused the request", false},
	{CodeExchangeUnavailable, "the exchange could not be reached or failed", true},
	{CodeExchangeCredentialsInvalid, "no usable exchange key for this user and venue", false},
	{CodeCredentialsPermissionsChanged, "the exchange key's permissions changed and trading is blocked", false},
	{CodeUnsupportedPositionMode, "the account uses a position mode this server does not support", false},
	{CodeNotFound, "the thing asked for does not exist", false},
	{CodeVenueNotArmed, "the venue is above the user's arming ceiling", false},
	{CodeInternalError, "the server failed; the request_id identifies it in the server log", false},
}

// KnownCode reports whether c is one of the codes of docs/errors.md.
func KnownCode(c Code) bool {
	for _, info := range Codes {
		if info.Code == c {
			return true
		}
	}
	return false
}
