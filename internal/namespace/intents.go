package namespace

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/commitlog"
	"github.com/flightns/flightns/internal/redisstate"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/objstore"
	"github.com/flightns/flightns/redisclaim"
)

// The events of changes made in object storage rather than by a script
// of the commit log — a tag, a branch's ref, a generation of the grants,
// a restore's version — are exact through intents: before the change,
// an intent naming its event and how storage shows it made (an object
// written with these bytes, or gone) is recorded in Redis
// (redisstate.Keys.Intents); once the change is made, one script appends
// the event to the commit log and deletes the intent (guarded on it), so
// the event is appended at most once; a change refused (the object was
// taken, or not there) drops the intent, with no event. A crash, or a
// failure to reach Redis, between the two leaves the intent: the
// maintainer resolves every intent older than IntentGrace by looking at
// storage — the change made gets its event, one not made none.

// DefaultIntentGrace is how old an intent must be before a process other
// than its maker resolves it (Config.IntentGrace): far longer than a
// change's storage request may still land after its maker gave up.
const DefaultIntentGrace = 2 * time.Minute

// Step is a seam of the commit protocol (redisclaim.Step), here those of
// a change made in storage.
type Step = redisclaim.Step

// The seams of a change made in storage, for fault injection
// (redisclaim.Config.Step, which every Service step goes through): an
// error there stops the change as a crash would, intent and all.
const (
	// StepIntended: the intent is recorded; the change is not made.
	StepIntended Step = "intended"
	// StepChangedInStorage: the change is made; its event is not
	// appended.
	StepChangedInStorage Step = "changed-in-storage"
)

// intent is what Redis holds of a change about to be made in storage.
type intent struct {
	Event json.RawMessage `json:"event"` // stamped with its principal and time
	// Key is the object the change writes (SHA256: the hex of its bytes)
	// or deletes (SHA256 empty).
	Key    string `json:"key"`
	SHA256 string `json:"sha256,omitempty"`
	// Chain and Version name the table version a change commits (a
	// restore): it is resolved, as any reader would, before Key is read.
	Chain   string    `json:"chain,omitempty"`
	Version uint64    `json:"version,omitempty"`
	At      time.Time `json:"at"`
}

// pending is a recorded intent whose change is being made.
type pending struct {
	s   *Service
	id  string
	doc []byte
	ev  json.RawMessage
	at  api.Event // the principal and time the event is stamped with
}

// outcome replaces the event to append when the change is made by ev,
// stamped as the intent's was: what the change turned out to do (a
// cleanup's counts), where the intent holds what it was to do.
func (p *pending) outcome(ev api.Event) {
	ev.Principal, ev.Time = p.at.Principal, p.at.Time
	if b, err := json.Marshal(ev); err == nil {
		p.ev = b
	}
}

// intend records, for the caller of ctx, the intent of a change that
// writes data to the object key (nil data: deletes it), whose event is
// ev; chain and version name the table version it commits, if it does.
// The caller makes the change, then settles the intent.
func (s *Service) intend(ctx context.Context, ev api.Event, key string, data []byte, chain string, version uint64) (*pending, error) {
	c := s.newIndexChange(ctx)
	ev.Principal, ev.Time = c.principal, c.at
	evj, err := json.Marshal(ev)
	if err != nil {
		return nil, err
	}
	in := intent{Event: evj, Key: key, Chain: chain, Version: version, At: c.at}
	if data != nil {
		sum := sha256.Sum256(data)
		in.SHA256 = hex.EncodeToString(sum[:])
	}
	doc, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	p := &pending{s: s, id: uuid.NewString(), doc: doc, ev: evj, at: api.Event{Principal: ev.Principal, Time: ev.Time}}
	if err := s.rs.BeginIntent(ctx, p.id, doc); err != nil {
		return nil, err
	}
	if err := s.step(ctx, StepIntended); err != nil {
		return nil, err
	}
	return p, nil
}

// inStorage makes change, which writes data to the object key (nil data:
// deletes it), with ev as its event exactly when it is made (intend,
// settle); notMade says which of its errors mean it was not made.
func (s *Service) inStorage(ctx context.Context, ev api.Event, key string, data []byte, notMade func(error) bool, change func() error) error {
	p, err := s.intend(ctx, ev, key, data, "", 0)
	if err != nil {
		return err
	}
	return p.settle(ctx, change(), notMade)
}

