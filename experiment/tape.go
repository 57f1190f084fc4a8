package experiment

import (
	"bytes"
	"fmt"
	"io"

	"github.com/dplearn/dplearn/noise"
)

// Common random numbers for --mechanism auto. auto is, by construction,
// exactly the mechanism its public rule picks (regress.TestAutoPaths), so
// a sweep that fits both on independent noise draws measures the noise of
// the draws, not the rule: in a 100-split auto-sweep, auto and noisygd,
// the same mechanism on the same splits, differed by up to 1.4× in mean
// excess RMSE (diabetes at ε = 32), because the excess is a heavy-tailed
// quadratic form of the noise. The sweeps therefore fit auto on a tape of
// the split's noise source and its pick on a replay of that tape, and
// check that the two coefficient vectors are equal bit for bit: auto's
// row is then the pick's row, and "auto ÷ the best single mechanism"
// compares the rule's choice with the best choice on the same draws.

// tapeSource records every byte read from src.
type tapeSource struct {
	src  noise.Source
	tape bytes.Buffer
}

func newTape(src noise.Source) *tapeSource { return &tapeSource{src: src} }

func (t *tapeSource) Read(p []byte) (int, error) {
	n, err := t.src.Read(p)
	t.tape.Write(p[:n])
	return n, err
}

func (t *tapeSource) Secure() bool   { return t.src.Secure() }
func (t *tapeSource) String() string { return t.src.String() }

// replay returns a source that reads the recorded bytes and fails once
// they run out (a replayed fit that needs more noise than the recorded
// one is not the same fit).
func (t *tapeSource) replay() noise.Source {
	return &replaySource{r: bytes.NewReader(t.tape.Bytes()), secure: t.src.Secure(), name: t.src.String()}
}

type replaySource struct {
	r      *bytes.Reader
	secure bool
	name   string
}

func (s *replaySource) Read(p []byte) (int, error) {
	n, err := io.ReadFull(s.r, p)
	if err != nil {
		return n, fmt.Errorf("experiment: the replayed fit read more noise than the recorded one (%d of %d bytes left): %w", n, len(p), err)
	}
	return n, nil
}

func (s *replaySource) Secure() bool   { return s.secure }
func (s *replaySource) String() string { return s.name }

// sameCoef reports an error unless a and b are equal bit for bit.
func sameCoef(what string, a, b []float64) error {
	if len(a) != len(b) {
		return fmt.Errorf("%s: %d coefficients against %d", what, len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			return fmt.Errorf("%s: coefficient %d is %v against %v on the same noise", what, i, a[i], b[i])
		}
	}
	return nil
}
