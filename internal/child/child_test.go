package child

import (
	"os/exec"
	"testing"
	"time"
)

func TestStartReportsTheExitAndRefusesWhatCannotStart(t *testing.T) {
	cmd := exec.Command("sleep", "0.1")
	done, err := Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the child's exit was not reported")
	}
	if !cmd.ProcessState.Exited() || cmd.ProcessState.ExitCode() != 0 {
		t.Fatalf("state %v", cmd.ProcessState)
	}
	if cmd.SysProcAttr == nil || cmd.SysProcAttr.Pdeathsig == 0 || !cmd.SysProcAttr.Setpgid {
		t.Fatalf("the child is not tied to its parent: %+v", cmd.SysProcAttr)
	}
	if _, err := Start(exec.Command("/nonexistent/flightns-no-such-binary")); err == nil {
		t.Fatal("a missing binary started")
	}
}
