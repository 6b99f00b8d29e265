package messages

import (
	"encoding/json"
	"slices"
	"strings"
)

// CommandInfo is one entry of the command table: everything the server
// needs to know about a command, in one place. Adding a command means
// adding its type and one entry here; TestCommandTableIsComplete checks
// every entry.
type CommandInfo struct {
	// Name is the wire name (the control socket's "type").
	Name string
	// New returns an empty command, for decoding.
	New func() Command
	// Result returns an empty answer, for decoding a control response.
	Result func() any
	// Roles may send the command. Permit refines it where the command's
	// content matters (turning a kill switch off, attesting a key).
	Roles []Role
	// Records are the journal record types the command may cause.
	Records []RecordType
	// Users is true for the commands the users supervisor handles
	// (creating and listing users); the others go to the user's actor.
	Users bool
}

var (
	everyone = []Role{RoleAgent, RoleUser, RoleAdmin, RoleApprover, RoleSystem}
	readers  = []Role{RoleUser, RoleAdmin, RoleApprover, RoleSystem}
	humans   = []Role{RoleUser, RoleAdmin}
	admins   = []Role{RoleAdmin}
)

func policyView() any         { return &PolicyView{} }
func credentialView() any     { return &CredentialView{} }
func tokenList() any          { return &TokenList{} }
func confirmationStatus() any { return &ConfirmationStatus{} }

