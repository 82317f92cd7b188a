package bench

import (
	"context"
)

// objstoreScenario measures create-only puts of 1 KiB objects to fresh keys
// on every backend and concurrency: the object-store ceiling under every
// commit (a commit is at least one create-only write). The commit
// scenarios reuse these measurements for their ratios.
func objstoreScenario() Scenario {
	return Scenario{
		Name:        "objstore-put",
		Description: "create-only 1 KiB puts to fresh keys on mem://, file:// and s3:// (a MinIO server of its own)",
		Run: func(ctx context.Context, cfg Config, rep *Report) error {
			for _, b := range backends {
				if !cfg.wants(b) {
					continue
				}
				for _, clients := range cfg.Clients {
					if _, err := cfg.run.ceil.put(ctx, cfg, rep, b, clients); err != nil {
						return err
					}
				}
			}
			return nil
		},
		Steps: func(cfg Config) int { return len(cfg.Clients) * cfg.backendCount() },
	}
}
