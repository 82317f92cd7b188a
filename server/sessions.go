package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/flightns/flightns/internal/auth"
	"github.com/flightns/flightns/internal/redisstate"
	"github.com/flightns/flightns/objstore"
)

// sessionKeyPath is where a catalog keeps the key that signs its session
// tokens: inside __manifest, where no table may live (so no credential
// vended for a table reaches it), written create-only once, so every
// server of the catalog signs and checks with the same key.
const sessionKeyPath = "__manifest/_auth/session.key"

// sessionKey reads the catalog's session key, creating it on first use.
func sessionKey(ctx context.Context, objs *objstore.Store) ([]byte, error) {
	for range 3 {
		k, err := objs.Get(ctx, sessionKeyPath)
		if err == nil {
			if len(k) < auth.SessionKeyBytes {
				return nil, fmt.Errorf("the session key %s holds %d bytes, fewer than %d: delete it to make a new one (every session ends)", sessionKeyPath, len(k), auth.SessionKeyBytes)
			}
			return k, nil
		}
		if !errors.Is(err, objstore.ErrNotFound) {
			return nil, fmt.Errorf("reading the session key: %w", err)
		}
		err = objs.PutIfAbsent(ctx, sessionKeyPath, auth.NewSessionKey())
		if err != nil && !errors.Is(err, objstore.ErrAlreadyExists) {
			return nil, fmt.Errorf("writing the session key: %w", err)
		}
	}
	return nil, errors.New("the session key keeps vanishing")
}

// RevokeSessions ends every session of principal name issued until now,
// on every server of the catalog within seconds (auth.Revocations).
func (d *Deps) RevokeSessions(ctx context.Context, name string) error {
	c := redisstate.New(d.Redis, d.Catalog, 0)
	defer c.Close()
	c.ConfirmOn(redisstate.NewReplicas(d.Redis, c.Keys, nil, 0))
	return c.RevokeSessions(ctx, name, time.Now())
}
