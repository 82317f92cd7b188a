// Package child starts processes that die with their parent: the private
// redis-server and the SQL worker of `flightns serve`.
//
// Linux's parent-death signal fires when the parent *thread* that forked
// the child exits, not the process: Start forks from a goroutine locked to
// its thread and keeps that thread until the child exits.
//
// It must not: restart, signal or supervise anything; its callers do.
package child
