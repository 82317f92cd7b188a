package gzipshare

// The CRC-32 (IEEE) of a followed by b is the CRC of a carried through
// len(b) zero bytes, plus the CRC of b. Carrying a CRC through n zero
// bytes is a linear map over GF(2), a 32×32 bit matrix (32 columns of 32
// bits): zeros(n) makes it once per piece, by squaring the map of one
// zero bit; each stream then applies it to its own CRC (times), 32 steps
// at most.

// zeros is the map carrying a CRC through n zero bytes.
func zeros(n int64) [32]uint32 {
	var out [32]uint32
	for i := range out { // the identity
		out[i] = 1 << i
	}
	if n <= 0 {
		return out
	}
	var op, next [32]uint32   // the map of 2^k zero bits, k from 0
	op[0] = 0xedb88320        // one zero bit: the reversed polynomial…
	for i := 1; i < 32; i++ { // …and a shift
		op[i] = 1 << (i - 1)
	}
	square(&next, &op) // two zero bits
	square(&op, &next) // four
	square(&next, &op) // eight: one zero byte
	op = next
	for ; n > 0; n >>= 1 { // the maps of the bits set in n, composed
		if n&1 != 0 {
			out = compose(&op, &out)
		}
		square(&next, &op)
		op = next
	}
	return out
}

// times is the matrix m applied to the vector v.
func times(m *[32]uint32, v uint32) uint32 {
	var sum uint32
	for i := 0; v != 0; i, v = i+1, v>>1 {
		if v&1 != 0 {
			sum ^= m[i]
		}
	}
	return sum
}

// square sets sq to m times m.
func square(sq, m *[32]uint32) {
	for i := range 32 {
		sq[i] = times(m, m[i])
	}
}

// compose is the map a after b.
func compose(a, b *[32]uint32) [32]uint32 {
	var out [32]uint32
	for i := range 32 {
		out[i] = times(a, b[i])
	}
	return out
}
