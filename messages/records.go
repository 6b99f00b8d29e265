package messages

// RecordType is the number of a journal record type (docs/journal-format.md). The numbers
// are part of the on-disk format: they are explicit, never iota, never
// reused and never renumbered (docs/invariants.md "Rules of the code"). A test fails on a duplicate
// number or name.
type RecordType uint16

// Journal record types. Each comment says when the record is journaled.
const (
	// A tool_call record is journaled for every MCP tools/call that reaches
	// the server, before it is handled: principal, tool, argument digest.
	RecordToolCall RecordType = 1
	// An order_refused record is journaled when the action path refuses an order.
	RecordOrderRefused RecordType = 2
	// An order_attempt record is journaled, durably, before an order leaves for the venue.
	RecordOrderAttempt RecordType = 3
	// An order_outcome record is journaled when the venue's answer (or the reconciled outcome) is known.
	RecordOrderOutcome RecordType = 4
	// An order_repeat record is journaled when a repeated call is answered from the idempotency table.
	RecordOrderRepeat RecordType = 5
	// A confirmation_requested record is journaled when an action is parked for a human.
	RecordConfirmationRequested RecordType = 6
	// A confirmation_decided record is journaled when a human approves or rejects, naming the channel.
	RecordConfirmationDecided RecordType = 7
	// A confirmation_executed record is journaled when an approved action starts executing, and again with its end.
	RecordConfirmationExecuted RecordType = 8
	// A kill_switch_on record is journaled when the kill switch is turned on.
	RecordKillSwitchOn RecordType = 9
	// A kill_switch_off record is journaled when a human turns the kill switch off.
	RecordKillSwitchOff RecordType = 10
	// A policy_ceiling_set record is journaled when the admin changes a user's ceiling.
	RecordPolicyCeilingSet RecordType = 11
	// A policy_tightened record is journaled when a user tightens their own settings.
	RecordPolicyTightened RecordType = 12
	// A policy_overrides_reset record is journaled when the admin removes a user's own settings.
	RecordPolicyOverridesReset RecordType = 13
	// A credential_added record is journaled when an exchange key is stored (never the secret in clear).
	RecordCredentialAdded RecordType = 14
	// A credential_deleted record is journaled when an exchange key is removed.
	RecordCredentialDeleted RecordType = 15
	// A token_issued record is journaled when an HTTP bearer token is issued (its SHA-256 only).
	RecordTokenIssued RecordType = 16
	// A token_revoked record is journaled when an HTTP bearer token is revoked.
	RecordTokenRevoked RecordType = 17
	// A user_created record is journaled when a user is created.
	RecordUserCreated RecordType = 18
	// A recovered_torn_tail record is journaled at start when a torn last
	// record was cut off; it says what was dropped.
	RecordRecoveredTornTail RecordType = 19
	// A server_started record is journaled when a process opens the journal
	// for writing: its pid, version and venue.
	RecordServerStarted RecordType = 20
	// A control_refused record is journaled when the control socket refuses a
	// peer or a message.
	RecordControlRefused RecordType = 21
	// A user_disabled record is journaled when the admin disables a user.
	RecordUserDisabled RecordType = 22
	// A credential_rejected record is journaled when keys add refuses a key
	// for its permissions: the fingerprint and the permission names, never
	// the secret.
	RecordCredentialRejected RecordType = 23
	// A credential_checked record is journaled when a stored key's
	// permissions are checked again (at start, or before a state change when
	// the last check is over an hour old).
	RecordCredentialChecked RecordType = 24
	// A venue_update record is journaled when the private stream pushes
	// updates of the user's orders: compact rows, exchange text untrusted.
	RecordVenueUpdate RecordType = 25
	// A posture_changed record is journaled when a user's posture changes:
	// a state transition (ACTIVE, REDUCING, HALTED) or a REDUCING cause
	// that starts or ends (posture.go).
	RecordPostureChanged RecordType = 26
	// A deadman_triggered record is journaled when the dead-man switch
	// fires for a user (the last session ended, or no session spoke for
	// heartbeat_s): why, and how many of the server's open orders it is
	// about to cancel. The cancels follow as order records by
	// system:deadman.
	RecordDeadmanTriggered RecordType = 40
	// A calls_rate_limited record is journaled, at most once per interval
	// per session, when tool calls were refused for the session's call
	// rate: how many since the last such record.
	RecordCallsRateLimited RecordType = 41
	// A venue_anomaly record is journaled, rate limited per user, when the
	// venue shows something that disagrees with what the server knows: an
	// order push or read that does not match the attempt it names. It
	// changes nothing.
	RecordVenueAnomaly RecordType = 53
	// A daily_pnl_noted record is journaled when the day's realised PnL of
	// a user's positions changes (a fill, the first sight of a position
	// that day, a new UTC day): every position's count of the day, so that
	// a restart keeps counting the day's realised loss (posturecache.go).
	RecordDailyPnlNoted RecordType = 45
	// A stream_dropped record is journaled when updates of the private
	// stream were dropped (bounded ingestion, or lost by the stream) and
	// the state is read again by REST: the first drop at once, later ones
	// at most once a minute, summed.
	RecordStreamDropped RecordType = 50
	// A sessions_refused record is journaled, at most once per interval
	// per bearer token, when new older-era HTTP sessions were refused
	// over the open-session bounds (per token, or in all): how many since
	// the last such record.
	RecordSessionsRefused RecordType = 58
	// A paper_reset record is journaled when a human starts a paper
	// account over (`paper reset`), before the simulator applies it: what
	// was dropped and the opening wallet. Nothing else resets a paper
	// account.
	RecordPaperReset RecordType = 60
	// A shard_owner record is written by a cluster member as the first
	// record it appends to a shard's journal after taking the shard's
	// lock: the shard, the lock's epoch and the member. Every record after
	// it carries that epoch in its frame (docs/cluster.md).
	RecordShardOwner RecordType = 70
	// An agent_session record is written by a shard's system in a cluster
	// when one of a user's agent sessions opens or ends on a member's HTTP
	// front: the front (the member's id) and the event. A new owner of the
	// shard counts the sessions still open per front from them, and ends
	// those of a front that left the cluster as their close would have
	// (the dead-man switch's cancel_on_disconnect, docs/cluster.md).
	RecordAgentSession RecordType = 71
)

