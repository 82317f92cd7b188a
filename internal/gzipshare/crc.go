package gzipshare

// crc32Combine is the CRC-32 (IEEE) of a followed by b from the CRC of
// a, crcA, the CRC of b, crcB, and b's length: crcA is carried through
// lenB zero bytes by squaring the operator of one zero bit (matrices over
// GF(2), 32 columns of 32 bits), then crcB is added.
func crc32Combine(crcA, crcB uint32, lenB int64) uint32 {
	if lenB <= 0 {
		return crcA
	}
	var even, odd [32]uint32 // operators of 2^k zero bits, alternately
	odd[0] = 0xedb88320      // the operator of one zero bit: the reversed polynomial…
	row := uint32(1)
	for i := 1; i < 32; i++ { // …and a shift
		odd[i] = row
		row <<= 1
	}
	square(&even, &odd) // two zero bits
	square(&odd, &even) // four
	for {               // lenB zero bytes: apply the operator of each bit set in lenB
		square(&even, &odd)
		if lenB&1 != 0 {
			crcA = times(&even, crcA)
		}
		if lenB >>= 1; lenB == 0 {
			break
		}
		square(&odd, &even)
		if lenB&1 != 0 {
			crcA = times(&odd, crcA)
		}
		if lenB >>= 1; lenB == 0 {
			break
		}
	}
	return crcA ^ crcB
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
