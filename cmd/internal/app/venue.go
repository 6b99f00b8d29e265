package app

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/guarded-exchange/guarded-exchange/cli"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
)

// Bybit REST hosts per venue (docs/bybit.md "Hosts").
var venueHosts = map[string]string{
	"bybit-demo":    "https://api-demo.bybit.com",
	"bybit-testnet": "https://api-testnet.bybit.com",
	"bybit-live":    "https://api.bybit.com",
}

// Bybit private WebSocket URLs per venue (docs/bybit.md "Hosts").
var venuePrivateStreams = map[string]string{
	"bybit-demo":    "wss://stream-demo.bybit.com/v5/private",
	"bybit-testnet": "wss://stream-testnet.bybit.com/v5/private",
	"bybit-live":    "wss://stream.bybit.com/v5/private",
}

// Bybit public WebSocket URLs per venue, without the category
// (docs/bybit.md "Public streams": demo trading reads mainnet's).
var venuePublicStreams = map[string]string{
	"bybit-demo":    "wss://stream.bybit.com/v5/public",
	"bybit-testnet": "wss://stream-testnet.bybit.com/v5/public",
	"bybit-live":    "wss://stream.bybit.com/v5/public",
}

// venueConfig is the venue this process talks to.
type venueConfig struct {
	Name    string // paper, bybit-demo, bybit-testnet, bybit-live
	Paper   bool   // the embedded simulator
	BaseURL string // empty for paper (the in-process simulator has its own)
	// WSPrivateURL is the private stream's URL; empty for paper (the
	// in-process simulator has its own).
	WSPrivateURL string
	// NoMarket: start no venue client or simulator.
	NoMarket bool
	// PaperOnly starts the embedded simulator with its stored accounts
	// but gives the actors no venue: a paper command run without a server.
	PaperOnly bool
}

// withoutMarket keeps the venue's arming level but starts no venue client:
// for processes that only apply commands (init, the in-process CLI).
func (vc venueConfig) withoutMarket() venueConfig {
	vc.NoMarket = true
	return vc
}

// level is the arming level of the venue (docs/policy.md "Venue levels"): paper for the
// simulator, demo for Bybit's demo and testnet, live for Bybit live.
func (vc venueConfig) level() messages.VenueLevel {
	switch vc.Name {
	case "bybit-live":
		return messages.VenueLive
	case "bybit-demo", "bybit-testnet":
		return messages.VenueDemo
	}
	return messages.VenuePaper
}

// resolveVenue applies --venue and the environment overrides of docs/commands.md "Venues".
// Missing or unsafe configuration fails closed.
func resolveVenue(g *cli.Globals, getenv func(string) string) (venueConfig, error) {
	vc := venueConfig{Name: g.Venue}
	allow := envBool(getenv, "GX_TEST_ALLOW_LOOPBACK_BYBIT_URL")
	override := getenv("GX_BYBIT_BASE_URL")
	if override != "" {
		if err := checkLoopbackOverride("GX_BYBIT_BASE_URL", override, allow, "http", "https"); err != nil {
			return vc, err
		}
	}
	// The private stream signs in with the key: an override to anything
	// but a loopback test venue is refused, even on paper, where it is not
	// used.
	ws := getenv("GX_BYBIT_WS_PRIVATE_URL")
	if ws != "" {
		if err := checkLoopbackOverride("GX_BYBIT_WS_PRIVATE_URL", ws, allow, "ws", "wss"); err != nil {
			return vc, err
		}
	}
	switch g.Venue {
	case "paper":
		vc.Paper = true
		return vc, nil
	case "bybit-demo", "bybit-testnet":
	case "bybit-live":
		if getenv("GX_LIVE_ACK") != "live" {
			return vc, fmt.Errorf("the bybit-live venue needs GX_LIVE_ACK=live (and explicit caps); refusing to start")
		}
	default:
		return vc, fmt.Errorf("unknown venue %q", g.Venue)
	}
	vc.BaseURL = venueHosts[g.Venue]
	if override != "" {
		vc.BaseURL = strings.TrimRight(override, "/")
	}
	vc.WSPrivateURL = venuePrivateStreams[g.Venue]
	if ws != "" {
		vc.WSPrivateURL = ws
	}
	return vc, nil
}

// checkLoopbackOverride allows a Bybit URL override (env var name) only for
// tests, and only to a loopback address with one of the schemes.
func checkLoopbackOverride(name, raw string, allowed bool, schemes ...string) error {
	u, err := url.Parse(raw)
	if err != nil || !slices.Contains(schemes, u.Scheme) || u.Host == "" {
		return fmt.Errorf("%s is not a %s URL", name, strings.Join(schemes, "/"))
	}
	if !isLoopbackHost(u.Hostname()) {
		return fmt.Errorf("%s must point at a loopback address; other overrides are refused", name)
	}
	if !allowed {
		return fmt.Errorf("%s is set but GX_TEST_ALLOW_LOOPBACK_BYBIT_URL is not true", name)
	}
	return nil
}

func isLoopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// marketSource serves the public market reads from a venue client, with
// instrument rules from the TTL cache.
type marketSource struct {
	*venue.Client
	cache *venue.InstrumentCache
}

// Instrument implements actors.MarketSource through the cache.
func (m marketSource) Instrument(ctx context.Context, cat messages.Category, symbol string) (*messages.Instrument, error) {
	return m.cache.Get(ctx, cat, symbol)
}