// RecordTypeInfo is one entry of the record type table: its docs/journal-format.md name,
// which part of the server writes it, and how replay treats it.
// TestRecordTableIsComplete checks every entry.
type RecordTypeInfo struct {
	Type RecordType
	Name string
	// Writer is the one part of the server that writes records of this
	// type.
	Writer RecordWriter
	// Replay says how start-up rebuilds user state from it.
	Replay ReplayKind
}

// RecordWriter is the part of the server that writes a record type.
type RecordWriter uint8

const (
	// WriterUser: a user actor (or the users supervisor), after deciding.
	WriterUser RecordWriter = iota + 1
	// WriterGuard: the MCP guard (tool_call).
	WriterGuard
	// WriterSystem: the server itself, through System.JournalJSON
	// (start-up, recovery, the control socket's refusals). These are the
	// only types a direct journal write may carry.
	WriterSystem
	// WriterLater: reserved for a later part of the server (tokens,
	// confirmations, the venue stream); nothing writes it yet.
	WriterLater
)

// ReplayKind says how replay treats a record type.
type ReplayKind uint8

const (
	// ReplayNone: the record changes no user state (an audit record).
	ReplayNone ReplayKind = iota + 1
	// ReplayWhole: the record carries a whole value of one part of the
	// state; only the last one per part matters (compaction).
	ReplayWhole
	// ReplayEvent: every record is applied in order (many-record state).
	ReplayEvent
)

