package testkit

import "encoding/binary"

// NPYHeader is the start of a NumPy .npy version 1.0 file whose header is
// dict (a Python dict literal such as "{'descr': '<f8', 'fortran_order':
// False, 'shape': (3,), }"): the magic, the version, the header length and
// the header, space-padded and ending in '\n' so that the records start at
// a multiple of 64 bytes, as NumPy writes it.
func NPYHeader(dict string) []byte {
	hdr := dict
	for (npyPrelude+len(hdr)+1)%64 != 0 {
		hdr += " "
	}
	hdr += "\n"
	b := []byte("\x93NUMPY\x01\x00")
	b = binary.LittleEndian.AppendUint16(b, uint16(len(hdr)))
	return append(b, hdr...)
}
