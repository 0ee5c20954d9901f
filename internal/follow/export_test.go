package follow

// Remembered is how many keys f keeps a state of.
func (f *Follower) Remembered() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.revs)
}
