//go:build race

package transport

// raceEnabled: the race detector multiplies memory use (about 5x).
const raceEnabled = true
