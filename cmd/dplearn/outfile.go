package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/dplearn/dplearn/dataset"
	"github.com/dplearn/dplearn/regress"
)

// outputFile is a destination named by an --out flag. A regular file (or a
// new one) is written to a temporary file beside it and renamed into place
// by Commit, so an interrupted run leaves the old file or none; "-" is
// standard output; a device, a FIFO, a socket or anything reached through
// /dev or /proc (/dev/stdout, /dev/fd/N) is written through, never replaced.
// A symbolic link to a regular file keeps the link and replaces its target.
type outputFile struct {
	name  string    // for messages: the path, or "standard output"
	w     io.Writer // where Write goes
	f     *os.File  // the open file (temporary or written-through), or nil for stdout
	tmp   string    // the temporary file, renamed to final by Commit
	final string
	perm  os.FileMode
}

// createOutput opens the destination path ("-": stdout).
func createOutput(path string, stdout io.Writer) (*outputFile, error) {
	if path == "-" {
		return &outputFile{name: "standard output", w: stdout}, nil
	}
	target, through, perm, err := resolveOutput(path)
	if err != nil {
		return nil, err
	}
	if through {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return nil, fmt.Errorf("open %s for writing: %w", path, err)
		}
		return &outputFile{name: path, w: f, f: f}, nil
	}
	dir := filepath.Dir(target)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("write %s: directory %s does not exist", path, dir)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(target)+".tmp*")
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	return &outputFile{name: path, w: f, f: f, tmp: f.Name(), final: target, perm: perm}, nil
}

// resolveOutput follows path's symbolic links. It returns the regular file
// to replace atomically (target), or through = true when the output must be
// written through the path instead, and the permissions the result gets.
func resolveOutput(path string) (target string, through bool, perm os.FileMode, err error) {
	cur := path
	for hop := 0; hop < 40; hop++ {
		if isSpecialTree(cur) {
			return "", true, 0, nil
		}
		st, err := os.Lstat(cur)
		if errors.Is(err, os.ErrNotExist) {
			return cur, false, 0o644, nil
		}
		if err != nil {
			return "", false, 0, fmt.Errorf("write %s: %w", path, err)
		}
		switch m := st.Mode(); {
		case m&os.ModeSymlink != 0:
			link, err := os.Readlink(cur)
			if err != nil {
				return "", false, 0, fmt.Errorf("write %s: %w", path, err)
			}
			if !filepath.IsAbs(link) {
				link = filepath.Join(filepath.Dir(cur), link)
			}
			cur = link
		case m.IsDir():
			return "", false, 0, fmt.Errorf("write %s: is a directory (give a file name)", path)
		case m.IsRegular():
			return cur, false, m.Perm(), nil
		default: // device, FIFO, socket
			return "", true, 0, nil
		}
	}
	return "", false, 0, fmt.Errorf("write %s: too many symbolic links", path)
}

// isSpecialTree reports whether p lies in /dev or /proc, whose entries
// (/dev/stdout → /proc/self/fd/1 → whatever descriptor 1 is) must never be
// replaced, even when they resolve to a regular file.
func isSpecialTree(p string) bool {
	p = filepath.Clean(p)
	return p == "/dev" || p == "/proc" || strings.HasPrefix(p, "/dev/") || strings.HasPrefix(p, "/proc/")
}

func (o *outputFile) Write(p []byte) (int, error) { return o.w.Write(p) }

// Commit finishes the output: it syncs and renames a temporary file into
// place, or closes a written-through one.
func (o *outputFile) Commit() error {
	if o.f == nil {
		return nil
	}
	if o.tmp == "" {
		return o.f.Close()
	}
	err := o.f.Sync()
	if cerr := o.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(o.tmp, o.perm)
	}
	if err == nil {
		err = os.Rename(o.tmp, o.final)
	}
	if err != nil {
		os.Remove(o.tmp)
		return fmt.Errorf("write %s: %w", o.name, err)
	}
	return nil
}

// Abort discards a temporary file; a written-through destination keeps what
// was written (a pipe cannot be unwritten).
func (o *outputFile) Abort() {
	if o.f == nil {
		return
	}
	o.f.Close()
	if o.tmp != "" {
		os.Remove(o.tmp)
	}
}

// writeOutput writes data to path ("-": stdout) as createOutput does.
func writeOutput(path string, stdout io.Writer, data []byte) error {
	o, err := createOutput(path, stdout)
	if err != nil {
		return err
	}
	if _, err := o.Write(data); err != nil {
		o.Abort()
		return fmt.Errorf("write %s: %w", o.name, err)
	}
	return o.Commit()
}

// saveModel writes the model as indented JSON into an output opened by
// createOutput and commits it; on error the output is discarded.
func saveModel(m *regress.Model, o *outputFile) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err == nil {
		_, err = o.Write(append(data, '\n'))
	}
	if err != nil {
		o.Abort()
		return fmt.Errorf("write %s: %w", o.name, err)
	}
	return o.Commit()
}

// readInput reads a whole file, or standard input for "-".
func readInput(path string, stdin io.Reader) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(stdin)
	}
	return os.ReadFile(path)
}

// loadModel reads and validates the file of a --model flag ("-": stdin),
// saying in words what is wrong when it is not a model file (a schema, a
// ledger, any other JSON).
func loadModel(path string, stdin io.Reader) (*regress.Model, error) {
	data, err := readInput(path, stdin)
	if err != nil {
		return nil, fmt.Errorf("--model: %w", err)
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(data, &probe); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("--model %s: not a model file written by 'dplearn fit' (invalid JSON at byte %d: %v)", path, se.Offset, err)
		}
		return nil, fmt.Errorf("--model %s: not a model file written by 'dplearn fit' (not a JSON object)", path)
	}
	if _, ok := probe["format"]; !ok {
		_, t := probe["target"]
		_, f := probe["features"]
		if t || f {
			return nil, fmt.Errorf("--model %s: this is a schema file; --model wants the model file that 'dplearn fit --out' wrote (fit with --schema %s first)", path, path)
		}
		return nil, fmt.Errorf("--model %s: not a model file written by 'dplearn fit' (no \"format\": %q key)", path, regress.ModelFormat)
	}
	var m regress.Model
	if err := json.Unmarshal(data, &m); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, fmt.Errorf("--model %s: damaged model file: key %q holds a JSON %s of the wrong type", path, te.Field, te.Value)
		}
		return nil, fmt.Errorf("--model %s: damaged model file: %w", path, err)
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("--model %s: %w", path, err)
	}
	return &m, nil
}

// parseDelimiter reads a --delimiter value: ",", ";", "tab" (or a real tab
// character, or \t) and "|".
func parseDelimiter(s string) (byte, error) {
	switch s {
	case ",", "comma":
		return ',', nil
	case ";", "semicolon":
		return ';', nil
	case "tab", "\t", `\t`, "TAB":
		return '\t', nil
	case "|", "pipe":
		return '|', nil
	}
	return 0, fmt.Errorf("--delimiter %q: want ',', ';', tab or '|'", s)
}

// readErr rewords reading errors in the user's words: a header in the wrong
// delimiter names the flag, a missing input file names --data.
func readErr(flag string, err error) error {
	var de *dataset.DelimiterError
	if errors.As(err, &de) {
		return err // already says which --delimiter to pass
	}
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, dataset.ErrNotTable) {
		return fmt.Errorf("%s: %w", flag, err)
	}
	return err
}

// toStdout reports whether an --out value names standard output, so that
// the command's messages go to stderr instead of into the output.
func toStdout(path string) bool {
	switch filepath.Clean(path) {
	case "-", "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1":
		return true
	}
	return false
}
