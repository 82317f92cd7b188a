// Package child starts processes that die with their parent: the private
// redis-server and the SQL worker of `flightns serve`.
//
// Linux's parent-death signal fires when the parent *thread* that forked
// the child exits, not the process: Start forks from a goroutine locked to
// its thread and keeps that thread until the child exits.
//
// It must not: restart, signal or supervise anything; its callers do.
package child

import (
	"os/exec"
	"runtime"
	"syscall"
)

// Start starts cmd in a process group of its own, to be killed with
// SIGKILL when this process dies. The channel closes once the child has
// exited and cmd.Wait has returned.
func Start(cmd *exec.Cmd) (<-chan struct{}, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig, cmd.SysProcAttr.Setpgid = syscall.SIGKILL, true
	done := make(chan struct{})
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			close(done)
			return
		}
		started <- nil
		_ = cmd.Wait()
		close(done)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return done, nil
}
