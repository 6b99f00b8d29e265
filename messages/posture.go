package messages

import (
	"slices"
	"time"

	"github.com/shopspring/decimal"
)

// PostureState is where a user stands (issue 13): ACTIVE, REDUCING (only
// risk-reducing actions go through) or HALTED (the kill switch is on).
type PostureState string

// The posture states, from the least strict.
const (
	PostureActive   PostureState = "ACTIVE"
	PostureReducing PostureState = "REDUCING"
	PostureHalted   PostureState = "HALTED"
)

// The causes of REDUCING. A human cause (reduce by a human, or by the
// agent through reduce_risk_only) is cleared only by a human; an automatic
// cause clears itself when the condition ends.
const (
	// CauseHuman: a human ran `posture reduce`.
	CauseHuman = "human"
	// CauseAgent: the agent called reduce_risk_only.
	CauseAgent = "agent"
	// CauseStreamStale: the private stream has been down (or flapping:
	// reconnecting more than 3 times in 10 s) longer than stream_stale_s,
	// so outcomes could not be settled.
	CauseStreamStale = "stream_stale"
	// CauseDailyLoss: the day's realised plus unrealised loss reached
	// max_daily_loss_usdt.
	CauseDailyLoss = "daily_loss"
	// CauseDiskLow: the journal's disk has less free space than the margin.
	CauseDiskLow = "disk_low"
)

// AutoCauses are the automatic causes, in display order.
var AutoCauses = []string{CauseStreamStale, CauseDailyLoss, CauseDiskLow}

// IsHumanCause reports whether only a human may clear cause c.
func IsHumanCause(c string) bool { return c == CauseHuman || c == CauseAgent }

// PostureCauses is the set of REDUCING causes that hold, as journaled:
// sorted, without repeats.
type PostureCauses []string

// With returns the causes with c added.
func (p PostureCauses) With(c string) PostureCauses {
	if slices.Contains(p, c) {
		return p
	}
	out := append(slices.Clone(p), c)
	slices.Sort(out)
	return out
}

// Without returns the causes with c removed.
func (p PostureCauses) Without(c string) PostureCauses {
	return slices.DeleteFunc(slices.Clone(p), func(x string) bool { return x == c })
}

// Human returns the causes only a human may clear.
func (p PostureCauses) Human() PostureCauses {
	return slices.DeleteFunc(slices.Clone(p), func(x string) bool { return !IsHumanCause(x) })
}

// Auto returns the automatic causes.
func (p PostureCauses) Auto() PostureCauses {
	return slices.DeleteFunc(slices.Clone(p), IsHumanCause)
}

// StateOf is the posture of a kill switch and a set of causes: HALTED
// when the switch is on, REDUCING when a cause holds, else ACTIVE.
func StateOf(k KillSwitch, causes PostureCauses) PostureState {
	switch {
	case k != KillSwitchNone && k != "":
		return PostureHalted
	case len(causes) > 0:
		return PostureReducing
	}
	return PostureActive
}

// PostureChangedEvent is journaled as posture_changed on every change of
// the posture: a state transition (kill switch included) or a cause that
// starts or ends. Causes is the whole set after the change (replay keeps
// the last record only).
type PostureChangedEvent struct {
	Before PostureState `json:"before"`
	After  PostureState `json:"after"`
	// Reason names what changed: "human_reduce", "agent_reduce",
	// "human_resume", "stream_stale", "stream_stale_cleared", ...,
	// "kill_switch_on", "kill_switch_off".
	Reason string `json:"reason"`
	// Actor is the journal actor that caused the change (as the record's).
	Actor        string        `json:"actor"`
	CausesBefore PostureCauses `json:"causes_before"`
	Causes       PostureCauses `json:"causes"`
}

// DailyPnlEvent is the payload of daily_pnl_noted: the day's realised PnL
// of every position seen that day, as the stream cache counts it. Each
// record carries the whole day (only the last one matters); a record of
// an earlier day counts nothing. The day is counted per venue: only the
// last record of the venue a process serves matters to it (D100).
type DailyPnlEvent struct {
	// Day is the UTC day counted, "2006-01-02".
	Day string `json:"day"`
	// Environment is the venue whose positions are counted (paper,
	// bybit-demo, ...). Empty in records written before it existed, which
	// count for a venue that has no record of its own.
	Environment string        `json:"environment,omitempty"`
	Rows        []DailyPnlRow `json:"rows"`
}

// DailyPnlRow is one position's count of the day.
type DailyPnlRow struct {
	Category    Category `json:"category"`
	Symbol      string   `json:"symbol"`
	PositionIdx int      `json:"position_idx"`
	// CumRealisedPnl is the exchange's cumulative realised PnL of the
	// position when last seen.
	CumRealisedPnl decimal.Decimal `json:"cum_realised_pnl"`
	// RealisedUSDT is the PnL realised on the position that day (negative:
	// a loss).
	RealisedUSDT decimal.Decimal `json:"realised_usdt"`
}

