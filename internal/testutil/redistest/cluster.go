package redistest

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flightns/flightns/internal/redisproc"
)

// clusterConfig describes a Redis Cluster on loopback.
type clusterConfig struct {
	// Dir holds one subdirectory per node. Required.
	Dir string
	// Masters is the number of master nodes (at least 3).
	Masters int
	// Replicas is the number of replicas per master.
	Replicas int
	// Persistence of every node.
	Persistence redisproc.Persistence
	// NodeTimeout is cluster-node-timeout; 0 means 2s. A killed master's
	// replica is promoted after about this long.
	NodeTimeout time.Duration
}

// cluster is a running Redis Cluster of child processes (redisproc
// servers in cluster mode).
type cluster struct {
	cfg   clusterConfig
	Nodes []*redisproc.Server
}

// startCluster starts Masters*(1+Replicas) nodes, joins them with
// `redis-cli --cluster create`, and waits until every node reports the
// cluster healthy with all slots covered.
func startCluster(ctx context.Context, cfg clusterConfig) (*cluster, error) {
	if cfg.Masters < 3 {
		return nil, errors.New("redistest: a cluster needs at least 3 masters")
	}
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		return nil, errors.New("redis-cli is not installed (Debian/Ubuntu: apt-get install -y redis-tools)")
	}
	c := &cluster{cfg: cfg}
	n := cfg.Masters * (1 + cfg.Replicas)
	for i := range n {
		s, err := redisproc.Start(ctx, redisproc.Config{
			Dir:                filepath.Join(cfg.Dir, fmt.Sprintf("node-%d", i)),
			Persistence:        cfg.Persistence,
			Cluster:            true,
			ClusterNodeTimeout: cfg.NodeTimeout,
		})
		if err != nil {
			c.Stop()
			return nil, err
		}
		c.Nodes = append(c.Nodes, s)
	}
	args := []string{"--cluster", "create"}
	for _, s := range c.Nodes {
		args = append(args, s.Addr())
	}
	args = append(args, "--cluster-replicas", strconv.Itoa(cfg.Replicas), "--cluster-yes")
	out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput()
	if err != nil {
		c.Stop()
		return nil, fmt.Errorf("redistest: redis-cli --cluster create: %w\n%s", err, out)
	}
	if err := c.WaitHealthy(ctx, 30*time.Second); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// Addrs returns every node's host:port.
func (c *cluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, s := range c.Nodes {
		out[i] = s.Addr()
	}
	return out
}

// URL returns a redis:// URL that names every node (go-redis's cluster URL
// form: the first node, then addr= for each other).
func (c *cluster) URL() string {
	addrs := c.Addrs()
	u := "redis://" + addrs[0]
	for i, a := range addrs[1:] {
		if i == 0 {
			u += "?addr=" + a
		} else {
			u += "&addr=" + a
		}
	}
	return u
}

// Client returns a new cluster client; the caller closes it.
func (c *cluster) Client() *redis.ClusterClient {
	return redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
}

// WaitHealthy waits until every running node reports cluster_state:ok and
// sees every slot assigned, and every replica is linked to its master.
func (c *cluster) WaitHealthy(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := c.healthy(ctx)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redistest: cluster not healthy after %v: %w", timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (c *cluster) healthy(ctx context.Context) error {
	for _, s := range c.Nodes {
		if !s.Running() {
			continue
		}
		cl := s.Client()
		info, err := cl.ClusterInfo(ctx).Result()
		var repl string
		if err == nil {
			repl, err = cl.Info(ctx, "replication").Result()
		}
		_ = cl.Close()
		if err != nil {
			return err
		}
		if !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_slots_ok:16384") {
			return fmt.Errorf("node %s: %s", s.Addr(), firstLines(info, 3))
		}
		if strings.Contains(repl, "role:slave") && !strings.Contains(repl, "master_link_status:up") {
			return fmt.Errorf("replica %s is not linked to its master yet", s.Addr())
		}
	}
	return nil
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, " ")
}

// NodeForKey returns the index of the running node that masters key's slot.
func (c *cluster) NodeForKey(ctx context.Context, key string) (int, error) {
	for _, s := range c.Nodes {
		if !s.Running() {
			continue
		}
		cl := s.Client()
		slot, err := cl.ClusterKeySlot(ctx, key).Result()
		if err != nil {
			_ = cl.Close()
			return -1, err
		}
		shards, err := cl.ClusterShards(ctx).Result()
		_ = cl.Close()
		if err != nil {
			return -1, err
		}
		for _, sh := range shards {
			for _, r := range sh.Slots {
				if r.Start > slot || slot > r.End {
					continue
				}
				for _, n := range sh.Nodes {
					if n.Role != "master" || n.Health != "online" {
						continue
					}
					for i, node := range c.Nodes {
						if node.Port() == int(n.Port) {
							return i, nil
						}
					}
				}
			}
		}
		return -1, fmt.Errorf("redistest: no node masters slot %d", slot)
	}
	return -1, errors.New("redistest: no node is running")
}

// Kill kills node i with SIGKILL.
func (c *cluster) Kill(i int) error { return c.Nodes[i].Kill() }

// Stop stops every node.
func (c *cluster) Stop() {
	for _, s := range c.Nodes {
		_ = s.Kill()
	}
}
