package actors

import (
	"testing"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// A refused tighten names every looser field in its message, separated
// by ", ", in the order Looser gives them.
func TestTightenRefusalMessageListsLooserFields(t *testing.T) {
	ts := startUsers(t, t.TempDir())
	ts.must(t, &messages.CreateUserRequest{User: "bob"}, messages.ActorCLIAdmin)
	ts.must(t, &messages.SetCeilingRequest{User: "bob", Settings: messages.PolicySettings{
		Profile: prof(messages.ProfileTrade), Allow: strs("linear:BTCUSDT"), MaxLeverage: dec("3"),
	}}, messages.ActorCLIAdmin)
	_, err := ts.do(t, &messages.TightenPolicyRequest{User: "bob", Settings: messages.PolicySettings{
		MaxLeverage: dec("4"), Allow: strs("spot:ETHUSDT"),
	}}, messages.ActorCLIUser)
	const want = "policy tighten may only make the policy stricter; looser fields: allow, max_leverage"
	if e := messages.AsError(err); e == nil || e.Message != want {
		t.Fatalf("refusal %v, want message %q", err, want)
	}
}
