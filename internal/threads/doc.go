// Package threads reaches every thread of a Linux process, including the
// ones it starts while they are being reached, and keeps a process's
// threads to a set of CPUs, or under SCHED_IDLE, with it.
//
// A thread the Go runtime (or any runtime) starts meanwhile inherits what
// the thread that made it had at that moment, so one pass over
// /proc/<pid>/task is not enough: Each makes passes until one finds no
// thread it had not seen. The SQL worker uses it to bound itself
// (internal/sqlworker), the benchmarks to give a server and its clients
// CPUs of their own and to run the change feed's subscribers after
// everything else.
package threads
