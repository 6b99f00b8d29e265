// Package rig builds, for tests only, the parts of the stack under the
// actor system: the simulator on loopback HTTP (and its private WebSocket
// stream), the venue clients and market a paper server gives its actors,
// a master key, and a journal in a directory, opened with the caller's
// replay. It stops short of the actor system, so it imports neither
// actors nor mcp: the actors package's own tests (internal tests, which
// cannot import a package that imports actors) build their System on it
// with one helper, and the test kit (internal/testkit) builds its Stack on
// it for every other package's tests (docs/decisions.md D142).
//
// One Options describes both layers; its type parameter is the actor
// configuration the layer above changes last. No non-test package of the
// product may import it (cmd/imports_test.go).
package rig
