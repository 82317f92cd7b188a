package planner

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// murmur3 is MurmurHash3 x86 32-bit with seed 0, the hash of Iceberg's
// bucket transform and of the Lance partitioning spec.
func murmur3(data []byte) uint32 {
	const c1, c2 = 0xcc9e2d51, 0x1b873593
	var h uint32
	n := len(data) / 4
	for i := 0; i < n; i++ {
		k := binary.LittleEndian.Uint32(data[4*i:])
		k *= c1
		k = bits.RotateLeft32(k, 15)
		k *= c2
		h ^= k
		h = bits.RotateLeft32(h, 13)
		h = h*5 + 0xe6546b64
	}
	tail := data[4*n:]
	var k uint32
	switch len(tail) {
	case 3:
		k ^= uint32(tail[2]) << 16
		fallthrough
	case 2:
		k ^= uint32(tail[1]) << 8
		fallthrough
	case 1:
		k ^= uint32(tail[0])
		k *= c1
		k = bits.RotateLeft32(k, 15)
		k *= c2
		h ^= k
	}
	h ^= uint32(len(data))
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

// hashBytes are the bytes Iceberg hashes for a value: integers, dates,
// booleans and timestamps (microseconds) as an 8-byte little-endian long,
// floats as the long bits of the double (NaN canonical, -0 as 0), strings
// as UTF-8 and binary as is.
func hashBytes(v Value, buf []byte) []byte {
	switch v.Kind {
	case KindString, KindBinary:
		return append(buf, v.S...)
	case KindFloat:
		f := v.F
		if f == 0 {
			f = 0
		}
		b := math.Float64bits(f)
		if math.IsNaN(f) {
			b = 0x7ff8000000000000
		}
		return binary.LittleEndian.AppendUint64(buf, b)
	}
	return binary.LittleEndian.AppendUint64(buf, uint64(v.I))
}

// hashValue is Iceberg's 32-bit hash of one value.
func hashValue(v Value) int32 { return int32(murmur3(hashBytes(v, nil))) }

// bucketOf is (hash & MaxInt32) % n.
func bucketOf(h int32, n int) int64 { return int64(h&math.MaxInt32) % int64(n) }
