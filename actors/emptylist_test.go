package actors

import (
	"strings"
	"testing"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// An empty confirm_actions (or allow) set by the admin stays empty across a
// restart: it is journaled as [], never null, and replays as the empty
// list, not as the default (every action confirmed). The lists are built
// the way Go callers build them: a variadic call with no arguments gives a
// nil slice.
func TestEmptyListSettingsSurviveARestart(t *testing.T) {
	dir := t.TempDir()
	ts := startUsers(t, dir)
	ts.must(t, &messages.CreateUserRequest{User: "erin"}, messages.ActorCLIAdmin)
	v := ts.must(t, &messages.SetCeilingRequest{User: "erin", Settings: messages.PolicySettings{
		Profile: prof(messages.ProfileTrade), ConfirmActions: strs(), Allow: strs()}}, messages.ActorCLIAdmin)
	if len(v.Effective.ConfirmActions) != 0 {
		t.Fatalf("before the restart: confirm_actions %v", v.Effective.ConfirmActions)
	}
	ts.stop()
	var payload string
	if err := wal.Scan(dir, func(r wal.Record) error {
		if messages.RecordType(r.Type) == messages.RecordPolicyCeilingSet {
			payload = string(r.Payload)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(payload, "null") || !strings.Contains(payload, `"confirm_actions":[]`) {
		t.Fatalf("policy_ceiling_set payload: %s", payload)
	}

	ts = startUsers(t, dir)
	v = ts.must(t, &messages.ShowPolicyRequest{User: "erin"}, messages.ActorCLIAdmin)
	if len(v.Effective.ConfirmActions) != 0 || v.Ceiling.ConfirmActions == nil || len(*v.Ceiling.ConfirmActions) != 0 {
		t.Fatalf("after the restart: effective %v, ceiling %v", v.Effective.ConfirmActions, v.Ceiling.ConfirmActions)
	}
	if len(v.Effective.Allow) != 0 || v.Ceiling.Allow == nil {
		t.Fatalf("after the restart: allow %v / %v", v.Effective.Allow, v.Ceiling.Allow)
	}
}
