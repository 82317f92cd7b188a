package sqlworker

import (
	"errors"
	"log/slog"
	"os"
	"time"
)

// EnsureDefaults fills what is unset, the engine's settings too.
func (c *ServeConfig) EnsureDefaults() {
	if c.StopGrace <= 0 {
		c.StopGrace = 5 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	c.Engine.EnsureDefaults()
}

// Validate refuses a configuration Serve cannot run.
func (c *ServeConfig) Validate() error {
	if c.Objects == nil {
		return errors.New("sqlworker: ServeConfig.Objects is required")
	}
	return c.Engine.Validate()
}

// EnsureDefaults fills what is unset.
func (c *SupervisorConfig) EnsureDefaults() {
	if c.StartTimeout <= 0 {
		c.StartTimeout = 10 * time.Minute
	}
	if c.Stderr == nil {
		c.Stderr = os.Stderr
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Validate refuses a configuration StartSupervisor cannot run.
func (c *SupervisorConfig) Validate() error {
	if len(c.Command) == 0 || c.Dir == "" {
		return errors.New("sqlworker: SupervisorConfig.Command and Dir are required")
	}
	return nil
}