// ShowPostureRequest asks for a user's posture (get_posture, `posture
// show`). It never waits on the exchange. Answer: *PostureView.
type ShowPostureRequest struct {
	User string `json:"user"`
}

// SetPostureRequest enters (Reduce) or leaves a human REDUCING. The agent
// may only enter; leaving is for a human. Answer: *PostureView.
type SetPostureRequest struct {
	User   string `json:"user"`
	Reduce bool   `json:"reduce"`
}

// CommandName implements Command.
func (*ShowPostureRequest) CommandName() string { return "posture.show" }

// CommandName implements Command.
func (*SetPostureRequest) CommandName() string { return "posture.set" }

// TargetUser implements UserCommand.
func (c *ShowPostureRequest) TargetUser() string { return c.User }

// TargetUser implements UserCommand.
func (c *SetPostureRequest) TargetUser() string { return c.User }

// PostureView is the answer of get_posture: where the user stands, in at
// most 2 KB. Amounts are decimal strings.
type PostureView struct {
	User    string       `json:"user"`
	Venue   string       `json:"venue"`
	State   PostureState `json:"state"`
	Why     []string     `json:"why,omitempty"`
	Changed bool         `json:"changed,omitempty"`
	// KillSwitch is none, user or admin.
	KillSwitch KillSwitch `json:"kill_switch"`
	// Limits are the rolling limits by policy field name.
	Limits   map[string]LimitUse `json:"limits"`
	Loss     DailyLoss           `json:"daily_loss"`
	Exposure PostureExposure     `json:"exposure"`
	Stream   StreamHealth        `json:"stream"`
	// Disk is nil when the journal's disk is not watched.
	Disk *DiskHealth `json:"disk,omitempty"`
}

// LimitUse is one rolling limit: what is used and what is left (the
// maximum is the effective policy's, see get_my_policy).
type LimitUse struct {
	Used string `json:"used"`
	Left string `json:"left"`
}

// DailyLoss is the day's (from 00:00 UTC) realised plus unrealised loss
// against max_daily_loss_usdt.
type DailyLoss struct {
	LossUSDT decimal.Decimal `json:"loss_usdt"`
	MaxUSDT  decimal.Decimal `json:"max_usdt"`
}

// PostureExposure is what the stream cache shows: open orders by origin
// and positions. Known is false when the cache has nothing yet.
type PostureExposure struct {
	Known     bool                    `json:"known"`
	Note      string                  `json:"note,omitempty"`
	Orders    map[string]OriginOrders `json:"open_orders"`
	Positions []PositionExposure      `json:"positions"`
	More      int                     `json:"more_positions,omitempty"`
	// Unreadable counts the positions left out because the venue's row
	// had a symbol or side that is not one (exchange text is never shown
	// outside untrusted_text).
	Unreadable int `json:"unreadable_positions,omitempty"`
}

// OriginOrders counts the open orders of one origin and their notional.
type OriginOrders struct {
	Count        int             `json:"count"`
	NotionalUSDT decimal.Decimal `json:"notional_usdt"`
}

// PositionExposure is one open position.
type PositionExposure struct {
	Category      Category        `json:"category"`
	Symbol        string          `json:"symbol"`
	Side          string          `json:"side"`
	Size          decimal.Decimal `json:"size"`
	NotionalUSDT  decimal.Decimal `json:"notional_usdt"`
	UnrealisedPnl decimal.Decimal `json:"unrealised_pnl"`
}

// StreamHealth is the private stream's health as the venue actor saw it.
type StreamHealth struct {
	// Open is false when no stream runs for this user (no key, or no
	// stream on this venue).
	Open      bool `json:"open"`
	Connected bool `json:"connected"`
	// LastMessageAgeS is the age of the last push (data message) read,
	// in seconds; -1 when none was read. Pongs do not count: they prove
	// the connection, not that pushes reach the server.
	LastMessageAgeS float64 `json:"last_message_age_s"`
	// DownForS is how long it has not been healthy: down, or flapping
	// since a healthy connection went down (0 when healthy).
	DownForS float64 `json:"down_for_s,omitempty"`
	// Flapping: connected, but reconnecting more than 3 times in 10 s
	// without a connection that held 3 s, or more than 5 times in a
	// minute however long each held; it counts as down.
	Flapping bool `json:"flapping,omitempty"`
	StaleS   int  `json:"stale_after_s"`
}

// DiskHealth is the journal's disk: free space against the margin.
type DiskHealth struct {
	FreeBytes   uint64 `json:"free_bytes"`
	MarginBytes uint64 `json:"margin_bytes"`
}

// DayStart is 00:00 UTC of t's day: the start of the daily loss.
func DayStart(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}
