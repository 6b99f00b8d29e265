package agent

import (
	"context"
	"io"
	"strings"
	"testing"
)

// An --mcp-url with a password never shows it: the address is quoted
// redacted when the connection fails.
func TestMCPURLPasswordNeverShown(t *testing.T) {
	const password = "pw-planted-0815"
	o := Options{Provider: "fake", Model: "refuse", MCPURL: "http://user:" + password + "@127.0.0.1:1/mcp",
		Getenv: func(k string) string {
			if k == EnvToken {
				return "token"
			}
			return ""
		}}
	var errOut strings.Builder
	err := Run(context.Background(), o, Streams{In: strings.NewReader(""), Out: io.Discard, Err: &errOut})
	if err == nil {
		t.Fatal("connected to nothing")
	}
	if strings.Contains(err.Error()+errOut.String(), password) {
		t.Fatalf("the password is shown: %v\n%s", err, errOut.String())
	}
}
