package messages

import "fmt"

// Role is who a command comes from, as the server established it (never
// as the command claims).
type Role string

// Roles.
const (
	// RoleAgent is the model, over MCP. Untrusted, always.
	RoleAgent Role = "agent"
	// RoleUser is the human user at the CLI (the server's own uid).
	RoleUser Role = "user"
	// RoleAdmin is the human at the CLI running an admin command (the
	// server's own uid).
	RoleAdmin Role = "admin"
	// RoleApprover is another uid listed in GX_APPROVER_UIDS: it may read
	// and turn a kill switch on (and, later, decide confirmations).
	RoleApprover Role = "approver"
	// RoleSystem is the server itself (start-up, re-checks, recovery).
	RoleSystem Role = "system"
	// RoleDeadman is the server's dead-man switch (cancels when the agent
	// is gone); it never comes from a channel.
	RoleDeadman Role = "deadman"
)

// Channel is how a command reached the server.
type Channel string

// Channels.
const (
	ChannelStdio     Channel = "stdio"
	ChannelSocket    Channel = "socket"
	ChannelHTTP      Channel = "http"
	ChannelInProcess Channel = "in-process"
	ChannelInternal  Channel = "internal"
)

// Origin is the structured origin of one command: who (role), how
// (channel), and what the channel proved about the peer. The server sets it
// from the channel; it is journaled with every change the command causes.
type Origin struct {
	Role    Role
	Channel Channel
	// PeerUID and PeerPID are the socket peer's credentials (SO_PEERCRED)
	// or this process's for an in-process command; -1 when unknown.
	PeerUID int64
	PeerPID int64
	// TokenID names the bearer token of an HTTP session (never the token).
	TokenID string
	// FormElicitation is true when the MCP client declared form
	// elicitation (set by the MCP layer from the session, never from tool
	// arguments): a confirmation may then be asked through the client.
	FormElicitation bool
	// ConfirmationID is set only for the server's execution of an
	// approved confirmation: its records are journaled under
	// system:executor.
	ConfirmationID string
	// FormAnswer is set by the user actor, never from a channel, on the
	// origin of a confirmation decision it accepted from the client's
	// form (channel client_ui): the decision is journaled as the human
	// behind that session's form (ActorClientUI), on channel
	// "client_ui" and the session's own channel.
	FormAnswer bool
}

// Actor is the docs/journal-format.md journal actor of the origin.
func (o Origin) Actor() string {
	if o.ConfirmationID != "" {
		return ActorExecutor
	}
	if o.FormAnswer {
		return ActorClientUI
	}
	switch o.Role {
	case RoleAgent:
		return ActorAgent
	case RoleAdmin:
		return ActorCLIAdmin
	case RoleUser, RoleApprover:
		return ActorCLIUser
	case RoleDeadman:
		return ActorDeadman
	}
	return ActorSystem
}

// ChannelText is what the journal's channel field records: empty for the
// agent on stdio and the server's own work, else the channel and the peer,
// e.g. "socket uid=1000 pid=4242"; a form answer's is "client_ui" and the
// session's channel, e.g. "client_ui http token=tok_…".
func (o Origin) ChannelText() string {
	if o.ConfirmationID != "" {
		return "confirmation " + o.ConfirmationID
	}
	if o.FormAnswer {
		// The form's channel, then the session it was shown in.
		session := o
		session.FormAnswer = false
		if s := session.ChannelText(); s != "" {
			return ConfirmChannelClientUI + " " + s
		}
		return ConfirmChannelClientUI + " " + string(o.Channel)
	}
	switch o.Channel {
	case ChannelSocket, ChannelInProcess:
		s := fmt.Sprintf("%s uid=%d pid=%d", o.Channel, o.PeerUID, o.PeerPID)
		if o.Role == RoleApprover {
			s += " approver"
		}
		return s
	case ChannelHTTP:
		return "http token=" + o.TokenID
	}
	return ""
}

// OriginOfActor is the origin of a command given only its journal actor
// name (tests and in-process callers that have no channel).
func OriginOfActor(actor string) Origin {
	o := Origin{Channel: ChannelInternal, PeerUID: -1, PeerPID: -1}
	switch actor {
	case ActorAgent:
		o.Role, o.Channel = RoleAgent, ChannelStdio
	case ActorCLIAdmin:
		o.Role = RoleAdmin
	case ActorCLIUser:
		o.Role = RoleUser
	default:
		o.Role = RoleSystem
	}
	return o
}

// CLIOrigin is the origin of a command from the CLI at the server's own
// uid (over the socket or in-process): admin for admin commands (and the
// admin's kill switch), user otherwise. An approver uid is always the
// approver, whatever it sends.
func CLIOrigin(cmd Command, ch Channel, uid, pid int64, approver bool) Origin {
	o := Origin{Role: RoleUser, Channel: ch, PeerUID: uid, PeerPID: pid}
	switch {
	case approver:
		o.Role = RoleApprover
	case adminCommand(cmd):
		o.Role = RoleAdmin
	}
	return o
}
