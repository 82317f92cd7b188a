package commitlog

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

//go:embed prelude.lua
var prelude string

// Script is a catalog script: the prelude (prelude.lua: the epoch check
// and the log append, each written once) followed by body. Every Lua
// script of the catalog is built with it.
func Script(body string) *redis.Script { return redis.NewScript(prelude + body) }
