//go:build race

package main

// raceEnabled makes the process tests build the server with -race too, so the
// build reuses the race-instrumented packages `go test -race` already compiled.
const raceEnabled = true
