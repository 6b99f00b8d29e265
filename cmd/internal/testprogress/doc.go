// Command testprogress runs `go test -json` with the arguments it is given
// and prints a short account as the run goes: one line when a package's
// tests start and one when they end, a "still running" line every minute
// naming the packages in progress, and the full output of every test that
// fails. It exits with go test's status, so `make test` still fails when a
// test fails. The Makefile's test target uses it.
package main
