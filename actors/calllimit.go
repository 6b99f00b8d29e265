package actors

import (
	"encoding/json"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// CallsRateLimited journals the count of tool calls refused for a
// session's call rate (calls_rate_limited, actor mcp:agent), without
// waiting for the disk: losing it in a crash acknowledges nothing.
func (s *System) CallsRateLimited(ev *messages.CallsRateLimitedEvent) error {
	if e := s.homeUser(ev.User); e != nil {
		return e
	}
	payload, err := json.Marshal(ev)
	if err != nil {
		return messages.Internal(err)
	}
	return s.journalAsync(wal.Entry{Type: uint16(messages.RecordCallsRateLimited), User: ev.User, Actor: messages.ActorAgent, Payload: payload})
}

// SessionsRefused journals the count of older-era HTTP sessions refused
// over the open-session bounds (sessions_refused, actor mcp:agent: the
// token's client asked), without waiting for the disk.
func (s *System) SessionsRefused(ev *messages.SessionsRefusedEvent) error {
	if e := s.homeUser(ev.User); e != nil {
		return e
	}
	payload, err := json.Marshal(ev)
	if err != nil {
		return messages.Internal(err)
	}
	return s.journalAsync(wal.Entry{Type: uint16(messages.RecordSessionsRefused), User: ev.User, Actor: messages.ActorAgent, Payload: payload})
}
