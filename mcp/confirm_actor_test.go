package mcp

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// A human's approval in the client's form is journaled as the human's
// (client_ui:user, on channel client_ui and the session's own channel),
// never as the agent's, and the table dump shows it plainly (B5).
func TestFormDecisionIsJournaledAsTheHuman(t *testing.T) {
	e := newEnv(t)
	e.confirmUser(t, "alice", true)
	accept := func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{approveField: true}}, nil
	}
	cs := connectWith(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade)}, legacyEra,
		&sdk.ClientOptions{ElicitationHandler: accept})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "place_order", Arguments: limitOrder("30000")})
	if err != nil {
		t.Fatal(err)
	}
	if got := resultJSON(t, res); res.IsError || got["status"] != "accepted" {
		t.Fatalf("the approved call answered %v", got)
	}
	var decided *wal.Record
	recs := e.records(t)
	for i := range recs {
		if messages.RecordType(recs[i].Type) == messages.RecordConfirmationDecided {
			decided = &recs[i]
		}
	}
	if decided == nil {
		t.Fatal("no confirmation_decided record")
	}
	if decided.Actor != messages.ActorClientUI || decided.Actor == messages.ActorAgent || decided.Channel != "client_ui stdio" {
		t.Fatalf("the form's decision journaled as actor %q channel %q", decided.Actor, decided.Channel)
	}
	var table bytes.Buffer
	if err := wal.Dump(&table, e.dir, wal.DumpOptions{Format: wal.FormatTable, Types: []uint16{uint16(messages.RecordConfirmationDecided)},
		TypeName: func(t uint16) string { return messages.RecordType(t).String() }}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(table.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "CHANNEL") || !strings.Contains(lines[1], "client_ui:user") ||
		!strings.Contains(lines[1], "client_ui stdio") || strings.Contains(lines[1], messages.ActorAgent) {
		t.Fatalf("table dump:\n%s", table.String())
	}
}
