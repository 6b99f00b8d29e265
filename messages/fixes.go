package messages

// The refusals a new user meets on the way to a first trade say what
// stands in the way and name the command or setting that removes it, in
// the next step and in details.fix (README, "First trade"). Their codes
// and the other details do not change (docs/errors.md).

// GrantTradingFix is the command a human runs to let user trade: the
// admin ceiling's profile and an instrument on the allowlist.
func GrantTradingFix(user string) string {
	return "guarded-exchange admin policy set-ceiling --user " + user + " --profile trade --allow linear:BTCUSDT"
}

// ReadOnlyProfileRefusal is the permission_denied of a trading tool for a
// principal whose effective profile is not trade (every new user starts
// read_only): it names the command that grants trading.
func ReadOnlyProfileRefusal(user, profile string) *Error {
	fix := GrantTradingFix(user)
	return &Error{
		Code:     CodePermissionDenied,
		Message:  "trading tools need the trade profile, and this user's profile is " + profile + " (every new user starts read_only)",
		NextStep: "a human grants trading outside the chat with `" + fix + "` (--allow names the instruments); until then use the tools tools/list shows",
		Details:  map[string]any{"limit": "profile", "allowed": profile, "fix": fix},
	}
}

// ConfirmCLIFix is the setting that opens the CLI confirmation channel:
// the server's environment, then `guarded-exchange confirm approve`.
const ConfirmCLIFix = "GX_CONFIRM_CLI_ENABLED=true guarded-exchange serve"

// TrustClientUIFix is the command that lets the client's own form
// confirm user's actions (paper and demo only).
func TrustClientUIFix(user string) string {
	return "guarded-exchange admin policy set-ceiling --user " + user + " --trust-client-ui true"
}
