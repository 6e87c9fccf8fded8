package histogram

// LockForTest takes s's lock, as a reader copying s holds it, and returns its release.
func LockForTest(s *Set) (unlock func()) {
	s.mu.Lock()
	return s.mu.Unlock
}
