package shard

import (
	"strings"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/remote"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// Only an event about the member the call went to ends the call early:
// its endpoint terminated, or the topology lists it as left.
func TestMemberGoneMatchesOnlyThatMember(t *testing.T) {
	const addr = "127.0.0.1:4001"
	for _, tc := range []struct {
		name string
		evt  any
		want bool
	}{
		{"endpoint terminated", &remote.EndpointTerminatedEvent{Address: addr}, true},
		{"another endpoint terminated", &remote.EndpointTerminatedEvent{Address: "127.0.0.1:4002"}, false},
		{"left the topology", &cluster.ClusterTopology{Left: []*cluster.Member{{Host: "127.0.0.1", Port: 4002}, {Host: "127.0.0.1", Port: 4001}}}, true},
		{"still a member", &cluster.ClusterTopology{Members: []*cluster.Member{{Host: "127.0.0.1", Port: 4001}}, Left: []*cluster.Member{{Host: "127.0.0.1", Port: 4002}}}, false},
		{"joined", &cluster.ClusterTopology{Joined: []*cluster.Member{{Host: "127.0.0.1", Port: 4001}}}, false},
		{"endpoint connected", &remote.EndpointConnectedEvent{Address: addr}, false},
		{"dead letter", &actor.DeadLetterEvent{}, false},
	} {
		if got := memberGone(tc.evt, addr); got != tc.want {
			t.Errorf("%s: memberGone = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// The early answer is retryable like an unserved call (code and reason),
// but it does not claim the call was not served.
func TestMemberLeftSaysTheOutcomeIsUnknown(t *testing.T) {
	e := MemberLeft()
	if e.Code != messages.CodeExchangeUnavailable || e.Details["reason"] != ReasonUnavailable || e.Details["served"] != "unknown" {
		t.Fatalf("MemberLeft: %+v", e)
	}
	if !strings.Contains(e.Message, "may or may not have taken effect") || strings.Contains(e.Message, "not served") {
		t.Fatalf("MemberLeft's message: %q", e.Message)
	}
	if !strings.Contains(e.NextStep, "same idempotency key") {
		t.Fatalf("MemberLeft's next step: %q", e.NextStep)
	}
}
