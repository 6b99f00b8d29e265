package main

import (
	"bufio"
	"bytes"
	"io"
	"net/http/httptest"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/guarded-exchange/guarded-exchange/venue/sim"
)

// BenchmarkServeSpawnToToolsListVenue measures the built binary's `serve`
// from process start to the tools/list answer over a real stdio pipe, on
// the bybit-demo venue (a loopback simulator standing in for Bybit) with a
// stored key, so that start-up has a key re-check to make over the
// network:
//
//   - reachable: the venue answers;
//   - refused: nothing listens on the venue's port any more (connections
//     are refused, the re-check retries);
//   - hanging: the venue accepts connections and never answers.
//
// Start-up must not wait on any of them (target: the same ≤ 25 ms as with
// the venue reachable). It reports the median and p99 in ms.
func BenchmarkServeSpawnToToolsListVenue(b *testing.B) {
	for _, mode := range []string{"reachable", "refused", "hanging"} {
		b.Run(mode, func(b *testing.B) {
			in := newInstall(b)
			s := sim.New(sim.Config{Seed: 5})
			hv := &hangingVenue{}
			srv := httptest.NewServer(hv.wrap(s.Handler()))
			defer srv.Close()
			venueEnv := []string{"GX_VENUE=bybit-demo", "GX_BYBIT_BASE_URL=" + srv.URL, "GX_TEST_ALLOW_LOOPBACK_BYBIT_URL=true", "GX_LOG_LEVEL=warn"}
			key := s.DefaultKey()
			if r := run(b, in.env(venueEnv...), key.APIKey+"\n"+key.APISecret+"\n", "keys", "add"); r.code != 0 {
				b.Fatalf("keys add on bybit-demo: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			switch mode {
			case "refused":
				srv.Close()
			case "hanging":
				hv.hang.Store(true)
			}
			var ds []time.Duration
			for b.Loop() {
				ds = append(ds, spawnToToolsList(b, in.env(venueEnv...)))
			}
			if mode == "hanging" && hv.started.Load() == 0 {
				b.Fatal("no start-up key check reached the hanging venue: the benchmark did not measure what it says")
			}
			b.ReportMetric(float64(median(ds).Microseconds())/1000, "median-ms")
			b.ReportMetric(float64(percentile(ds, 0.99).Microseconds())/1000, "p99-ms")
		})
	}
}

// spawnToToolsList starts `serve` with env, sends initialize and
// tools/list, and returns the time from the start to the tools/list
// answer; then it closes stdin and waits for the process.
func spawnToToolsList(b *testing.B, env []string) time.Duration {
	cmd := exec.Command(bin, "serve")
	cmd.Env = env
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = io.Discard
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"0"}}}`+"\n"+
		`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`+"\n"+
		`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`+"\n")
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	answered := false
	for sc.Scan() {
		if bytes.Contains(sc.Bytes(), []byte(`"id":2`)) {
			answered = bytes.Contains(sc.Bytes(), []byte(`"tools"`))
			break
		}
	}
	d := time.Since(start)
	stdin.Close()
	io.Copy(io.Discard, stdout)
	cmd.Wait()
	if !answered {
		b.Fatal("serve did not answer tools/list")
	}
	return d
}

func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}
