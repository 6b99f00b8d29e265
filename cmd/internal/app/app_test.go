package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/guarded-exchange/guarded-exchange/cli"
)

func TestResolveVenue(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	cases := []struct {
		name    string
		venue   string
		getenv  func(string) string
		wantURL string
		wantErr string
	}{
		{"paper", "paper", env(), "", ""},
		{"demo host", "bybit-demo", env(), "https://api-demo.bybit.com", ""},
		{"testnet host", "bybit-testnet", env(), "https://api-testnet.bybit.com", ""},
		{"live needs ack", "bybit-live", env(), "", "GX_LIVE_ACK"},
		{"live with ack", "bybit-live", env("GX_LIVE_ACK", "live"), "https://api.bybit.com", ""},
		{"loopback override", "bybit-demo", env("GX_BYBIT_BASE_URL", "http://127.0.0.1:9/", "GX_TEST_ALLOW_LOOPBACK_BYBIT_URL", "true"), "http://127.0.0.1:9", ""},
		{"ipv6 loopback", "bybit-demo", env("GX_BYBIT_BASE_URL", "http://[::1]:9", "GX_TEST_ALLOW_LOOPBACK_BYBIT_URL", "true"), "http://[::1]:9", ""},
		{"override without switch", "bybit-demo", env("GX_BYBIT_BASE_URL", "http://127.0.0.1:9"), "", "GX_TEST_ALLOW_LOOPBACK_BYBIT_URL"},
		{"private address", "bybit-demo", env("GX_BYBIT_BASE_URL", "http://192.168.1.5", "GX_TEST_ALLOW_LOOPBACK_BYBIT_URL", "true"), "", "loopback"},
		{"public host", "bybit-demo", env("GX_BYBIT_BASE_URL", "https://api.bybit.com.evil.example", "GX_TEST_ALLOW_LOOPBACK_BYBIT_URL", "true"), "", "loopback"},
		{"not a URL", "bybit-demo", env("GX_BYBIT_BASE_URL", "ftp://127.0.0.1", "GX_TEST_ALLOW_LOOPBACK_BYBIT_URL", "true"), "", "http/https"},
		{"ws override loopback", "bybit-demo", env("GX_BYBIT_WS_PRIVATE_URL", "ws://127.0.0.1:9/v5/private", "GX_TEST_ALLOW_LOOPBACK_BYBIT_URL", "true"), "https://api-demo.bybit.com", ""},
		{"ws override elsewhere", "bybit-demo", env("GX_BYBIT_WS_PRIVATE_URL", "wss://stream.example.org/v5/private", "GX_TEST_ALLOW_LOOPBACK_BYBIT_URL", "true"), "", "GX_BYBIT_WS_PRIVATE_URL must point at a loopback"},
		{"ws override without switch", "bybit-demo", env("GX_BYBIT_WS_PRIVATE_URL", "ws://127.0.0.1:9"), "", "GX_TEST_ALLOW_LOOPBACK_BYBIT_URL"},
		{"override refused on paper too", "paper", env("GX_BYBIT_BASE_URL", "http://10.0.0.1", "GX_TEST_ALLOW_LOOPBACK_BYBIT_URL", "true"), "", "loopback"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vc, err := resolveVenue(&cli.Globals{Venue: c.venue}, c.getenv)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err %v, want one naming %s", err, c.wantErr)
				}
				return
			}
			if err != nil || vc.BaseURL != c.wantURL {
				t.Fatalf("got %q, %v", vc.BaseURL, err)
			}
		})
	}
}

func TestMasterKeyMustBeOutsideHome(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	os.MkdirAll(home, 0o700)
	if _, err := resolvePaths(&cli.Globals{Home: home, MasterKeyFile: filepath.Join(home, "sub", "master.key")}); err == nil {
		t.Fatal("a key inside the home was accepted")
	}
	// Through a symlink that points into the home.
	link := filepath.Join(root, "link")
	os.Symlink(home, link)
	if _, err := resolvePaths(&cli.Globals{Home: home, MasterKeyFile: filepath.Join(link, "master.key")}); err == nil {
		t.Fatal("a key reached through a symlink into the home was accepted")
	}
	if _, err := resolvePaths(&cli.Globals{Home: home, MasterKeyFile: filepath.Join(root, "homesick", "master.key")}); err != nil {
		t.Fatalf("a sibling directory with a shared prefix was refused: %v", err)
	}
}

func TestLoadEnvFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "gx.env")
	os.WriteFile(f, []byte("# comment\nGX_TEST_A=one\nexport GX_TEST_B=\"two words\"\nGX_TEST_C='three'\n\nGX_TEST_SET=from-file\n"), 0o600)
	t.Setenv("GX_TEST_SET", "from-env")
	for _, k := range []string{"GX_TEST_A", "GX_TEST_B", "GX_TEST_C"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	if err := LoadEnvFile(f); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"GX_TEST_A": "one", "GX_TEST_B": "two words", "GX_TEST_C": "three", "GX_TEST_SET": "from-env"} {
		if got := os.Getenv(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	bad := filepath.Join(t.TempDir(), "bad.env")
	os.WriteFile(bad, []byte("GX_SECRET_LOOKING_VALUE hunter2\n"), 0o600)
	err := LoadEnvFile(bad)
	if err == nil || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("bad line: %v", err)
	}
	if got := EnvFileFromArgs([]string{"serve", "--env-file=/x"}, os.Getenv); got != "/x" {
		t.Fatalf("--env-file=: %q", got)
	}
	if got := EnvFileFromArgs([]string{"--env-file", "/y", "serve"}, os.Getenv); got != "/y" {
		t.Fatalf("--env-file: %q", got)
	}
	if got := EnvFileFromArgs([]string{"serve"}, func(string) string { return "" }); got != "" {
		t.Fatalf("no env file: %q", got)
	}
}

// Each Bybit venue streams private updates from its own private WebSocket
// URL (docs/bybit.md "Hosts"), unless a loopback test override names another; the
// paper venue uses its in-process simulator's.
func TestResolveVenuePrivateStream(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	for venue, want := range map[string]string{
		"paper":         "",
		"bybit-demo":    "wss://stream-demo.bybit.com/v5/private",
		"bybit-testnet": "wss://stream-testnet.bybit.com/v5/private",
		"bybit-live":    "wss://stream.bybit.com/v5/private",
	} {
		vc, err := resolveVenue(&cli.Globals{Venue: venue}, env("GX_LIVE_ACK", "live"))
		if err != nil || vc.WSPrivateURL != want {
			t.Fatalf("%s: %q %v", venue, vc.WSPrivateURL, err)
		}
	}
	vc, err := resolveVenue(&cli.Globals{Venue: "bybit-demo"}, env("GX_BYBIT_WS_PRIVATE_URL", "ws://127.0.0.1:9/v5/private", "GX_TEST_ALLOW_LOOPBACK_BYBIT_URL", "true"))
	if err != nil || vc.WSPrivateURL != "ws://127.0.0.1:9/v5/private" {
		t.Fatalf("override: %q %v", vc.WSPrivateURL, err)
	}
}
