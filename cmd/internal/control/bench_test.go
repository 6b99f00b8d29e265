package control

import (
	"bufio"
	"io"
	"net"
	"os"
	"testing"
)

// BenchmarkRefusedConnection is the server's cost of one connection from a
// uid that is not allowed (dial, refusal line, close, tally): how fast a
// flood is absorbed without growing the journal.
func BenchmarkRefusedConnection(b *testing.B) {
	s, _ := testServerTB(b, Layout{Self: uint32(os.Getuid()) + 1}, Limits{})
	b.ResetTimer()
	for range b.N {
		c, err := net.Dial("unix", s.Path())
		if err != nil {
			b.Fatal(err)
		}
		if _, err := bufio.NewReader(c).ReadBytes('\n'); err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}

// BenchmarkPolicyShowRoundTrip is one request and answer on an open
// connection of the server's own uid.
func BenchmarkPolicyShowRoundTrip(b *testing.B) {
	s, _ := testServerTB(b, Layout{Self: uint32(os.Getuid())}, Limits{})
	c, err := net.Dial("unix", s.Path())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	line := []byte(`{"v":1,"type":"policy.show","body":{"user":"local"}}` + "\n")
	b.ResetTimer()
	for range b.N {
		if _, err := c.Write(line); err != nil {
			b.Fatal(err)
		}
		if _, err := r.ReadBytes('\n'); err != nil && err != io.EOF {
			b.Fatal(err)
		}
	}
}
