package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Mutate returns src with the mutant's Find replaced by its Replace; Find
// must occur exactly once.
func Mutate(src []byte, m Mutant) ([]byte, error) {
	switch c := strings.Count(string(src), m.Find); c {
	case 1:
		return []byte(strings.Replace(string(src), m.Find, m.Replace, 1)), nil
	case 0:
		return nil, fmt.Errorf("%s: find %q does not occur in %s", m.ID(), m.Find, m.File)
	default:
		return nil, fmt.Errorf("%s: find %q occurs %d times in %s (must be exactly once)", m.ID(), m.Find, c, m.File)
	}
}

// overlayFile is the JSON of `go build -overlay`.
type overlayFile struct {
	Replace map[string]string
}

// WriteOverlay writes the mutated copy of the mutant's file and the overlay
// JSON mapping the file's absolute path to it into dir (a fresh temporary
// directory per mutant), and returns the overlay's path. The tree under
// root is only read.
func WriteOverlay(root, dir string, m Mutant) (string, error) {
	orig := filepath.Join(root, filepath.FromSlash(m.File))
	src, err := os.ReadFile(orig)
	if err != nil {
		return "", fmt.Errorf("%s: %w", m.ID(), err)
	}
	mut, err := Mutate(src, m)
	if err != nil {
		return "", err
	}
	copyPath := filepath.Join(dir, filepath.Base(orig))
	if err := os.WriteFile(copyPath, mut, 0o644); err != nil {
		return "", fmt.Errorf("%s: %w", m.ID(), err)
	}
	abs, err := filepath.Abs(orig)
	if err != nil {
		return "", err
	}
	data, err := json.Marshal(overlayFile{Replace: map[string]string{abs: copyPath}})
	if err != nil {
		return "", err
	}
	ov := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(ov, data, 0o644); err != nil {
		return "", fmt.Errorf("%s: %w", m.ID(), err)
	}
	return ov, nil
}
