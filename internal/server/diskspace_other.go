//go:build !unix

package server

import "errors"

// diskSpace is not read on this system; the scrape says so.
func diskSpace(string) (free, size uint64, err error) {
	return 0, 0, errors.New("free space not read on this system")
}
