package h2

// Every test checks the count of open streams against a walk of them at
// each new stream.
func init() { checkOpen = true }
