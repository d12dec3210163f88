package outbox

// Idle lets tests that drive the dispatcher step by step (FanOutOnce,
// SendOnce, a fake clock) wait for the sends a step started.
func (d *Dispatcher) Idle() bool { return d.idle() }
