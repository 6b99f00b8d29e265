package mcp

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

func testSealer(t testing.TB, master []byte, now func() time.Time) *stateSealer {
	t.Helper()
	key, err := RequestStateKey(master)
	if err != nil {
		t.Fatal(err)
	}
	s, err := newStateSealer(key, now)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func wantRefused(t *testing.T, what string, e *messages.Error, reason string) {
	t.Helper()
	if e == nil {
		t.Fatalf("%s: opened", what)
	}
	if e.Code != messages.CodeInvalidParams || e.Details["field"] != "requestState" || e.Details["reason"] != reason {
		t.Fatalf("%s: %+v", what, e)
	}
}

// The sub-key is a function of the master key alone (a restart derives
// the same one) and is not the master key.
func TestRequestStateKeyDerivation(t *testing.T) {
	m1 := bytes.Repeat([]byte{1}, 32)
	m2 := bytes.Repeat([]byte{2}, 32)
	a, err := RequestStateKey(m1)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := RequestStateKey(append([]byte{}, m1...))
	c, _ := RequestStateKey(m2)
	if !bytes.Equal(a, b) || bytes.Equal(a, c) || bytes.Equal(a, m1) || len(a) != 32 {
		t.Fatalf("derivation: %x %x %x", a, b, c)
	}
	if _, err := RequestStateKey(nil); err == nil {
		t.Fatal("an empty master key derived a sub-key")
	}
}

// A sealed state opens for its own principal, tool and call until it
// expires; a state sealed by another server (another master key, or the
// same server after a restart with the same key) behaves accordingly;
// every changed byte, another principal, token, tool or call, expiry and
// garbage are refused with a stable reason, never echoing the state.
func TestRequestStateSealing(t *testing.T) {
	master := bytes.Repeat([]byte{7}, 32)
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	s := testSealer(t, master, clock)
	p := Principal{User: "alice", Profile: ProfileTrade, TokenID: "tok_1"}
	st := formState{User: "alice", TokenID: "tok_1", Tool: "place_order", CallDigest: callDigest("place_order", map[string]string{"qty": "1"}),
		ConfirmationID: "cf_0123456789abcdef01234567", ActorDigest: "ad", Env: "paper", Expires: now.Add(time.Minute).UnixMilli()}
	wire, err := s.seal(st)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(wire, "alice") || strings.Contains(wire, st.ConfirmationID) {
		t.Fatalf("the state is readable: %s", wire)
	}
	got, e := s.open(wire, p, "place_order", st.CallDigest, "paper")
	if e != nil || got.ConfirmationID != st.ConfirmationID || got.ActorDigest != "ad" {
		t.Fatalf("open: %+v %v", got, e)
	}
	// The same master key after a restart opens it; another does not.
	if _, e := testSealer(t, master, clock).open(wire, p, "place_order", st.CallDigest, "paper"); e != nil {
		t.Fatalf("after a restart: %v", e)
	}
	_, e = testSealer(t, bytes.Repeat([]byte{8}, 32), clock).open(wire, p, "place_order", st.CallDigest, "paper")
	wantRefused(t, "another master key", e, stateReasonInvalid)

	// Every byte changed, one at a time.
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(wire, requestStatePrefix))
	if err != nil {
		t.Fatal(err)
	}
	for i := range raw {
		bad := bytes.Clone(raw)
		bad[i] ^= 0x01
		_, e := s.open(requestStatePrefix+base64.RawURLEncoding.EncodeToString(bad), p, "place_order", st.CallDigest, "paper")
		wantRefused(t, "flipped byte", e, stateReasonInvalid)
	}
	for name, w := range map[string]string{
		"empty": "", "prefix only": requestStatePrefix, "no prefix": strings.TrimPrefix(wire, requestStatePrefix),
		"truncated": wire[:len(wire)-4], "not base64": requestStatePrefix + "!!!!", "huge": requestStatePrefix + strings.Repeat("A", maxRequestState),
		"other version": "gx2." + strings.TrimPrefix(wire, requestStatePrefix), "appended": wire + "AAAA",
	} {
		_, e := s.open(w, p, "place_order", st.CallDigest, "paper")
		wantRefused(t, name, e, stateReasonInvalid)
		if strings.Contains(e.Message, w) && w != "" {
			t.Fatalf("%s: the refusal echoes the state", name)
		}
	}
	for name, c := range map[string]struct {
		p            Principal
		tool, digest string
	}{
		"other user":   {Principal{User: "bob", Profile: ProfileTrade, TokenID: "tok_1"}, "place_order", st.CallDigest},
		"other token":  {Principal{User: "alice", Profile: ProfileTrade, TokenID: "tok_2"}, "place_order", st.CallDigest},
		"no token":     {Principal{User: "alice", Profile: ProfileTrade}, "place_order", st.CallDigest},
		"other tool":   {p, "close_position", st.CallDigest},
		"other call":   {p, "place_order", callDigest("place_order", map[string]string{"qty": "2"})},
		"other digest": {p, "place_order", callDigest("cancel_order", map[string]string{"qty": "1"})},
	} {
		_, e := s.open(wire, c.p, c.tool, c.digest, "paper")
		wantRefused(t, name, e, stateReasonForeign)
	}
	// The venue is bound: a server restarted on another venue refuses
	// it; a server that names no venue leaves the check to the user
	// actor.
	_, e = s.open(wire, p, "place_order", st.CallDigest, "bybit-demo")
	wantRefused(t, "other venue", e, stateReasonVenue)
	if _, e := s.open(wire, p, "place_order", st.CallDigest, ""); e != nil {
		t.Fatalf("no venue named: %v", e)
	}
	now = now.Add(time.Minute)
	_, e = s.open(wire, p, "place_order", st.CallDigest, "paper")
	wantRefused(t, "expired", e, stateReasonExpired)

	// A state sealed with a malformed confirmation id does not open (a
	// sealed state is only ever made from the actor's answer).
	bad := st
	bad.ConfirmationID = "cf_x"
	bad.Expires = now.Add(time.Hour).UnixMilli()
	w2, _ := s.seal(bad)
	_, e = s.open(w2, p, "place_order", st.CallDigest, "paper")
	wantRefused(t, "malformed id", e, stateReasonInvalid)
}

