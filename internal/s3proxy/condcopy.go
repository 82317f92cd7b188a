package s3proxy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// copyCondition is what the proxy needs to look at a destination itself:
// credentials to sign its HEAD with.
type copyCondition struct {
	creds  aws.Credentials
	region string
}

// HonourCopyCondition makes the proxy a store that refuses a CopyObject
// with If-None-Match: * onto an existing key (412 PreconditionFailed), as
// AWS S3 does since October 2025, in front of one that overwrites
// (MinIO). While it is on, every write to a key (PUT, POST, DELETE) goes
// through one lock of that key, and a conditional copy first asks the
// server, signed with these credentials, whether its destination exists:
// no two create-only writes of a key can both succeed, whether each is a
// conditional PUT (which the server itself decides) or a copy.
func (p *Proxy) HonourCopyCondition(accessKey, secretKey, region string) {
	p.cond.Store(&copyCondition{creds: aws.Credentials{AccessKeyID: accessKey, SecretAccessKey: secretKey}, region: region})
}

// OverwriteOnCopy undoes HonourCopyCondition: the store behind decides
// conditional copies again (MinIO overwrites).
func (p *Proxy) OverwriteOnCopy() { p.cond.Store(nil) }

// lockKey locks path's writes and returns the unlock.
func (p *Proxy) lockKey(path string) func() {
	m, _ := p.keys.LoadOrStore(path, &sync.Mutex{})
	mu := m.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

// refuseCopy reports whether r is a conditional copy (a PUT with
// x-amz-copy-source and If-None-Match: *) whose destination exists.
func (p *Proxy) refuseCopy(r *http.Request, c *copyCondition) (bool, error) {
	if r.Method != http.MethodPut || r.Header.Get("X-Amz-Copy-Source") == "" || r.Header.Get("If-None-Match") != "*" {
		return false, nil
	}
	p.ConditionalCopies.Add(1)
	u := *p.target
	u.Path, u.RawPath, u.RawQuery = r.URL.Path, r.URL.RawPath, ""
	head, err := http.NewRequestWithContext(r.Context(), http.MethodHead, u.String(), nil)
	if err != nil {
		return false, err
	}
	empty := sha256.Sum256(nil)
	hash := hex.EncodeToString(empty[:])
	head.Header.Set("X-Amz-Content-Sha256", hash)
	// S3 signs the path as sent, escaped once (as the AWS SDK's S3
	// client does): a key with a '$' or a space would otherwise be
	// signed escaped twice, and refused.
	signer := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
	if err := signer.SignHTTP(context.WithoutCancel(r.Context()), c.creds, head, hash, "s3", c.region, time.Now()); err != nil {
		return false, err
	}
	resp, err := p.transport.RoundTrip(head)
	if err != nil {
		return false, err
	}
	_ = resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		return true, nil
	case http.StatusNotFound:
		return false, nil
	}
	return false, fmt.Errorf("s3proxy: HEAD %s for a conditional copy: %s", r.URL.Path, resp.Status)
}
