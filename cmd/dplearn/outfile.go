package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dplearn/dplearn/dataset"
	"github.com/dplearn/dplearn/internal/atomicfile"
	"github.com/dplearn/dplearn/regress"
)

// outputFile is a destination named by an --out flag. A regular file (or a
// new one) is written to a temporary file beside it and renamed into place
// by Commit (internal/atomicfile: temporary files locked while their writer
// lives, a dead writer's removed by the next write of the same target), so
// an interrupted run leaves the old file or none; "-" is standard output; a
// device, a FIFO, a socket or anything reached through /dev or /proc
// (/dev/stdout, /dev/fd/N) is written through, never replaced. A symbolic
// link to a regular file keeps the link and replaces its target.
type outputFile struct {
	name string           // for messages: the path, or "standard output"
	w    io.Writer        // where Write goes
	f    *os.File         // a written-through file, or nil
	a    *atomicfile.File // the temporary file Commit renames, or nil
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
	a, err := atomicfile.Create(target, perm) // its errors say "write TARGET: …"
	if err != nil {
		return nil, err
	}
	return &outputFile{name: path, w: a, a: a}, nil
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

// atomic reports whether the output is a temporary file that Commit renames
// into place (false: standard output or written through).
func (o *outputFile) atomic() bool { return o.a != nil && o.a.TempName() != "" }

// Prepare makes the written content durable under the temporary name
// (fsync, final permissions) without publishing it; Commit then only
// renames. On error the temporary file is removed. For an output written
// through, Prepare does nothing: what was written is already out.
func (o *outputFile) Prepare() error {
	if !o.atomic() {
		return nil
	}
	if err := o.a.Prepare(); err != nil {
		return fmt.Errorf("write %s: %w", o.name, err)
	}
	return nil
}

// Commit finishes the output: it syncs and renames a temporary file into
// place, or closes a written-through one. On error the temporary file is
// removed (see commitKeep).
func (o *outputFile) Commit() error {
	if err := o.commitKeep(); err != nil {
		o.Abort()
		return err
	}
	return nil
}

// commitKeep is Commit that leaves the temporary file (and says where it
// is) when the rename fails: for content already paid for by a ledger.
func (o *outputFile) commitKeep() error {
	switch {
	case o.f != nil:
		return o.f.Close()
	case o.atomic():
		if err := o.a.Commit(); err != nil {
			return fmt.Errorf("%s: %w", o.name, err)
		}
	}
	return nil
}

// Abort discards a temporary file; a written-through destination keeps what
// was written (a pipe cannot be unwritten).
func (o *outputFile) Abort() {
	switch {
	case o.f != nil:
		o.f.Close()
	case o.a != nil:
		o.a.Abort()
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
	if err := writeModel(m, o); err != nil {
		return err
	}
	return o.Commit()
}

// writeModel writes the model as indented JSON into o and, for a temporary
// file, makes it durable (Prepare) without publishing it; on error the
// output is discarded.
func writeModel(m *regress.Model, o *outputFile) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err == nil {
		_, err = o.Write(append(data, '\n'))
	}
	if err != nil {
		o.Abort()
		return fmt.Errorf("write %s: %w", o.name, err)
	}
	return o.Prepare()
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

// fileFlag is one file a command reads or writes, named by its flag.
type fileFlag struct{ flag, path string }

// fileIdentity identifies a file: its device and inode when it exists, and
// its absolute path with every symbolic link resolved (for a file not
// created yet: its resolved directory and its name).
type fileIdentity struct {
	info os.FileInfo // nil when the file does not exist
	path string
}

func identify(path string) (fileIdentity, bool) {
	if path == "" || path == "-" {
		return fileIdentity{}, false
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return fileIdentity{}, false
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	} else if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		abs = filepath.Join(dir, filepath.Base(abs))
	}
	id := fileIdentity{path: abs}
	if st, err := os.Stat(path); err == nil {
		id.info = st
	}
	return id, true
}

func (a fileIdentity) same(b fileIdentity) bool {
	if a.info != nil && b.info != nil {
		return os.SameFile(a.info, b.info)
	}
	return a.path == b.path
}

// refuseSameFile refuses, before anything is read, written or spent, any
// output that is the same file as an input (a table, a schema, a model, a
// key, a ledger) or as another output: same device and inode, or, for a
// file not created yet, the same resolved path. Writing it would replace
// what the command reads (a private table by a model, a ledger by a model:
// the budget reset). Standard streams ("-") and outputs under /dev or /proc
// (written through, never replaced) are not files to compare; an empty
// path is a flag not given.
func refuseSameFile(outputs, inputs []fileFlag) error {
	type seen struct {
		fileFlag
		id fileIdentity
	}
	var ins []seen
	for _, in := range inputs {
		if id, ok := identify(in.path); ok {
			ins = append(ins, seen{in, id})
		}
	}
	var outs []seen
	for _, out := range outputs {
		if out.path == "" || out.path == "-" || isSpecialTree(out.path) {
			continue
		}
		id, ok := identify(out.path)
		if !ok {
			continue
		}
		for _, in := range ins {
			if id.same(in.id) {
				return fmt.Errorf("%s %s is the same file as %s %s: writing it would replace what this command reads; choose another output path", out.flag, out.path, in.flag, in.path)
			}
		}
		for _, o := range outs {
			if id.same(o.id) {
				return fmt.Errorf("%s %s and %s %s are the same file; give each output its own path", o.flag, o.path, out.flag, out.path)
			}
		}
		outs = append(outs, seen{out, id})
	}
	return nil
}

// checkOutputs refuses outputs that are the same file as an input or as
// each other (refuseSameFile) and checks that each can be written, by
// creating its temporary file and discarding it: for commands that spend a
// budget (or make other parties spend theirs) before they write, so that a
// bad --out costs nothing. It cannot foresee a disk filling up later.
func checkOutputs(outputs, inputs []fileFlag) error {
	if err := refuseSameFile(outputs, inputs); err != nil {
		return err
	}
	for _, o := range outputs {
		if o.path == "" || o.path == "-" {
			continue
		}
		f, err := createOutput(o.path, io.Discard)
		if err != nil {
			return fmt.Errorf("%s: %w", o.flag, err)
		}
		f.Abort()
	}
	return nil
}

// openCheckedOutput is checkOutputs for one output that stays open: the
// caller writes it with saveModel (or Write and Commit) at the end and
// calls Abort on every other path.
func openCheckedOutput(flag, path string, stdout io.Writer, inputs ...fileFlag) (*outputFile, error) {
	if err := refuseSameFile([]fileFlag{{flag, path}}, inputs); err != nil {
		return nil, err
	}
	o, err := createOutput(path, stdout)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	return o, nil
}

// certFiles names the files of a party's certificate directory, as inputs
// an output must not replace.
func certFiles(flag, dir string) []fileFlag {
	if dir == "" {
		return nil
	}
	var fs []fileFlag
	for _, n := range []string{"party.crt", "party.key", "ca.crt"} {
		fs = append(fs, fileFlag{flag, filepath.Join(dir, n)})
	}
	return fs
}

// checkLabelsOutput is checkOutputs for DPPP's labels (--out LABELS.csv and
// the privacy record LABELS.csv.privacy.json beside it), called before any
// query is answered or charged. No --out (a serve for --clients only) is
// nothing to check.
func checkLabelsOutput(out string, inputs ...fileFlag) error {
	if out == "" {
		return nil
	}
	return checkOutputs([]fileFlag{{"--out", out}, {"--out (its privacy record)", out + ".privacy.json"}}, inputs)
}

// fileFlags names several files of one flag (--models a,b,c).
func fileFlags(flag string, paths []string) []fileFlag {
	fs := make([]fileFlag, len(paths))
	for i, p := range paths {
		fs[i] = fileFlag{flag, strings.TrimSpace(p)}
	}
	return fs
}

// refuseSameFileFlags is refuseSameFile for a command whose inputs are its
// other flags: every other string or list flag given on the command line
// counts as a possible input file, so a file flag added later is covered
// without a change here. (A value that names no file, such as --model
// softmax, only matters if an output is literally the same path.)
func refuseSameFileFlags(cmd *cobra.Command, outputFlags ...string) error {
	var outs, ins []fileFlag
	fl := cmd.Flags()
	for _, name := range outputFlags {
		if v, err := fl.GetString(name); err == nil && v != "" {
			outs = append(outs, fileFlag{"--" + name, v})
		}
	}
	fl.Visit(func(f *pflag.Flag) {
		if slices.Contains(outputFlags, f.Name) {
			return
		}
		switch f.Value.Type() {
		case "string":
			ins = append(ins, fileFlag{"--" + f.Name, f.Value.String()})
		case "stringSlice":
			if vs, err := fl.GetStringSlice(f.Name); err == nil {
				ins = append(ins, fileFlags("--"+f.Name, vs)...)
			}
		}
	})
	return refuseSameFile(outs, ins)
}