// Commands is the command table: the commands sent through
// actors.System.Submit (MCP tools, the CLI, the control socket). The action
// gate (DecideActionRequest, which may journal order_refused) is the action
// path's first step, not a command any channel may send.
var Commands = []CommandInfo{
	{Name: "policy.show", New: func() Command { return &ShowPolicyRequest{} }, Result: policyView, Roles: everyone},
	{Name: "policy.tighten", New: func() Command { return &TightenPolicyRequest{} }, Result: policyView, Roles: humans,
		Records: []RecordType{RecordPolicyTightened}},
	{Name: "admin.policy.set_ceiling", New: func() Command { return &SetCeilingRequest{} }, Result: policyView, Roles: admins,
		Records: []RecordType{RecordPolicyCeilingSet}},
	{Name: "admin.policy.reset_overrides", New: func() Command { return &ResetOverridesRequest{} }, Result: policyView, Roles: admins,
		Records: []RecordType{RecordPolicyOverridesReset}},
	{Name: "kill_switch.set", New: func() Command { return &SetKillSwitchRequest{} }, Result: policyView, Roles: everyone,
		Records: []RecordType{RecordKillSwitchOn, RecordKillSwitchOff}},
	{Name: "admin.user.create", New: func() Command { return &CreateUserRequest{} }, Result: policyView, Roles: admins,
		Records: []RecordType{RecordUserCreated}, Users: true},
	{Name: "admin.user.list", New: func() Command { return &ListUsersRequest{} }, Result: func() any { return &UserList{} },
		Roles: []Role{RoleAdmin, RoleApprover, RoleSystem}, Users: true},
	{Name: "admin.user.disable", New: func() Command { return &DisableUserRequest{} }, Result: policyView, Roles: admins,
		Records: []RecordType{RecordUserDisabled}},
	{Name: "admin.token.issue", New: func() Command { return &IssueTokenRequest{} }, Result: func() any { return &TokenIssued{} }, Roles: admins,
		Records: []RecordType{RecordTokenIssued}},
	{Name: "admin.token.revoke", New: func() Command { return &RevokeTokenRequest{} }, Result: tokenList, Roles: admins,
		Records: []RecordType{RecordTokenRevoked}},
	{Name: "admin.token.list", New: func() Command { return &ListTokensRequest{} }, Result: tokenList, Roles: admins},
	{Name: "keys.add", New: func() Command { return &AddCredentialRequest{} }, Result: credentialView, Roles: humans,
		Records: []RecordType{RecordCredentialAdded, RecordCredentialRejected, RecordConfirmationDecided}},
	// An approver uid does not read keys: the CLI refuses keys.* for a
	// foreign uid, and the server agrees.
	{Name: "keys.show", New: func() Command { return &ShowCredentialRequest{} }, Result: credentialView, Roles: []Role{RoleUser, RoleAdmin, RoleSystem}},
	{Name: "keys.delete", New: func() Command { return &DeleteCredentialRequest{} }, Result: credentialView, Roles: humans,
		Records: []RecordType{RecordCredentialDeleted, RecordConfirmationDecided}},
	{Name: "keys.recheck", New: func() Command { return &RecheckCredentialRequest{} }, Result: credentialView,
		Roles: []Role{RoleUser, RoleAdmin, RoleSystem}, Records: []RecordType{RecordCredentialChecked}},
	// Posture: anyone reads it; anyone may enter a human REDUCING, only a
	// human leaves it (Permit).
	{Name: "posture.show", New: func() Command { return &ShowPostureRequest{} }, Result: func() any { return &PostureView{} }, Roles: everyone},
	{Name: "posture.set", New: func() Command { return &SetPostureRequest{} }, Result: func() any { return &PostureView{} },
		Roles: []Role{RoleAgent, RoleUser, RoleAdmin, RoleApprover}, Records: []RecordType{RecordPostureChanged}},
	// The trading tools: only the agent trades, through the action path.
	{Name: "trade.place_order", New: func() Command { return &PlaceOrderCommand{} }, Result: func() any { return &OrderAnswer{} },
		Roles: []Role{RoleAgent}, Records: tradeRecords},
	{Name: "trade.cancel_order", New: func() Command { return &CancelOrderCommand{} }, Result: func() any { return &CancelAnswer{} },
		Roles: []Role{RoleAgent}, Records: tradeRecords},
	{Name: "trade.close_position", New: func() Command { return &ClosePositionCommand{} }, Result: func() any { return &OrderAnswer{} },
		Roles: []Role{RoleAgent}, Records: tradeRecords},
	{Name: "trade.set_trading_stop", New: func() Command { return &TradingStopCommand{} }, Result: func() any { return &TradingStopAnswer{} },
		Roles: []Role{RoleAgent}, Records: tradeRecords},
	{Name: "trade.amend_order", New: func() Command { return &AmendOrderCommand{} }, Result: func() any { return &AmendAnswer{} },
		Roles: []Role{RoleAgent}, Records: tradeRecords},
	{Name: "trade.cancel_all_orders", New: func() Command { return &CancelAllCommand{} }, Result: func() any { return &CancelAllAnswer{} },
		Roles: []Role{RoleAgent}, Records: tradeRecords},
	{Name: "trade.set_leverage", New: func() Command { return &SetLeverageCommand{} }, Result: func() any { return &LeverageAnswer{} },
		Roles: []Role{RoleAgent}, Records: tradeRecords},
	// Confirmations (docs/tools.md "Confirmation"): the agent watches and withdraws; a human
	// decides (the MCP layer sends a client_ui decision for the human who
	// answered the client's form: see Permit).
	{Name: "confirm.status", New: func() Command { return &ConfirmationStatusCommand{} }, Result: confirmationStatus, Roles: everyone},
	{Name: "confirm.cancel", New: func() Command { return &CancelConfirmationCommand{} }, Result: confirmationStatus,
		Roles: []Role{RoleAgent, RoleUser, RoleAdmin}, Records: []RecordType{RecordConfirmationDecided}},
	{Name: "confirm.list", New: func() Command { return &ListConfirmationsCommand{} }, Result: func() any { return &ConfirmationList{} }, Roles: readers},
	{Name: "confirm.decide", New: func() Command { return &DecideConfirmationCommand{} }, Result: func() any { return new(json.RawMessage) },
		Roles: []Role{RoleAgent, RoleUser, RoleAdmin, RoleApprover}, Records: append([]RecordType{RecordConfirmationDecided, RecordConfirmationExecuted}, tradeRecords...)},
	// The paper account: the composition root serves these (it holds the
	// embedded simulator); a human resets, never the agent.
	{Name: "paper.status", New: func() Command { return &PaperStatusRequest{} }, Result: func() any { return &PaperAccountView{} },
		Roles: []Role{RoleUser, RoleAdmin, RoleSystem}},
	{Name: "paper.reset", New: func() Command { return &PaperResetRequest{} }, Result: func() any { return &PaperAccountView{} }, Roles: humans},
}

