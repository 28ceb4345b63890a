package snapshot

import "fmt"

// Z85 (ZeroMQ RFC 32) is the Base85 variant Delta uses for inline
// deletion vectors and for the UUIDs in deletion vector file names: every
// 5 characters encode 4 bytes, big-endian.

const z85Alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"

var z85Values = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for i := 0; i < len(z85Alphabet); i++ {
		t[z85Alphabet[i]] = byte(i)
	}
	return t
}()

// z85Decode decodes a Z85 string, whose length must be a multiple of 5.
func z85Decode(s string) ([]byte, error) {
	if len(s)%5 != 0 {
		return nil, fmt.Errorf("z85: length %d is not a multiple of 5", len(s))
	}
	out := make([]byte, 0, len(s)/5*4)
	for i := 0; i < len(s); i += 5 {
		var v uint64
		for j := 0; j < 5; j++ {
			d := z85Values[s[i+j]]
			if d == 0xff {
				return nil, fmt.Errorf("z85: invalid character %q at %d", s[i+j], i+j)
			}
			v = v*85 + uint64(d)
		}
		if v > 0xffffffff {
			return nil, fmt.Errorf("z85: group at %d overflows 32 bits", i)
		}
		out = append(out, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
	}
	return out, nil
}

// z85Encode encodes data, whose length must be a multiple of 4 (for tests
// and writers).
func z85Encode(data []byte) (string, error) {
	if len(data)%4 != 0 {
		return "", fmt.Errorf("z85: length %d is not a multiple of 4", len(data))
	}
	out := make([]byte, 0, len(data)/4*5)
	for i := 0; i < len(data); i += 4 {
		v := uint32(data[i])<<24 | uint32(data[i+1])<<16 | uint32(data[i+2])<<8 | uint32(data[i+3])
		var g [5]byte
		for j := 4; j >= 0; j-- {
			g[j] = z85Alphabet[v%85]
			v /= 85
		}
		out = append(out, g[:]...)
	}
	return string(out), nil
}
