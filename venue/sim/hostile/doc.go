// Package hostile is a hostile exchange stream for tests: a WebSocket
// proxy on loopback that stands between a client of Bybit's private stream
// and the simulator. It relays both ways, and the test may forge pushes
// (Inject), flood the client (Flood), rewrite or drop what the simulator
// pushes (SetFilter) and cut the client's connection at any moment (Cut)
// or on a period (Flap). It never dials anything but the upstream URL it
// was given, which tests point at the simulator on loopback.
package hostile
