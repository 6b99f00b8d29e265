package etcdtest_test

import (
	"context"
	"net"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/guarded-exchange/guarded-exchange/internal/etcdtest"
)

func client(t testing.TB, endpoint string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// The server serves on loopback, and after Stop its port is closed.
func TestStartServeStop(t *testing.T) {
	srv := etcdtest.Start(t)
	host, _, err := net.SplitHostPort(srv.Endpoint())
	if err != nil || host != "127.0.0.1" {
		t.Fatalf("endpoint %q is not on loopback", srv.Endpoint())
	}
	cli := client(t, srv.Endpoint())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Get(ctx, "k")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v" {
		t.Fatalf("get: %v %v", resp, err)
	}
	srv.Stop()
	srv.Stop() // a second Stop does nothing
	if c, err := net.DialTimeout("tcp", srv.Endpoint(), time.Second); err == nil {
		c.Close()
		t.Fatal("the server still listens after Stop")
	}
}

// A client through the proxy works until the proxy is cut, then fails,
// while a client that goes straight to the server still works.
func TestProxyCut(t *testing.T) {
	srv := etcdtest.Start(t)
	proxy := etcdtest.NewProxy(t, srv.Endpoint())
	via := client(t, proxy.Endpoint())
	direct := client(t, srv.Endpoint())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := via.Put(ctx, "k", "1"); err != nil {
		t.Fatal(err)
	}
	proxy.Cut()
	short, cancel2 := context.WithTimeout(context.Background(), time.Second)
	defer cancel2()
	if _, err := via.Put(short, "k", "2"); err == nil {
		t.Fatal("a put through a cut proxy succeeded")
	}
	resp, err := direct.Get(ctx, "k")
	if err != nil || string(resp.Kvs[0].Value) != "1" {
		t.Fatalf("direct get: %v %v", resp, err)
	}
}

// BenchmarkStart measures how long a test waits for its etcd: start on
// fresh ports and a fresh dir until it serves, then stop.
func BenchmarkStart(b *testing.B) {
	for b.Loop() {
		srv := etcdtest.Start(b)
		srv.Stop()
	}
}
