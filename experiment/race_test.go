//go:build race

package experiment

// raceEnabled: the race detector slows noisy gradient descent's row loops
// about tenfold; TestAutoNearBestSingle, one goroutine of arithmetic,
// skips under it (the README's test command runs it without -race).
const raceEnabled = true
