package namespace

import "testing"

// A catalog rooted at a whole bucket takes s3:// paths in that bucket,
// as one rooted at a prefix takes those under the prefix; each refuses
// the other bucket, the bucket itself and paths outside its prefix.
// (A root of s3://bucket once refused every s3:// manifest path:
// found by commit-steps on s3.)
func TestS3RootsTakePathsInsideThemOnly(t *testing.T) {
	for _, c := range []struct {
		root    string
		inside  map[string]string // path → key
		outside []string
	}{
		{"s3://bucket", map[string]string{
			"s3://bucket/t/_versions/1.manifest": "t/_versions/1.manifest",
			"s3://bucket/t/":                     "t",
			"t/x":                                "t/x",
		}, []string{"s3://bucket", "s3://bucket/", "s3://other/t", "s3://bucket/../t", "s3://bucket/a/../../t", "s3://bucket//t", "file:///t"}},
		{"s3://bucket/pre", map[string]string{
			"s3://bucket/pre/t/_versions/1.manifest": "t/_versions/1.manifest",
			"pre/t":                                  "t",
			"t":                                      "t",
		}, []string{"s3://bucket/pre", "s3://bucket/t", "s3://bucket/prefix/t", "s3://other/pre/t", "s3://bucket/pre/../t"}},
	} {
		r, err := parseRoot(c.root + "?endpoint=http%3A%2F%2F127.0.0.1%3A9000&region=us-east-1&use_path_style=true")
		if err != nil {
			t.Fatal(err)
		}
		for p, want := range c.inside {
			got, err := r.toKey(p, "manifest_path")
			if err != nil || got != want {
				t.Errorf("root %s: %q gave %q, %v; want %q", c.root, p, got, err, want)
			}
		}
		for _, p := range c.outside {
			if got, err := r.toKey(p, "manifest_path"); err == nil {
				t.Errorf("root %s: %q was taken as %q", c.root, p, got)
			}
		}
	}
}