// CommandByName returns the table entry of a wire name.
func CommandByName(name string) (CommandInfo, bool) {
	i := slices.IndexFunc(Commands, func(c CommandInfo) bool { return c.Name == name })
	if i < 0 {
		return CommandInfo{}, false
	}
	return Commands[i], true
}

// NewCommand returns an empty command for a wire name, for decoding.
func NewCommand(name string) (Command, bool) {
	c, ok := CommandByName(name)
	if !ok {
		return nil, false
	}
	return c.New(), true
}

// NewResult returns an empty answer value for a command's wire name, for
// decoding a ControlResponse.Result.
func NewResult(commandName string) any {
	if c, ok := CommandByName(commandName); ok {
		return c.Result()
	}
	return &PolicyView{}
}

// adminCommand reports whether cmd is an admin command at the CLI: the
// admin-only commands, an attested key, and the admin's kill switch.
func adminCommand(cmd Command) bool {
	switch c := cmd.(type) {
	case *AddCredentialRequest:
		return c.AdminAttest
	case *SetKillSwitchRequest:
		return c.Level == KillSwitchAdmin
	}
	return strings.HasPrefix(cmd.CommandName(), "admin.")
}

// OriginOf is the journal actor of a command that arrived from the CLI:
// cli:admin for admin commands (and the admin's kill switch), cli:user
// otherwise.
func OriginOf(cmd Command) string {
	if adminCommand(cmd) {
		return ActorCLIAdmin
	}
	return ActorCLIUser
}

// Permit is who may do what, in one place: whether origin o may send cmd.
// It reads the command table's roles, then the rules where the command's
// content matters. The user actor checks again, per journal record, that
// the record's actor may cause it (and replay checks every record), so a
// change can never be journaled under a name that may not cause it.
func Permit(o Origin, cmd Command) *Error {
	info, ok := CommandByName(cmd.CommandName())
	if !ok {
		return InvalidParams("type", "unknown message type")
	}
	deny := func(msg, next string) *Error {
		return &Error{Code: CodePermissionDenied, Message: msg, NextStep: next}
	}
	if !slices.Contains(info.Roles, o.Role) {
		if o.Role == RoleApprover {
			return deny("an approver uid may only read and turn a kill switch on", "run this command as the server's user")
		}
		return deny(string(o.Role)+" may not run "+info.Name, "this change is made by a human outside the chat")
	}
	switch c := cmd.(type) {
	case *SetKillSwitchRequest:
		if c.Level == KillSwitchAdmin && o.Role != RoleAdmin {
			return deny("only the admin sets or clears the admin's kill switch", "use the user-level kill switch, or ask the admin")
		}
		if c.On {
			return nil
		}
		switch {
		case o.Role == RoleApprover:
			return deny("an approver uid may only read and turn a kill switch on", "run this command as the server's user")
		case o.Role == RoleAgent || o.Role == RoleSystem:
			return deny("only a human can turn the kill switch off", "a human can turn it off outside the chat")
		}
	case *SetPostureRequest:
		if !c.Reduce && o.Role != RoleUser && o.Role != RoleAdmin {
			return deny("only a human can leave REDUCING", "a human can run `guarded-exchange posture resume` outside the chat")
		}
	case *DecideConfirmationCommand:
		// A human decides: on the CLI channel from the control socket
		// (the server's uid or an approver uid); on the client_ui channel
		// only as relayed by the MCP layer for the agent's own session,
		// after the human answered the form. The user actor checks again
		// that the confirmation was parked for that channel.
		switch c.Channel {
		case ConfirmChannelCLI:
			if o.Role == RoleAgent || o.Channel != ChannelSocket && o.Channel != ChannelInProcess {
				return deny("a cli decision comes only from the control socket", "a human runs `guarded-exchange confirm approve|reject ID`")
			}
		case ConfirmChannelClientUI:
			if o.Role != RoleAgent {
				return deny("a client_ui decision comes only from the client's form", "decide with `guarded-exchange confirm approve|reject ID`")
			}
		}
	case *AddCredentialRequest:
		if c.AdminAttest && o.Role != RoleAdmin {
			return deny("only the admin may attest a key", "run the command as the admin")
		}
	}
	return nil
}
