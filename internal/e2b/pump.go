package e2b

// pump reads next on a goroutine of its own and hands what it reads over
// events, and its error (the stream's end) over failed, so that a caller
// can wait for the next item and a timer at once. stop ends it: it closes
// the stream (which ends a next blocked in its read) and waits for the
// goroutine to return; the caller defers it.
func pump[T any](next func() (T, error), closeStream func() error) (events <-chan T, failed <-chan error, stop func()) {
	ev := make(chan T)
	fail := make(chan error, 1)
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			v, err := next()
			if err != nil {
				fail <- err
				return
			}
			select {
			case ev <- v:
			case <-quit:
				return
			}
		}
	}()
	return ev, fail, func() {
		close(quit)
		closeStream()
		<-done
	}
}
