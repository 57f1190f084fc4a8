//go:build !race

package dppp

const raceEnabled = false
