package planner

import (
	"testing"
	"time"
)

// The vectors of the Iceberg specification's appendix B ("32-bit hash
// requirements").
func TestBucketHashMatchesIcebergVectors(t *testing.T) {
	day := func(s string) int64 {
		d, _ := time.Parse("2006-01-02", s)
		return d.Unix() / 86400
	}
	ts, _ := time.Parse("2006-01-02T15:04:05", "2017-11-16T22:31:08")
	cases := []struct {
		name string
		v    Value
		want int32
	}{
		{"int 34", Int(34), 2017239379},
		{"long 34", Int(34), 2017239379},
		{"date 2017-11-16", Date(day("2017-11-16")), -653330422},
		{"timestamp 2017-11-16T22:31:08", Timestamp(ts.UnixMicro()), -2047944441},
		{"string iceberg", String("iceberg"), 1210000089},
		{"binary 00010203", Binary([]byte{0, 1, 2, 3}), -188683207},
		{"double 1.0", Float(1), -142385009},
		{"float 0.0 and -0.0 hash alike", Float(negZero()), hashValue(Float(0))},
	}
	for _, c := range cases {
		if got := hashValue(c.v); got != c.want {
			t.Errorf("%s: hash %d, want %d", c.name, got, c.want)
		}
	}
	// bucket(100, 34L) = 79 (Velox's and Iceberg's documented example).
	if b := bucketOf(hashValue(Int(34)), 100); b != 79 {
		t.Errorf("bucket(100, 34) = %d, want 79", b)
	}
}

func negZero() float64 {
	z := 0.0
	return -z
}