// Two seals of the same content differ (a fresh nonce each time).
func TestRequestStateNonce(t *testing.T) {
	s := testSealer(t, bytes.Repeat([]byte{3}, 32), nil)
	st := formState{User: "u", Tool: "place_order", ConfirmationID: "cf_0123456789abcdef01234567", Expires: time.Now().Add(time.Minute).UnixMilli()}
	a, _ := s.seal(st)
	b, _ := s.seal(st)
	if a == b {
		t.Fatal("two seals are equal")
	}
}

// No input but a state this server sealed opens: random bytes, prefixed
// or not, are refused with the stable reason and never panic.
func FuzzRequestStateOpen(f *testing.F) {
	master := bytes.Repeat([]byte{9}, 32)
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	s := testSealer(f, master, func() time.Time { return now })
	p := Principal{User: "alice", Profile: ProfileTrade}
	sealed := formState{V: 1, User: "alice", Tool: "place_order", CallDigest: "d", ConfirmationID: "cf_0123456789abcdef01234567", Env: "paper", Expires: now.Add(time.Minute).UnixMilli()}
	genuine, err := s.seal(sealed)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(genuine)
	f.Add(requestStatePrefix)
	f.Add(requestStatePrefix + strings.Repeat("A", 100))
	f.Add("")
	f.Fuzz(func(t *testing.T, wire string) {
		st, e := s.open(wire, p, "place_order", "d", "paper")
		if e == nil {
			// Only a state sealed under this key opens (a fuzzing worker
			// seals its own genuine seed), and it opens as sealed.
			if st != sealed {
				t.Fatalf("opened %+v from %q", st, wire)
			}
			return
		}
		if r := e.Details["reason"]; r != stateReasonInvalid {
			t.Fatalf("reason %v", r)
		}
	})
}

// BenchmarkRequestState is one form round's sealing work: seal the state
// on the first call, open it on the repeated one.
func BenchmarkRequestState(b *testing.B) {
	s := testSealer(b, bytes.Repeat([]byte{5}, 32), nil)
	p := Principal{User: "alice", Profile: ProfileTrade, TokenID: "tok_1"}
	st := formState{User: "alice", TokenID: "tok_1", Tool: "place_order", CallDigest: strings.Repeat("d", 64),
		ConfirmationID: "cf_0123456789abcdef01234567", ActorDigest: strings.Repeat("a", 64), Env: "paper", Expires: time.Now().Add(time.Hour).UnixMilli()}
	b.ReportAllocs()
	for b.Loop() {
		wire, err := s.seal(st)
		if err != nil {
			b.Fatal(err)
		}
		if _, e := s.open(wire, p, "place_order", st.CallDigest, "paper"); e != nil {
			b.Fatal(e)
		}
	}
}