// RecordTypes is the record type table.
var RecordTypes = []RecordTypeInfo{
	{RecordToolCall, "tool_call", WriterGuard, ReplayNone},
	{RecordOrderRefused, "order_refused", WriterUser, ReplayNone},
	{RecordOrderAttempt, "order_attempt", WriterUser, ReplayEvent},
	{RecordOrderOutcome, "order_outcome", WriterUser, ReplayEvent},
	{RecordOrderRepeat, "order_repeat", WriterUser, ReplayNone},
	{RecordConfirmationRequested, "confirmation_requested", WriterUser, ReplayEvent},
	{RecordConfirmationDecided, "confirmation_decided", WriterUser, ReplayEvent},
	{RecordConfirmationExecuted, "confirmation_executed", WriterUser, ReplayEvent},
	{RecordKillSwitchOn, "kill_switch_on", WriterUser, ReplayWhole},
	{RecordKillSwitchOff, "kill_switch_off", WriterUser, ReplayWhole},
	{RecordPolicyCeilingSet, "policy_ceiling_set", WriterUser, ReplayWhole},
	{RecordPolicyTightened, "policy_tightened", WriterUser, ReplayWhole},
	{RecordPolicyOverridesReset, "policy_overrides_reset", WriterUser, ReplayWhole},
	{RecordCredentialAdded, "credential_added", WriterUser, ReplayEvent},
	{RecordCredentialDeleted, "credential_deleted", WriterUser, ReplayEvent},
	{RecordTokenIssued, "token_issued", WriterUser, ReplayEvent},
	{RecordTokenRevoked, "token_revoked", WriterUser, ReplayEvent},
	{RecordUserCreated, "user_created", WriterUser, ReplayWhole},
	{RecordRecoveredTornTail, "recovered_torn_tail", WriterSystem, ReplayNone},
	{RecordServerStarted, "server_started", WriterSystem, ReplayNone},
	{RecordControlRefused, "control_refused", WriterSystem, ReplayNone},
	{RecordUserDisabled, "user_disabled", WriterUser, ReplayWhole},
	{RecordCredentialRejected, "credential_rejected", WriterUser, ReplayNone},
	{RecordCredentialChecked, "credential_checked", WriterUser, ReplayEvent},
	{RecordVenueUpdate, "venue_update", WriterUser, ReplayNone},
	{RecordPostureChanged, "posture_changed", WriterUser, ReplayWhole},
	{RecordDeadmanTriggered, "deadman_triggered", WriterUser, ReplayNone},
	{RecordCallsRateLimited, "calls_rate_limited", WriterGuard, ReplayNone},
	{RecordVenueAnomaly, "venue_anomaly", WriterUser, ReplayNone},
	{RecordDailyPnlNoted, "daily_pnl_noted", WriterUser, ReplayWhole},
	{RecordStreamDropped, "stream_dropped", WriterUser, ReplayNone},
	{RecordSessionsRefused, "sessions_refused", WriterGuard, ReplayNone},
	{RecordPaperReset, "paper_reset", WriterSystem, ReplayNone},
	{RecordShardOwner, "shard_owner", WriterSystem, ReplayNone},
	{RecordAgentSession, "agent_session", WriterSystem, ReplayNone},
}

// RecordInfo returns the table entry of t.
func RecordInfo(t RecordType) (RecordTypeInfo, bool) {
	for _, info := range RecordTypes {
		if info.Type == t {
			return info, true
		}
	}
	return RecordTypeInfo{}, false
}

// String returns the docs/journal-format.md name of t, or "type_N" for an unknown number.
func (t RecordType) String() string {
	for _, info := range RecordTypes {
		if info.Type == t {
			return info.Name
		}
	}
	return "type_" + itoa(uint64(t))
}

// RecordTypeByName returns the type named name.
func RecordTypeByName(name string) (RecordType, bool) {
	for _, info := range RecordTypes {
		if info.Name == name {
			return info.Type, true
		}
	}
	return 0, false
}

// Journal actors (docs/journal-format.md): who caused a record.
const (
	ActorAgent    = "mcp:agent"
	ActorCLIUser  = "cli:user"
	ActorCLIAdmin = "cli:admin"
	ActorExecutor = "system:executor"
	ActorVenue    = "system:venue"
	// ActorDeadman is the dead-man switch: the cancels it makes when an
	// agent disconnects or falls silent.
	ActorDeadman = "system:deadman"
	// ActorClientUI is the answer of the confirmation form in the MCP
	// client of a session (channel client_ui), relayed by the session,
	// never a tool call of the agent. The server cannot see who filled
	// the form: it is the user's human only as far as trust_client_ui
	// trusts that client (never on live, decision D92).
	ActorClientUI = "client_ui:user"
	// ActorSystem is the server itself (start-up, recovery).
	ActorSystem = "system:server"
)

func itoa(v uint64) string {
	if v == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for v > 0 {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
	}
	return string(b[i:])
}
