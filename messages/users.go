package messages

import "github.com/shopspring/decimal"

// Command is a typed message that asks a user actor (or the users
// supervisor) to decide something. Every command has a stable wire name,
// used on the control socket.
type Command interface {
	// CommandName is the wire name, e.g. "policy.tighten".
	CommandName() string
}

// ShowPolicyRequest asks for a user's policy. Answer: *PolicyView.
type ShowPolicyRequest struct {
	User string `json:"user"`
}

// TightenPolicyRequest sets some of the user's own settings; every value
// must be at least as strict as the current effective value. Answer:
// *PolicyView.
type TightenPolicyRequest struct {
	User     string         `json:"user"`
	Settings PolicySettings `json:"settings"`
}

// SetCeilingRequest sets fields of a user's admin ceiling (which may loosen
// or tighten). Answer: *PolicyView.
type SetCeilingRequest struct {
	User     string         `json:"user"`
	Settings PolicySettings `json:"settings"`
}

// ResetOverridesRequest removes the named fields (all when empty) from the
// user's own settings. Answer: *PolicyView.
type ResetOverridesRequest struct {
	User   string   `json:"user"`
	Fields []string `json:"fields,omitempty"`
}

// SetKillSwitchRequest turns a user's kill switch on or off at a level:
// "user" (the user, or the agent for on) or "admin". Answer: *PolicyView.
type SetKillSwitchRequest struct {
	User  string     `json:"user"`
	On    bool       `json:"on"`
	Level KillSwitch `json:"level"`
}

// CreateUserRequest creates a user with the default policy. Answer: *PolicyView.
type CreateUserRequest struct {
	User string `json:"user"`
}

// ListUsersRequest lists the users. Answer: *UserList.
type ListUsersRequest struct{}

// DisableUserRequest disables a user: every later command and tool call for
// it is refused. Answer: *PolicyView.
type DisableUserRequest struct {
	User string `json:"user"`
}

// CommandName implements Command.
func (*ShowPolicyRequest) CommandName() string     { return "policy.show" }
func (*TightenPolicyRequest) CommandName() string  { return "policy.tighten" }
func (*SetCeilingRequest) CommandName() string     { return "admin.policy.set_ceiling" }
func (*ResetOverridesRequest) CommandName() string { return "admin.policy.reset_overrides" }
func (*SetKillSwitchRequest) CommandName() string  { return "kill_switch.set" }
func (*CreateUserRequest) CommandName() string     { return "admin.user.create" }
func (*ListUsersRequest) CommandName() string      { return "admin.user.list" }
func (*DisableUserRequest) CommandName() string    { return "admin.user.disable" }

// UserCommand is a command about one user: it goes to that user's actor.
type UserCommand interface {
	Command
	// TargetUser is the user whose actor decides the command.
	TargetUser() string
}

// TargetUser implements UserCommand. The users supervisor decides
// admin.user.create (CommandInfo.Users), but the command is about one
// user: a cluster routes it to that user's shard (docs/cluster.md).
func (c *CreateUserRequest) TargetUser() string { return c.User }

// TargetUser implements UserCommand.
func (c *ShowPolicyRequest) TargetUser() string     { return c.User }
func (c *TightenPolicyRequest) TargetUser() string  { return c.User }
func (c *SetCeilingRequest) TargetUser() string     { return c.User }
func (c *ResetOverridesRequest) TargetUser() string { return c.User }
func (c *SetKillSwitchRequest) TargetUser() string  { return c.User }
func (c *DisableUserRequest) TargetUser() string    { return c.User }

// PolicyView is a user's policy as the user actor sees it: a copy.
type PolicyView struct {
	User       string         `json:"user"`
	Disabled   bool           `json:"disabled,omitempty"`
	Effective  Policy         `json:"effective"`
	Ceiling    PolicySettings `json:"ceiling"`
	Own        PolicySettings `json:"own"`
	KillSwitch KillSwitch     `json:"kill_switch"`
	// Changed is true when the command changed state (and was journaled).
	Changed bool `json:"changed"`
	// Removed lists the fields a reset removed.
	Removed []string `json:"removed,omitempty"`
}

// UserList answers ListUsersRequest.
type UserList struct {
	Users []UserSummary `json:"users"`
}

// UserSummary is one line of UserList.
type UserSummary struct {
	User       string     `json:"user"`
	Disabled   bool       `json:"disabled,omitempty"`
	Profile    Profile    `json:"profile"`
	KillSwitch KillSwitch `json:"kill_switch"`
}

// Journal payloads of the user records. Each names the state before and
// after, so a reader needs no other record to see what changed; replay
// applies After.

// UserCreatedEvent is journaled as user_created when a user is created.
type UserCreatedEvent struct {
	User    string         `json:"user"`
	Ceiling PolicySettings `json:"ceiling"`
}

// PolicyChangedEvent is journaled as policy_ceiling_set (Before/After are the
// ceiling), policy_tightened or policy_overrides_reset (Before/After are the
// user's own settings).
type PolicyChangedEvent struct {
	Fields []string       `json:"fields"`
	Before PolicySettings `json:"before"`
	After  PolicySettings `json:"after"`
}

// KillSwitchEvent is journaled as kill_switch_on or kill_switch_off.
type KillSwitchEvent struct {
	Before KillSwitch `json:"before"`
	After  KillSwitch `json:"after"`
}

// UserDisabledEvent is journaled as user_disabled.
type UserDisabledEvent struct {
	User string `json:"user"`
}

// DecideActionRequest asks a user actor whether an action may proceed under
// the user's kill switch and policy (docs/tools.md "The action path" steps 2 and 3). It is the gate
// every state-changing tool passes. Answer: *Decision.
type DecideActionRequest struct {
	User     string   `json:"user"`
	Tool     string   `json:"tool"`
	Category Category `json:"category,omitempty"`
	Symbol   string   `json:"symbol,omitempty"`
	// NotionalUSDT is the order's value; zero when the action has none.
	NotionalUSDT decimal.Decimal `json:"notional_usdt,omitempty"`
	// Leverage is the requested leverage; zero when not applicable.
	Leverage decimal.Decimal `json:"leverage,omitempty"`
	// RiskIncreasing is false for cancels, closes, reduce-only orders,
	// SL/TP and lowering leverage: the kill switch lets those through.
	RiskIncreasing bool `json:"risk_increasing"`
	// RiskReducing says the caller has established that the action can
	// only reduce risk (cancel, close, reduce-only order, stop-loss
	// toward the price, lower leverage), or that it is a first gate
	// that decides again once it knows: the allowlist is not applied, so
	// narrowing it never traps a position or its orders. Profile, venue
	// and key still apply. False (the default) applies the allowlist.
	RiskReducing bool `json:"-"`
	// JournalRefusal makes the actor journal a refusal (order_refused)
	// before answering.
	JournalRefusal bool `json:"-"`
}

// Decision answers DecideActionRequest: Err is nil when the action may
// proceed, else the refusal with its code.
type Decision struct {
	Allowed bool   `json:"allowed"`
	Err     *Error `json:"error,omitempty"`
}

// CommandName implements Command.
func (*DecideActionRequest) CommandName() string { return "action.decide" }
