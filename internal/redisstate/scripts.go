package redisstate

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// The Lua scripts, one file each under scripts/, headed by their KEYS,
// ARGV, guarantee and replies; each is called through one typed method of
// Catalog (claim.go, versions.go, objects.go, sessions.go,
// idempotency.go). Every script is built with the prelude
// (prelude.lua): catalog_epoch (the epoch check that answers NOEPOCH when
// Redis lost the catalog's state), next_seq (the catalog sequence) and
// append_log (XADD with the trim to the configured length), so that the
// state machine's shared steps are written once.
var (
	//go:embed prelude.lua
	prelude string

	//go:embed scripts/claim.lua
	claimLua string
	//go:embed scripts/get.lua
	getLua string
	//go:embed scripts/list.lua
	listLua string
	//go:embed scripts/latest.lua
	latestLua string
	//go:embed scripts/flip.lua
	flipLua string
	//go:embed scripts/seed.lua
	seedLua string
	//go:embed scripts/supersede.lua
	supersedeLua string
	//go:embed scripts/retract.lua
	retractLua string
	//go:embed scripts/confirm.lua
	confirmLua string
	//go:embed scripts/delete_versions.lua
	deleteVersionsLua string
	//go:embed scripts/drop.lua
	dropLua string
	//go:embed scripts/open_epoch.lua
	openEpochLua string
	//go:embed scripts/fork.lua
	forkLua string
	//go:embed scripts/rebuild_index.lua
	rebuildIndexLua string
	//go:embed scripts/clear_kids.lua
	clearKidsLua string
	//go:embed scripts/txn_apply.lua
	txnApplyLua string
	//go:embed scripts/append.lua
	appendLua string
	//go:embed scripts/lease.lua
	leaseLua string
	//go:embed scripts/revoke.lua
	revokeLua string
	//go:embed scripts/reserve_locs.lua
	reserveLocsLua string
	//go:embed scripts/release_loc.lua
	releaseLocLua string
	//go:embed scripts/close_epoch.lua
	closeEpochLua string
	//go:embed scripts/idem_finish.lua
	idemFinishLua string
	//go:embed scripts/idem_release.lua
	idemReleaseLua string
	//go:embed scripts/intent_drop.lua
	intentDropLua string
)

func script(body string) *redis.Script { return redis.NewScript(prelude + body) }

// The scripts run by SHA; go-redis falls back to EVAL (which loads the
// script) on NOSCRIPT, so they survive a Redis restart or failover.
var (
	claimS          = script(claimLua)
	getS            = script(getLua)
	listS           = script(listLua)
	latestS         = script(latestLua)
	flipS           = script(flipLua)
	seedS           = script(seedLua)
	supersedeS      = script(supersedeLua)
	retractS        = script(retractLua)
	confirmS        = script(confirmLua)
	deleteVersionsS = script(deleteVersionsLua)
	dropS           = script(dropLua)
	openEpochS      = script(openEpochLua)
	forkS           = script(forkLua)
	rebuildIndexS   = script(rebuildIndexLua)
	clearKidsS      = script(clearKidsLua)
	txnApplyS       = script(txnApplyLua)
	appendS         = script(appendLua)
	leaseS          = script(leaseLua)
	revokeS         = script(revokeLua)
	reserveLocsS    = script(reserveLocsLua)
	releaseLocS     = script(releaseLocLua)
	closeEpochS     = script(closeEpochLua)
	idemFinishS     = script(idemFinishLua)
	idemReleaseS    = script(idemReleaseLua)
	intentDropS     = script(intentDropLua)

	allScripts = []*redis.Script{claimS, getS, listS, latestS, flipS, seedS, supersedeS, retractS, confirmS, deleteVersionsS, dropS,
		openEpochS, forkS, rebuildIndexS, clearKidsS, txnApplyS, appendS, leaseS, revokeS, reserveLocsS, releaseLocS,
		closeEpochS, idemFinishS, idemReleaseS, intentDropS}
)

// Load loads every script (on every master of a cluster) so that the first
// calls run by SHA.
func Load(ctx context.Context, c redis.Scripter) error {
	for _, sc := range allScripts {
		if err := sc.Load(ctx, c).Err(); err != nil {
			return fmt.Errorf("loading Lua script: %w", err)
		}
	}
	return nil
}
