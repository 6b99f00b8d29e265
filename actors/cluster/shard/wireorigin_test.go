package shard

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// submitSpy is a Target whose Submit records that it ran.
type submitSpy struct {
	Target
	ran bool
}

func (s *submitSpy) Submit(context.Context, messages.Command, messages.Origin) (any, error) {
	s.ran = true
	return nil, nil
}

// An origin's ConfirmationID (the server executing an approved
// confirmation: the trading call counts as approved) and FormAnswer (a
// human's answer in the client's form) are set only inside the user's
// actor, never by a channel (messages.Origin). A call whose origin
// carries either is not one a member's front or control socket sends:
// the shard refuses it as bad_call before anything runs, so no caller of
// the wire can place an order that needs a human's confirmation as if a
// human had given it.
func TestServeRefusesInternalOriginFields(t *testing.T) {
	body, _ := json.Marshal(map[string]any{})
	for name, o := range map[string]messages.Origin{
		"confirmation": {Role: messages.RoleAgent, Channel: messages.ChannelHTTP, PeerUID: -1, PeerPID: -1, TokenID: "tok_1", ConfirmationID: "cf_1"},
		"form answer":  {Role: messages.RoleAgent, Channel: messages.ChannelHTTP, PeerUID: -1, PeerPID: -1, TokenID: "tok_1", FormAnswer: true},
	} {
		b, _ := json.Marshal(call{Method: methodSubmit, Type: "admin.user.create", Body: body, Origin: &o})
		spy := &submitSpy{}
		var a answer
		if err := json.Unmarshal(Serve(context.Background(), spy, b), &a); err != nil {
			t.Fatal(err)
		}
		if spy.ran || a.Error == nil || a.Error.Details["reason"] != ReasonBadCall {
			t.Fatalf("%s: submit ran %v, answer %+v", name, spy.ran, a.Error)
		}
	}
	// The origin a front sends is served.
	o := messages.Origin{Role: messages.RoleAgent, Channel: messages.ChannelHTTP, PeerUID: -1, PeerPID: -1, TokenID: "tok_1"}
	b, _ := json.Marshal(call{Method: methodSubmit, Type: "admin.user.create", Body: body, Origin: &o})
	spy := &submitSpy{}
	Serve(context.Background(), spy, b)
	if !spy.ran {
		t.Fatal("a front's origin was not served")
	}
}