// isAlreadyExists and isNotFound are the refusals of a create-only write
// and of a deletion: the change was not made.
func isAlreadyExists(err error) bool { return errors.Is(err, objstore.ErrAlreadyExists) }
func isNotFound(err error) bool      { return errors.Is(err, objstore.ErrNotFound) }

// settle ends the intent once its change returned err: nil appends the
// event; an error notMade says the change was not made (refused) drops
// the intent; any other error leaves it for the maintainer, who reads
// storage (a timeout may have made the change). It returns err.
func (p *pending) settle(ctx context.Context, err error, notMade func(error) bool) error {
	ctx = context.WithoutCancel(ctx)
	switch {
	case err == nil:
		if err := p.s.step(ctx, StepChangedInStorage); err != nil {
			return err
		}
		if err := p.s.finishIntent(ctx, p.id, p.doc, p.ev); err != nil && !errors.Is(err, errIntentGone) {
			p.s.log.Error("namespace: a change made in storage has its event still to record (the maintainer will)", "intent", p.id, "err", err)
		}
	case notMade != nil && notMade(err):
		if _, derr := p.s.rs.DropIntent(ctx, p.id, p.doc); derr != nil {
			p.s.log.Warn("namespace: dropping the intent of a change not made (the maintainer will)", "intent", p.id, "err", derr)
		}
	}
	return err
}

// errIntentGone is a finish's error when the intent was finished, or
// dropped, by another process meanwhile.
var errIntentGone = errors.New("namespace: the intent is resolved already")

// finishIntent appends intent id's event and deletes the intent, in one
// script, if the intent is still doc.
func (s *Service) finishIntent(ctx context.Context, id string, doc []byte, ev json.RawMessage) error {
	return s.changeIndex(ctx, "an event", func(c *indexChange) error {
		c.guard(errIntentGone, redisstate.GuardEq(s.k.Intents(), id, string(doc)))
		c.writes = append(c.writes, redisstate.HDel(s.k.Intents(), id))
		c.log = append(c.log, []string{commitlog.KindField, commitlog.Event, "e", string(ev)})
		return nil
	})
}

// ResolveIntents resolves every intent older than olderThan that nobody
// settled: storage shows whether its change was made; a change made gets
// its event, one not made loses its intent. It returns how many of each;
// an intent it cannot decide (storage unreachable) stays, and the first
// such error is returned.
func (s *Service) ResolveIntents(ctx context.Context, olderThan time.Duration) (made, notMade int, err error) {
	all, err := s.rs.Hash(ctx, s.k.Intents())
	if err != nil {
		return 0, 0, err
	}
	var first error
	for id, doc := range all {
		var in intent
		if err := json.Unmarshal([]byte(doc), &in); err != nil {
			// Not one of ours: nothing can be decided from it.
			s.log.Error("namespace: an intent is unreadable; dropped", "intent", id, "err", err)
			_, _ = s.rs.DropIntent(ctx, id, []byte(doc))
			continue
		}
		if s.now().Sub(in.At) < olderThan {
			continue
		}
		ok, err := s.intentMade(ctx, in)
		if err == nil {
			if ok {
				err = s.finishIntent(ctx, id, []byte(doc), in.Event)
			} else {
				_, err = s.rs.DropIntent(ctx, id, []byte(doc))
			}
		}
		switch {
		case errors.Is(err, errIntentGone):
		case err != nil:
			first = cmp.Or(first, err)
		case ok:
			made++
		default:
			notMade++
		}
	}
	return made, notMade, first
}

// intentMade reads storage for whether in's change was made.
func (s *Service) intentMade(ctx context.Context, in intent) (bool, error) {
	if in.Chain != "" && s.managed() {
		// A version claimed but not yet promoted is finished here, as a
		// reader finishes it; one never claimed is not found.
		if _, err := s.claims.GetManifestLocation(ctx, in.Chain, in.Version); err != nil && nserror.CodeOf(err) != nserror.TableVersionNotFound {
			return false, err
		}
	}
	b, err := s.objs.Get(ctx, in.Key)
	if errors.Is(err, objstore.ErrNotFound) {
		return in.SHA256 == "", nil
	}
	if err != nil || in.SHA256 == "" {
		return false, err // a deletion, and the object is there
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]) == in.SHA256, nil
}

// step runs the fault-injection hook at step, if there is one.
func (s *Service) step(ctx context.Context, step redisclaim.Step) error {
	if s.cfg.Claims.Step == nil {
		return nil
	}
	return s.cfg.Claims.Step(ctx, step, "", 0)
}
