package planner

// Transform is a partition field's well-known transform, as the Lance
// partitioning spec writes it: {"type": "bucket", "num_buckets": 16}.
// Types: identity, year, month, day, hour, bucket, multi_bucket, truncate.
type Transform struct {
	Type       string `json:"type"`
	NumBuckets int    `json:"num_buckets,omitempty"`
	Width      int    `json:"width,omitempty"`
}

// The transform types.
const (
	TransformIdentity    = "identity"
	TransformYear        = "year"
	TransformMonth       = "month"
	TransformDay         = "day"
	TransformHour        = "hour"
	TransformBucket      = "bucket"
	TransformMultiBucket = "multi_bucket"
	TransformTruncate    = "truncate"
)
