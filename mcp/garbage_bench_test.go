package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// BenchmarkToolCallGarbage measures what one tool call allocates on the MCP
// path (allocs/op, B/op; the client's side is in the numbers too, the
// same before and after a change to the server): a tool that does
// nothing, and place_order with dry_run (the whole decision, nothing
// sent), each over the SDK's in-memory transport and over the stdio
// transport (the stdin filter, the SDK's decoding, the answer written as
// one line), and over stdio with the client's capabilities in _meta, as
// clients of the 2026-07-28 protocol send them (stdio-meta).
func BenchmarkToolCallGarbage(b *testing.B) {
	e := newDurableEnv(b)
	key := e.addKey(b, "alice")
	e.seed(b, key, "balances", map[string]string{"USDT": "1000000000"}, nil)
	high := decimal.NewFromInt(1_000_000_000)
	maxCount := 100000
	paper := messages.VenuePaper
	if _, err := e.sys.Handle(context.Background(), &messages.SetCeilingRequest{User: "alice", Settings: messages.PolicySettings{
		Profile: profp(messages.ProfileTrade), Allow: stringsp("linear:BTCUSDT"), ConfirmActions: stringsp(), VenueCeiling: &paper,
		ConfirmAboveNotionalUSDT: &high, MaxOrderNotionalUSDT: &high, DailyNotionalCapUSDT: &high,
		MaxOrdersPerMinute: &maxCount, MaxUnconfirmedActionsPerHour: &maxCount,
	}}, messages.ActorCLIAdmin); err != nil {
		b.Fatal(err)
	}
	// The venue's clock moves 1.1 s every 4 calls (timer stopped): its
	// per-key read limits never refuse a decision's reads.
	i := 0
	pace := func(b *testing.B) {
		if i++; i%4 == 0 {
			b.StopTimer()
			e.clock.advance(1100 * time.Millisecond)
			b.StartTimer()
		}
	}
	noop := &tool{name: "test_noop", title: "noop", description: "noop", kind: KindRead, schema: objectSchema(nil, map[string]any{}),
		handle: func(context.Context, *call) (any, error) { return map[string]any{}, nil }}
	o := Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade), extraTools: []*tool{noop}, CallsPerSecond: 1e9, CallBurst: 1e9, Venue: "paper"}
	dryRun := limitBuy("30000")
	dryRun["dry_run"] = true
	calls := []struct {
		name string
		args map[string]any
	}{{"test_noop", map[string]any{}}, {"place_order", dryRun}}

	cs := connect(b, o, "")
	st := newStdioBench(b, o)
	for _, c := range calls {
		params := &sdk.CallToolParams{Name: c.name, Arguments: c.args}
		b.Run(c.name+"/memory", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				pace(b)
				if res, err := cs.CallTool(context.Background(), params); err != nil || res.IsError {
					b.Fatalf("%s: %v %+v", c.name, err, res)
				}
			}
		})
		line, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name+"/stdio", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				pace(b)
				st.call(b, line)
			}
		})
		// The same line with the client's capabilities in _meta, as
		// clients of the 2026-07-28 protocol send them on every request.
		withMeta := &sdk.CallToolParams{Name: c.name, Arguments: c.args, Meta: sdk.Meta{
			sdk.MetaKeyClientCapabilities: map[string]any{"elicitation": map[string]any{"form": map[string]any{}}},
		}}
		metaLine, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": withMeta})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name+"/stdio-meta", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				pace(b)
				st.call(b, metaLine)
			}
		})
	}
}

// stdioBench is a server on StdioTransport over in-process pipes, driven
// by raw lines, one call at a time.
type stdioBench struct {
	in  *io.PipeWriter
	out *bufio.Reader
}

func newStdioBench(b *testing.B, o Options) *stdioBench {
	srv, err := NewServer(o)
	if err != nil {
		b.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- srv.Run(context.Background(), StdioTransport(inR, outW, nil)) }()
	b.Cleanup(func() {
		inW.Close()
		outR.Close()
		<-done
	})
	s := &stdioBench{in: inW, out: bufio.NewReaderSize(outR, 1<<16)}
	s.call(b, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`))
	if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`+"\n"); err != nil {
		b.Fatal(err)
	}
	return s
}

// call writes one request line and reads its answer line, which must
// not be an error.
func (s *stdioBench) call(b *testing.B, line []byte) {
	if _, err := s.in.Write(append(line, '\n')); err != nil {
		b.Fatal(err)
	}
	answer, err := s.out.ReadSlice('\n')
	if err != nil {
		b.Fatal(err)
	}
	if len(answer) < 20 || string(answer[:15]) != `{"jsonrpc":"2.0` {
		b.Fatalf("answer %q", answer)
	}
	var m struct {
		Error  any `json:"error"`
		Result struct {
			IsError bool `json:"isError"`
		} `json:"result"`
	}
	if err := json.Unmarshal(answer, &m); err != nil || m.Error != nil || m.Result.IsError {
		b.Fatalf("answer %s", answer)
	}
}

// BenchmarkToolCallRecordPayload: the tool_call record's payload, encoded
// for every call before it is journaled (BenchmarkEncodeRecord in wal
// frames it).
func BenchmarkToolCallRecordPayload(b *testing.B) {
	rec := &messages.ToolCalled{User: "local", Profile: "trade", Tool: "place_order",
		ArgsSHA256: digest([]byte(`{"symbol":"BTCUSDT"}`)), Admitted: true}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(rec); err != nil {
			b.Fatal(err)
		}
	}
}
