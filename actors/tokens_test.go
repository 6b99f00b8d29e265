package actors

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

var adminOrigin = messages.Origin{Role: messages.RoleAdmin, Channel: messages.ChannelSocket, PeerUID: 1000, PeerPID: 1}

func issue(t *testing.T, ts *testSystem, user string) *messages.TokenIssued {
	t.Helper()
	res, err := ts.Submit(context.Background(), &messages.IssueTokenRequest{User: user}, adminOrigin)
	if err != nil {
		t.Fatalf("issue for %s: %v", user, err)
	}
	return res.(*messages.TokenIssued)
}

// A token authenticates its own user only; revoke and disable apply to the
// next check; nothing of the token but its SHA-256 reaches the journal or
// the logs; replay rebuilds the same answers.
func TestTokensIssueAuthenticateRevokeDisableReplay(t *testing.T) {
	dir := t.TempDir()
	ts := startUsers(t, dir)
	ctx := context.Background()
	for _, u := range []string{"ann", "bob"} {
		ts.must(t, &messages.CreateUserRequest{User: u}, messages.ActorCLIAdmin)
	}
	a1, a2, b1 := issue(t, ts, "ann"), issue(t, ts, "ann"), issue(t, ts, "bob")
	if a1.Token == a2.Token || a1.ID == a2.ID || !strings.HasPrefix(a1.Token, messages.TokenPrefix) || !strings.HasPrefix(a1.ID, messages.TokenIDPrefix) {
		t.Fatalf("tokens not distinct or badly formed: %+v %+v", a1, a2)
	}
	for _, c := range []struct {
		tok, user, id string
	}{{a1.Token, "ann", a1.ID}, {a2.Token, "ann", a2.ID}, {b1.Token, "bob", b1.ID}} {
		user, id, err := ts.Authenticate(c.tok)
		if err != nil || user != c.user || id != c.id {
			t.Fatalf("Authenticate: %s %s %v, want %s %s", user, id, err, c.user, c.id)
		}
	}
	for _, bad := range []string{"", a1.ID, a1.Token + "x", a1.Token[:len(a1.Token)-1], "Bearer " + a1.Token, strings.ToUpper(a1.Token)} {
		if _, _, err := ts.Authenticate(bad); err == nil {
			t.Fatalf("Authenticate(%q) passed", bad)
		}
	}
	// Revoke by id alone: the server finds the user.
	res, err := ts.Submit(ctx, &messages.RevokeTokenRequest{ID: a1.ID}, adminOrigin)
	if err != nil || !res.(*messages.TokenList).Changed {
		t.Fatalf("revoke: %v %+v", err, res)
	}
	if _, _, err := ts.Authenticate(a1.Token); err == nil {
		t.Fatal("a revoked token still authenticates")
	}
	if u, _, err := ts.Authenticate(a2.Token); err != nil || u != "ann" {
		t.Fatalf("revoking one token broke another: %v", err)
	}
	res, err = ts.Submit(ctx, &messages.RevokeTokenRequest{ID: a1.ID}, adminOrigin)
	if err != nil || res.(*messages.TokenList).Changed {
		t.Fatalf("revoking twice changed something: %v %+v", err, res)
	}
	if _, err := ts.Submit(ctx, &messages.RevokeTokenRequest{ID: "tok_0000000000000000"}, adminOrigin); messages.CodeOf(err) != messages.CodeNotFound {
		t.Fatalf("unknown id: %v", err)
	}
	// Disable: every token of the user fails, the other user's do not.
	ts.must(t, &messages.DisableUserRequest{User: "ann"}, messages.ActorCLIAdmin)
	if _, _, err := ts.Authenticate(a2.Token); err == nil {
		t.Fatal("a disabled user's token still authenticates")
	}
	if _, err := ts.Submit(ctx, &messages.IssueTokenRequest{User: "ann"}, adminOrigin); messages.CodeOf(err) != messages.CodePermissionDenied {
		t.Fatalf("issued a token to a disabled user: %v", err)
	}
	if u, _, err := ts.Authenticate(b1.Token); err != nil || u != "bob" {
		t.Fatalf("bob: %v", err)
	}
	// Only the admin issues, revokes and lists; the id and token cannot be
	// chosen by the sender.
	for _, o := range []messages.Origin{messages.OriginOfActor(messages.ActorAgent), messages.OriginOfActor(messages.ActorCLIUser), {Role: messages.RoleApprover}} {
		for _, cmd := range []messages.Command{&messages.IssueTokenRequest{User: "bob"}, &messages.RevokeTokenRequest{ID: b1.ID}, &messages.ListTokensRequest{User: "bob"}} {
			if _, err := ts.Submit(ctx, cmd, o); messages.CodeOf(err) != messages.CodePermissionDenied {
				t.Fatalf("%s %s: %v", o.Role, cmd.CommandName(), err)
			}
		}
	}
	chosen := &messages.IssueTokenRequest{User: "bob", ID: "tok_chosen", Token: messages.TokenPrefix + "chosen"}
	got, err := ts.Submit(ctx, chosen, adminOrigin)
	if err != nil || got.(*messages.TokenIssued).ID == "tok_chosen" || got.(*messages.TokenIssued).Token == messages.TokenPrefix+"chosen" {
		t.Fatalf("the sender chose a token: %v %+v", err, got)
	}
	if _, _, err := ts.Authenticate(messages.TokenPrefix + "chosen"); err == nil {
		t.Fatal("a chosen token authenticates")
	}
	b2 := got.(*messages.TokenIssued)
	list, err := ts.Submit(ctx, &messages.ListTokensRequest{User: "bob"}, adminOrigin)
	if err != nil || len(list.(*messages.TokenList).Tokens) != 2 {
		t.Fatalf("list: %v %+v", err, list)
	}

	// The journal holds ids and hashes, never a token.
	var issued, revoked int
	err = wal.Scan(dir, func(r wal.Record) error {
		for _, tok := range []string{a1.Token, a2.Token, b1.Token, b2.Token} {
			if bytes.Contains(r.Payload, []byte(tok)) || strings.Contains(r.Channel, tok) {
				t.Errorf("seq %d (%s) holds a token", r.Seq, messages.RecordType(r.Type))
			}
		}
		switch messages.RecordType(r.Type) {
		case messages.RecordTokenIssued:
			issued++
			if r.Actor != messages.ActorCLIAdmin {
				t.Errorf("token_issued by %s", r.Actor)
			}
		case messages.RecordTokenRevoked:
			revoked++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if issued != 4 || revoked != 1 {
		t.Fatalf("journal: %d token_issued, %d token_revoked", issued, revoked)
	}
	sum := sha256.Sum256([]byte(b1.Token))
	if !journalHas(t, dir, hex.EncodeToString(sum[:])) {
		t.Fatal("token_issued does not carry the token's SHA-256")
	}
	for _, tok := range []string{a1.Token, b1.Token} {
		if strings.Contains(ts.buf.String(), tok) {
			t.Fatal("a token reached the logs")
		}
	}

	// Replay: the same answers after a restart.
	ts.stop()
	ts2 := startUsers(t, dir)
	if _, _, err := ts2.Authenticate(a1.Token); err == nil {
		t.Fatal("after replay: a revoked token authenticates")
	}
	if _, _, err := ts2.Authenticate(a2.Token); err == nil {
		t.Fatal("after replay: a disabled user's token authenticates")
	}
	for _, c := range []*messages.TokenIssued{b1, b2} {
		if u, id, err := ts2.Authenticate(c.Token); err != nil || u != "bob" || id != c.ID {
			t.Fatalf("after replay: %s: %v", c.ID, err)
		}
	}
	if _, err := ts2.Submit(ctx, &messages.RevokeTokenRequest{ID: b1.ID}, adminOrigin); err != nil {
		t.Fatalf("revoke after replay: %v", err)
	}
	if _, _, err := ts2.Authenticate(b1.Token); err == nil {
		t.Fatal("revoked after replay, still authenticates")
	}
}

// A token_issued record appended under any name but the admin's refuses
// start, like every other admin record.
func TestForgedTokenRecordRefusesStart(t *testing.T) {
	dir := t.TempDir()
	ts := startUsers(t, dir)
	ts.must(t, &messages.CreateUserRequest{User: "ann"}, messages.ActorCLIAdmin)
	sum := sha256.Sum256([]byte(messages.TokenPrefix + "forged"))
	if _, err := ts.journalJSON(context.Background(), messages.RecordTokenIssued, "ann", messages.ActorAgent,
		messages.TokenIssuedEvent{ID: "tok_1", User: "ann", SHA256: hex.EncodeToString(sum[:])}); err != nil {
		t.Fatal(err)
	}
	ts.stop()
	_, _, err := wal.Open(dir, wal.Options{OnRecord: NewUserReplay().OnRecord})
	if err == nil || !strings.Contains(err.Error(), "token_issued") {
		t.Fatalf("a forged token_issued did not refuse start: %v", err)
	}
}

func journalHas(t *testing.T, dir, s string) bool {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err == nil && bytes.Contains(b, []byte(s)) {
			return true
		}
	}
	return false
}
