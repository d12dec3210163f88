//go:build !linux

package loadtest

import (
	"errors"
	"time"
)

// processCPU needs /proc.
func processCPU(int) (time.Duration, error) {
	return 0, errors.New("server CPU time is only measured on Linux")
}
