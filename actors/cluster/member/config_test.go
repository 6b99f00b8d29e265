package member_test

import (
	"testing"

	"github.com/guarded-exchange/guarded-exchange/actors/cluster/member"
)

func TestConfigCheck(t *testing.T) {
	ok := member.Config{Name: "c", Etcd: []string{"127.0.0.1:2379"}, Advertise: "127.0.0.1:7001"}
	if err := ok.Check(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []member.Config{
		{Etcd: ok.Etcd, Advertise: ok.Advertise},
		{Name: "c", Advertise: ok.Advertise},
		{Name: "c", Etcd: ok.Etcd, Advertise: "127.0.0.1"},
		{Name: "c", Etcd: ok.Etcd, Advertise: ":7001"},
		{Name: "c", Etcd: ok.Etcd, Advertise: "127.0.0.1:0"},
		{Name: "c", Etcd: ok.Etcd, Advertise: "127.0.0.1:70000"},
	} {
		if bad.Check() == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
