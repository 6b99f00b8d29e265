package mcp

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzArgs feeds arbitrary argument bytes through the readers every tool
// uses: they never panic, and a refusal is invalid_params naming a field
// without echoing any value it was given.
func FuzzArgs(f *testing.F) {
	for _, seed := range []string{
		`{"symbol":"BTCUSDT","category":"linear","limit":5}`,
		`{"symbol":42,"category":"spot","interval":"1","start_time":"2026-01-02T00:00:00Z"}`,
		`{"limit":1e9,"cursor":"x.y","extra":true}`,
		`[1,2,3]`, `null`, ``, `{"\u0000":1}`, `{"symbol":"` + strings.Repeat("A", 40) + `"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		a := parseArgs(raw)
		a.symbol()
		a.category()
		a.enum("interval", false, "1", "D")
		a.integer("limit", 20, 1, 50)
		a.timestamp("start_time")
		a.str("cursor", false, nil, "")
		err := a.done()
		if err == nil {
			return
		}
		if err.Code != "invalid_params" {
			t.Fatalf("code %s", err.Code)
		}
		field, _ := err.Details["field"].(string)
		if field == "" {
			t.Fatal("no field named")
		}
		reason, _ := err.Details["reason"].(string)
		var fields map[string]json.RawMessage
		if json.Unmarshal(raw, &fields) == nil {
			for k, v := range fields {
				val := strings.Trim(string(v), `"`)
				// A value that happens to be a word of our own reason text
				// is not an echo.
				if len(val) < 6 || strings.Contains(reason, val) || strings.Contains("invalid arguments", val) {
					continue
				}
				if strings.Contains(err.Message, val) || strings.Contains(field, val) {
					t.Fatalf("the value of %q was echoed: %q", k, err.Message)
				}
			}
		}
	})
}
