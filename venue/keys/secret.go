package keys

import "github.com/guarded-exchange/guarded-exchange/messages"

// Secret is the one secret type of the server, messages.Secret: an exchange
// API secret (or any other credential string) that never prints. It lives
// in messages because commands carry it from the CLI to the user actor;
// this alias keeps the sealing code's name for it.
type Secret = messages.Secret

// NewSecret wraps s (messages.NewSecret).
func NewSecret(s string) Secret { return messages.NewSecret(s) }
