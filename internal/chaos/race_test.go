//go:build race

package chaos

// raceEnabled makes the host tests build the server with -race too, so the
// build reuses the race-instrumented packages `go test -race` compiled.
const raceEnabled = true
