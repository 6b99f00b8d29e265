package messages

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"time"
)

// redacted is what every printing, encoding and logging path of a Secret
// produces instead of the value.
const redacted = "[redacted]"

// Secret holds an exchange API secret (or any other credential string) so
// that it never prints: in transit from the CLI to the user actor, and in
// the sealing code (venue/keys aliases it). fmt (every verb, including %#v
// and %q), encoding/json, encoding.TextMarshaler users and log/slog all see
// "[redacted]"; Reveal is the only way to the value and belongs in the one
// place that signs requests or seals the secret. Only AddCredentialRequest's
// own wire encoding carries it, for the control socket.
//
// The value sits behind a pointer on purpose: fmt cannot call methods on an
// unexported struct field, so a Secret kept in an unexported field of some
// other struct and printed with %v or %+v is walked by reflection. A plain
// string type would print its value there; this one prints a pointer
// address. encoding/json skips it (no exported fields) unless reached
// through an exported field, where MarshalJSON redacts it. There is
// deliberately no UnmarshalJSON: a redacted value is never read back as a
// real one.
//
// The zero value is the empty secret. A Secret is immutable and safe for
// concurrent use. Compare secrets with Equal, not ==, which compares the
// pointers.
type Secret struct{ p *string }

// NewSecret wraps s. Go strings cannot be wiped, so the value lives until
// collected; the caller should drop its own copy as soon as it can.
func NewSecret(s string) Secret {
	if s == "" {
		return Secret{}
	}
	return Secret{p: &s}
}

// Reveal returns the value.
func (s Secret) Reveal() string {
	if s.p == nil {
		return ""
	}
	return *s.p
}

// IsZero reports whether the secret is empty.
func (s Secret) IsZero() bool { return s.Reveal() == "" }

// Len returns the length of the value in bytes, which is safe to log.
func (s Secret) Len() int { return len(s.Reveal()) }

// Equal reports whether s and o hold the same value.
func (s Secret) Equal(o Secret) bool { return s.Reveal() == o.Reveal() }

// String implements fmt.Stringer.
func (Secret) String() string { return redacted }

// GoString implements fmt.GoStringer.
func (Secret) GoString() string { return redacted }

// Format redacts every verb (%q quotes it).
func (Secret) Format(f fmt.State, verb rune) {
	if verb == 'q' {
		_, _ = io.WriteString(f, `"`+redacted+`"`)
		return
	}
	_, _ = io.WriteString(f, redacted)
}

// LogValue implements slog.LogValuer.
func (Secret) LogValue() slog.Value { return slog.StringValue(redacted) }

// MarshalJSON redacts.
func (Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }

// MarshalText redacts.
func (Secret) MarshalText() ([]byte, error) { return []byte(redacted), nil }

// AddCredentialRequest stores an exchange key for the user and environment
// (keys add, keys replace, and init's paper key). The server asks the
// exchange what the key may do before storing it (docs/invariants.md "Keys").
// Answer: *CredentialView.
type AddCredentialRequest struct {
	User        string
	Environment string // paper, bybit-demo, bybit-testnet, bybit-live
	APIKey      string
	APISecret   Secret
	// Replace must be set to replace an existing key (keys replace).
	Replace bool
	// AdminAttest accepts a key whose permissions cannot be verified now
	// (venue down, rate-limited), on paper and demo only; journaled.
	AdminAttest bool
}

// addCredentialWire is AddCredentialRequest on the control socket: the one
// encoding that carries the secret.
type addCredentialWire struct {
	User        string `json:"user"`
	Environment string `json:"environment"`
	APIKey      string `json:"api_key"`
	APISecret   string `json:"api_secret"`
	Replace     bool   `json:"replace,omitempty"`
	AdminAttest bool   `json:"admin_attest,omitempty"`
}

// MarshalJSON redacts the key and the secret, so that no accidental
// encoding (a log line, a journal payload) can carry them. The control
// socket uses EncodeCommand.
func (r *AddCredentialRequest) MarshalJSON() ([]byte, error) {
	return json.Marshal(addCredentialWire{r.User, r.Environment, "[redacted]", "[redacted]", r.Replace, r.AdminAttest})
}

// wireJSON is the control-socket encoding: the one that carries the key
// and the secret.
func (r *AddCredentialRequest) wireJSON() ([]byte, error) {
	return json.Marshal(addCredentialWire{r.User, r.Environment, r.APIKey, r.APISecret.Reveal(), r.Replace, r.AdminAttest})
}

// LogValue keeps the key and the secret out of structured logs.
func (r *AddCredentialRequest) LogValue() slog.Value {
	return slog.GroupValue(slog.String("user", r.User), slog.String("environment", r.Environment), slog.Bool("replace", r.Replace))
}

// EncodeCommand is the control-socket encoding of a command's body.
func EncodeCommand(cmd Command) ([]byte, error) {
	if w, ok := cmd.(interface{ wireJSON() ([]byte, error) }); ok {
		return w.wireJSON()
	}
	return json.Marshal(cmd)
}

// UnmarshalJSON decodes the control-socket encoding.
func (r *AddCredentialRequest) UnmarshalJSON(b []byte) error {
	var w addCredentialWire
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return err
	}
	*r = AddCredentialRequest{User: w.User, Environment: w.Environment, APIKey: w.APIKey, APISecret: NewSecret(w.APISecret), Replace: w.Replace, AdminAttest: w.AdminAttest}
	return nil
}

// String keeps the key and secret out of any print.
func (r *AddCredentialRequest) String() string {
	return fmt.Sprintf("AddCredentialRequest{User:%s Environment:%s Replace:%v}", r.User, r.Environment, r.Replace)
}

