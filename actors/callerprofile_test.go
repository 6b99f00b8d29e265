package actors

import (
	"context"
	"testing"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// holdJournal keeps every journal write from being answered: the flusher
// writes and fsyncs its batch, then waits to add it to the get_my_journal
// index, before it answers the writers. It returns when a flush that
// started after the call is held, and release lets it go on.
func holdJournal(t *testing.T, ts *testSystem, start func()) (release func()) {
	t.Helper()
	unhold := ts.index.Hold()
	before := ts.Flushes()
	start()
	deadline := time.Now().Add(30 * time.Second)
	for ts.Flushes() == before {
		if time.Now().After(deadline) {
			unhold()
			t.Fatal("no journal write started")
		}
		time.Sleep(time.Millisecond)
	}
	return unhold
}

// profileNow reads the caller's profile as the MCP guard does, and fails
// when that waits (more than a generous bound) instead of answering.
func profileNow(t *testing.T, ts *testSystem, user string) (messages.Profile, error) {
	t.Helper()
	type answer struct {
		p   messages.Profile
		err error
	}
	got := make(chan answer, 1)
	go func() {
		p, err := ts.CallerProfile(user)
		got <- answer{p, err}
	}()
	select {
	case a := <-got:
		return a.p, a.err
	case <-time.After(10 * time.Second):
		t.Fatalf("the profile of %s waited for the user's journal write", user)
		return "", nil
	}
}

// submit runs cmd on its own goroutine; the channel gets its refusal or
// nil.
func submit(ts *testSystem, cmd messages.Command, origin string) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := ts.Handle(context.Background(), cmd, origin)
		done <- err
	}()
	return done
}

// The caller's profile answers while the user's own journal write is in
// flight: it is read from the committed state, not asked of the user actor
// behind that write.
func TestCallerProfileDoesNotWaitForTheUsersWrites(t *testing.T) {
	ts := startUsers(t, t.TempDir())
	trade := messages.ProfileTrade
	ts.must(t, &messages.CreateUserRequest{User: "ann"}, messages.ActorCLIAdmin)
	ts.must(t, &messages.SetCeilingRequest{User: "ann", Settings: messages.PolicySettings{Profile: &trade}}, messages.ActorCLIAdmin)
	var done <-chan error
	n := 5
	release := holdJournal(t, ts, func() {
		done = submit(ts, &messages.TightenPolicyRequest{User: "ann", Settings: messages.PolicySettings{MaxOrdersPerMinute: &n}}, messages.ActorCLIUser)
	})
	defer release()
	if p, err := profileNow(t, ts, "ann"); err != nil || p != messages.ProfileTrade {
		t.Fatalf("profile while the write is held: %q %v", p, err)
	}
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// Hostile: the profile is never looser than what the journal holds and the
// user actor applied. An admin's loosening is not seen while its record is
// held, and is seen once it was answered; a tightening, an admin reset and
// a disable are seen as soon as they were answered, without waiting. A
// user whose actors never started gets the profile replay rebuilt from the
// journal; a user never created gets none.
func TestCallerProfileNeverLooserThanTheJournal(t *testing.T) {
	dir := t.TempDir()
	ts := startUsers(t, dir)
	ts.must(t, &messages.CreateUserRequest{User: "bo"}, messages.ActorCLIAdmin)
	if p, err := profileNow(t, ts, "bo"); err != nil || p != messages.ProfileReadOnly {
		t.Fatalf("a new user: %q %v", p, err)
	}
	trade, readOnly := messages.ProfileTrade, messages.ProfileReadOnly
	var done <-chan error
	release := holdJournal(t, ts, func() {
		done = submit(ts, &messages.SetCeilingRequest{User: "bo", Settings: messages.PolicySettings{Profile: &trade}}, messages.ActorCLIAdmin)
	})
	defer release()
	for range 20 {
		if p, err := profileNow(t, ts, "bo"); err != nil || p != messages.ProfileReadOnly {
			release()
			t.Fatalf("a loosening not yet answered is seen: %q %v", p, err)
		}
	}
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if p, err := profileNow(t, ts, "bo"); err != nil || p != messages.ProfileTrade {
		t.Fatalf("after the loosening was answered: %q %v", p, err)
	}
	ts.must(t, &messages.TightenPolicyRequest{User: "bo", Settings: messages.PolicySettings{Profile: &readOnly}}, messages.ActorCLIUser)
	if p, err := profileNow(t, ts, "bo"); err != nil || p != messages.ProfileReadOnly {
		t.Fatalf("right after the tightening was answered: %q %v", p, err)
	}
	ts.must(t, &messages.ResetOverridesRequest{User: "bo"}, messages.ActorCLIAdmin)
	if p, err := profileNow(t, ts, "bo"); err != nil || p != messages.ProfileTrade {
		t.Fatalf("after the admin reset the user's own fields: %q %v", p, err)
	}
	ts.must(t, &messages.DisableUserRequest{User: "bo"}, messages.ActorCLIAdmin)
	if p, err := profileNow(t, ts, "bo"); err != nil || p != "" {
		t.Fatalf("right after the user was disabled: %q %v", p, err)
	}
	if _, err := profileNow(t, ts, "nobody"); messages.CodeOf(err) != messages.CodeNotFound {
		t.Fatalf("a user never created: %v", err)
	}
	if _, err := profileNow(t, ts, "Not A User"); messages.CodeOf(err) != messages.CodeInvalidParams {
		t.Fatalf("a name that is no user name: %v", err)
	}

	// A new process over the same journal: cy's actors are not started
	// by reading the profile, and the profile is the journal's.
	ts.must(t, &messages.CreateUserRequest{User: "cy"}, messages.ActorCLIAdmin)
	ts.must(t, &messages.SetCeilingRequest{User: "cy", Settings: messages.PolicySettings{Profile: &trade}}, messages.ActorCLIAdmin)
	ts.stop()
	ts = startUsers(t, dir)
	for user, want := range map[string]messages.Profile{"bo": "", "cy": messages.ProfileTrade} {
		if p, err := profileNow(t, ts, user); err != nil || p != want {
			t.Fatalf("%s after a restart: %q %v, want %q", user, p, err, want)
		}
		if ts.registry.get(user) != nil {
			t.Fatalf("reading the profile started %s's actors", user)
		}
	}
}
