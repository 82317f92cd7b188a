package objstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/flightns/flightns/nserror"
)

// VendOptions configure VendCredentials.
type VendOptions struct {
	// RoleARN is the role the store's own credentials assume (AWS: a role
	// that may read and write the bucket and trusts them; MinIO takes any
	// value and scopes the store's own user instead).
	RoleARN string
	// Duration is how long the credentials live (default 1 h; STS's
	// minimum is 15 min).
	Duration time.Duration
	// RenewAfter, when set, has clients renew the credentials this long
	// after they were issued, sooner than Duration: it is the expiry
	// answered (expires_at_millis), so that what a grant or role change
	// does reaches a client's credentials within it.
	RenewAfter time.Duration
	// RefreshOffset is how long before the expiry answered a client asks
	// for new credentials (answered as refresh_offset_millis, which Lance
	// reads when it opens a table; 0: the client's own default, 60 s in
	// Lance).
	RefreshOffset time.Duration
}

// Credentials are temporary storage credentials.
type Credentials struct {
	AccessKeyID, SecretAccessKey, SessionToken string
	Issued, Expires                            time.Time
}

// VendCredentials asks STS (AssumeRole) for temporary credentials that
// reach only the objects under key (a table's directory below the root,
// its branches' trees included), reading them, and with write also
// writing and deleting them. The session policy names that prefix alone;
// a key that a policy would read as a pattern (*, ?, ${) is refused, so
// that no location widens it. Only an s3:// store vends.
func (s *Store) VendCredentials(ctx context.Context, key string, write bool, o VendOptions) (Credentials, error) {
	if s.s3 == nil {
		return Credentials{}, nserror.New(nserror.Unsupported, "credential vending needs an s3:// root")
	}
	if err := ValidateKey(key); err != nil {
		return Credentials{}, err
	}
	prefix := s.s3.prefix + strings.TrimSuffix(key, "/")
	if strings.ContainsAny(prefix, "*?") || strings.Contains(prefix, "${") {
		return Credentials{}, nserror.New(nserror.InvalidInput, "no credentials are vended for %q: its name holds what a storage policy reads as a pattern (*, ? or ${)", key)
	}
	if o.Duration <= 0 {
		o.Duration = time.Hour
	}
	policy, err := sessionPolicy(s.s3.name, prefix, write)
	if err != nil {
		return Credentials{}, err
	}
	so := s.s3.client.Options()
	// STS answers where S3 does on a server of its own (MinIO); on AWS at
	// its regional endpoint. flightns asks at its own endpoint, never at
	// the root's client_endpoint: the credentials are the server's, good
	// at whichever address engines reach it.
	var endpoint *string
	if s.s3.endpoint != "" {
		endpoint = aws.String(s.s3.endpoint)
	}
	c := sts.New(sts.Options{Region: so.Region, Credentials: so.Credentials, BaseEndpoint: endpoint, HTTPClient: so.HTTPClient})
	out, err := c.AssumeRole(ctx, &sts.AssumeRoleInput{RoleArn: aws.String(o.RoleARN), RoleSessionName: aws.String("flightns"),
		Policy: aws.String(policy), DurationSeconds: aws.Int32(int32(o.Duration / time.Second))})
	if err != nil {
		return Credentials{}, nserror.New(nserror.ServiceUnavailable, "vending storage credentials (STS AssumeRole): %v", err)
	}
	cr := out.Credentials
	if cr == nil || cr.AccessKeyId == nil || cr.SecretAccessKey == nil || cr.SessionToken == nil || cr.Expiration == nil {
		return Credentials{}, nserror.New(nserror.ServiceUnavailable, "STS AssumeRole answered no credentials")
	}
	return Credentials{AccessKeyID: *cr.AccessKeyId, SecretAccessKey: *cr.SecretAccessKey, SessionToken: *cr.SessionToken,
		Issued: time.Now(), Expires: *cr.Expiration}, nil
}

// sessionPolicy is the inline policy of vended credentials: the objects
// under prefix (read; with write also put, delete and multipart uploads)
// and the listing of that prefix alone.
func sessionPolicy(bucket, prefix string, write bool) (string, error) {
	objects := fmt.Sprintf("arn:aws:s3:::%s/%s/*", bucket, prefix)
	actions := []string{"s3:GetObject"}
	if write {
		actions = append(actions, "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts")
	}
	doc := map[string]any{
		"Version": "2012-10-17",
		"Statement": []map[string]any{
			{"Effect": "Allow", "Action": actions, "Resource": []string{objects}},
			{"Effect": "Allow", "Action": []string{"s3:ListBucket"}, "Resource": []string{"arn:aws:s3:::" + bucket},
				"Condition": map[string]any{"StringLike": map[string]any{"s3:prefix": []string{prefix + "/*", prefix + "/"}}}},
		},
	}
	b, err := json.Marshal(doc)
	return string(b), err
}
