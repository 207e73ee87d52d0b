// Package inntest runs private instances of INN (the InterNetNews server,
// Debian package inn2) on loopback for tests and benchmarks: innd as a feed
// peer, nnrpd as a reader server, and innfeed or innxmit as feeders.
//
// Each instance lives in its own directory (configuration, history, spool,
// logs) and listens on a free high port of 127.0.0.1, so instances run in
// parallel and never touch the system's INN or port 119. INN's daemons run
// as the user news, so the harness needs root (or to run as news itself).
//
// Start skips the test with a clear message when INN is not installed; a
// test that must not be skipped calls Available first and fails instead.
package inntest