// ShowCredentialRequest asks for the user's key for an environment (never
// the secret). Answer: *CredentialView.
type ShowCredentialRequest struct {
	User        string `json:"user"`
	Environment string `json:"environment"`
}

// DeleteCredentialRequest removes the user's key for an environment.
// Answer: *CredentialView.
type DeleteCredentialRequest struct {
	User        string `json:"user"`
	Environment string `json:"environment"`
}

// RecheckCredentialRequest asks the exchange again what the stored key may
// do (at start, and before a state change when the last check is over an
// hour old). Answer: *CredentialView.
type RecheckCredentialRequest struct {
	User        string `json:"user"`
	Environment string `json:"environment"`
}

// CommandName implements Command.
func (*AddCredentialRequest) CommandName() string     { return "keys.add" }
func (*ShowCredentialRequest) CommandName() string    { return "keys.show" }
func (*DeleteCredentialRequest) CommandName() string  { return "keys.delete" }
func (*RecheckCredentialRequest) CommandName() string { return "keys.recheck" }

// TargetUser implements UserCommand.
func (r *AddCredentialRequest) TargetUser() string     { return r.User }
func (r *ShowCredentialRequest) TargetUser() string    { return r.User }
func (r *DeleteCredentialRequest) TargetUser() string  { return r.User }
func (r *RecheckCredentialRequest) TargetUser() string { return r.User }

// CredentialView is what the outside may know of a stored key: never the
// secret, never the key in clear.
type CredentialView struct {
	User         string    `json:"user"`
	Environment  string    `json:"environment"`
	Present      bool      `json:"present"`
	CredentialID string    `json:"credential_id,omitempty"`
	Fingerprint  string    `json:"fingerprint,omitempty"`
	Permissions  []string  `json:"permissions,omitempty"`
	ReadOnlyCap  bool      `json:"read_only_cap,omitempty"`
	Attested     bool      `json:"attested,omitempty"`
	CheckedAt    time.Time `json:"checked_at,omitzero"`
	// PermissionsChanged is set when a re-check found permissions outside
	// the allowlist: trading is blocked until the key is replaced.
	PermissionsChanged bool     `json:"permissions_changed,omitempty"`
	Offending          []string `json:"offending,omitempty"`
	Changed            bool     `json:"changed"`
}

// CredentialAddedEvent is journaled as credential_added. It holds the
// sealed key (AES-256-GCM, see venue/keys), never the secret in clear.
type CredentialAddedEvent struct {
	CredentialID string          `json:"credential_id"`
	Exchange     string          `json:"exchange"`
	Environment  string          `json:"environment"`
	Fingerprint  string          `json:"fingerprint"`
	Permissions  []string        `json:"permissions"`
	ReadOnlyCap  bool            `json:"read_only_cap"`
	Attested     bool            `json:"attested,omitempty"`
	Replaced     string          `json:"replaced,omitempty"`
	Sealed       json.RawMessage `json:"sealed"`
	CheckedAt    time.Time       `json:"checked_at"`
}

// CredentialDeletedEvent is journaled as credential_deleted.
type CredentialDeletedEvent struct {
	CredentialID string `json:"credential_id"`
	Environment  string `json:"environment"`
}

// CredentialCheckedEvent is journaled as credential_checked after a
// re-check, and as credential_rejected when keys add refuses a key.
type CredentialCheckedEvent struct {
	CredentialID string    `json:"credential_id,omitempty"`
	Environment  string    `json:"environment"`
	Fingerprint  string    `json:"fingerprint"`
	Permissions  []string  `json:"permissions"`
	Offending    []string  `json:"offending,omitempty"`
	ReadOnlyCap  bool      `json:"read_only_cap"`
	Accepted     bool      `json:"accepted"`
	CheckedAt    time.Time `json:"checked_at"`
}

// Account reads (docs/tools.md). Each goes to the user actor, which checks that
// a key exists and hands it to the user's venue actor.

// GetBalancesRequest asks for the unified wallet. Answer: *WalletBalance.
type GetBalancesRequest struct {
	User string
}

// GetPositionsRequest asks for linear positions. Answer: *Page[Position].
type GetPositionsRequest struct {
	User   string
	Symbol string
	Limit  int
	Cursor string
}

// GetOpenOrdersRequest asks for open orders. Answer: *Page[Order].
type GetOpenOrdersRequest struct {
	User     string
	Category Category
	Symbol   string
	Limit    int
	Cursor   string
}

// GetOrderHistoryRequest asks for closed orders in a window of at most 7
// days. Answer: *Page[Order].
type GetOrderHistoryRequest struct {
	User       string
	Category   Category
	Symbol     string
	Start, End time.Time
	Limit      int
	Cursor     string
}

// GetTradesRequest asks for executions in a window of at most 7 days.
// Answer: *Page[Execution].
type GetTradesRequest struct {
	User       string
	Category   Category
	Symbol     string
	Start, End time.Time
	Limit      int
	Cursor     string
}

// AccountRequest is one of the account read requests above.
type AccountRequest interface{ accountUser() string }

func (r *GetBalancesRequest) accountUser() string     { return r.User }
func (r *GetPositionsRequest) accountUser() string    { return r.User }
func (r *GetOpenOrdersRequest) accountUser() string   { return r.User }
func (r *GetOrderHistoryRequest) accountUser() string { return r.User }
func (r *GetTradesRequest) accountUser() string       { return r.User }

// AccountUser returns the user an account request is for.
func AccountUser(r AccountRequest) string { return r.accountUser() }
