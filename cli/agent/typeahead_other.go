//go:build !linux && !darwin

package agent

import "errors"

// discardInput is not available here: a line typed ahead stays queued.
func discardInput(fd int) error { return errors.ErrUnsupported }
