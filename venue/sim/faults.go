package sim

import (
	"fmt"
	"strings"
	"time"
)

// Fault kinds accepted by POST /sim/faults (docs/simulator.md "Test endpoints").
const (
	faultDelay        = "delay"         // REST: hold the answer delay_ms after applying the request
	faultDropResponse = "drop_response" // REST: apply the request, then close the connection without an answer
	faultHTTP5xx      = "http_5xx"      // REST: answer HTTP 502 with an HTML body; applied only with "apply": true
	faultRateLimit    = "rate_limit"    // REST: answer 10006 without applying, reset header now+1 s
	faultWSDisconnect = "ws_disconnect" // WS: drop the connection (no close frame) instead of sending a message
	faultWSDelay      = "ws_delay"      // WS: hold each outgoing message delay_ms
)

// A fault is one injected failure. It watches the requests (REST kinds) or
// outgoing stream messages (WS kinds) whose path matches, and fires on every
// Every-th one, Count times in all (0 = no end).
type fault struct {
	ID      int    `json:"id"`
	Kind    string `json:"kind"`
	Path    string `json:"path"`
	Every   int    `json:"every"`
	Count   int    `json:"count"`
	DelayMs int    `json:"delay_ms"`
	Apply   bool   `json:"apply"`
	Seen    int    `json:"seen"`
	Fired   int    `json:"fired"`
}

func isStreamPath(p string) bool {
	return p == pathWSPrivate || p == pathWSPublicLinear || p == pathWSPublicSpot
}

func (f *fault) isWS() bool { return f.Kind == faultWSDisconnect || f.Kind == faultWSDelay }

// matches reports whether the fault watches path. An empty path matches
// every path of its family; a trailing "*" matches a prefix.
func (f *fault) matches(path string) bool {
	switch {
	case f.Path == "" || f.Path == "*":
		return true
	case strings.HasSuffix(f.Path, "*"):
		return strings.HasPrefix(path, strings.TrimSuffix(f.Path, "*"))
	default:
		return f.Path == path
	}
}

// validate checks a fault as posted and fills defaults.
func (f *fault) validate() error {
	switch f.Kind {
	case faultDelay, faultWSDelay:
		if f.DelayMs <= 0 {
			return fmt.Errorf("%s needs delay_ms > 0", f.Kind)
		}
	case faultDropResponse, faultHTTP5xx, faultRateLimit, faultWSDisconnect:
	default:
		return fmt.Errorf("unknown kind %q (want delay, drop_response, http_5xx, rate_limit, ws_disconnect or ws_delay)", f.Kind)
	}
	if f.Path != "" && f.Path != "*" && !strings.HasPrefix(f.Path, "/v5/") {
		return fmt.Errorf("path %q must start with /v5/", f.Path)
	}
	if f.Path != "" && f.Path != "*" && !strings.HasSuffix(f.Path, "*") && f.isWS() != isStreamPath(f.Path) {
		if f.isWS() {
			return fmt.Errorf("%s applies to stream paths (%s, %s, %s), not %q", f.Kind, pathWSPrivate, pathWSPublicLinear, pathWSPublicSpot, f.Path)
		}
		return fmt.Errorf("%s applies to REST paths; for the stream %q use ws_delay or ws_disconnect", f.Kind, f.Path)
	}
	if f.Every < 0 || f.Count < 0 || f.DelayMs < 0 {
		return fmt.Errorf("every, count and delay_ms must not be negative")
	}
	if f.DelayMs > 10*60*1000 {
		return fmt.Errorf("delay_ms must be at most 600000")
	}
	if f.Every == 0 {
		f.Every = 1
	}
	f.Seen, f.Fired = 0, 0
	return nil
}

// faultPlan is what the faults that fire on one request or message ask
// for. Delays add up; of the terminal kinds the first registered wins.
type faultPlan struct {
	delay        time.Duration
	rateLimit    bool
	http5xx      bool
	apply        bool // http_5xx after applying the request
	drop         bool
	wsDisconnect bool
}

// faultSet is the list of registered faults. Guarded by Sim.mu.
type faultSet struct {
	list []*fault
	seq  int
}

func (fs *faultSet) addLocked(f *fault) *fault {
	fs.seq++
	f.ID = fs.seq
	fs.list = append(fs.list, f)
	return f
}

func (fs *faultSet) clearLocked() { fs.list = nil }

func (fs *faultSet) snapshotLocked() []fault {
	out := make([]fault, 0, len(fs.list))
	for _, f := range fs.list {
		out = append(out, *f)
	}
	return out
}

// planLocked counts one request (ws=false) or outgoing stream message
// (ws=true) on path against every matching fault and returns what fires.
func (fs *faultSet) planLocked(path string, ws bool) faultPlan {
	var p faultPlan
	terminal := false
	for _, f := range fs.list {
		if f.isWS() != ws || !f.matches(path) {
			continue
		}
		f.Seen++
		if f.Seen%f.Every != 0 || (f.Count > 0 && f.Fired >= f.Count) {
			continue
		}
		f.Fired++
		switch f.Kind {
		case faultDelay, faultWSDelay:
			p.delay += time.Duration(f.DelayMs) * time.Millisecond
		case faultWSDisconnect:
			p.wsDisconnect = true
		default:
			if terminal {
				continue
			}
			terminal = true
			switch f.Kind {
			case faultRateLimit:
				p.rateLimit = true
			case faultHTTP5xx:
				p.http5xx, p.apply = true, f.Apply
			case faultDropResponse:
				p.drop = true
			}
		}
	}
	return p
}
