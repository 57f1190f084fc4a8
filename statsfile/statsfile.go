// Package statsfile reads and writes the statistics file: the un-noised
// sufficient statistics (N, Σz, Σzzᵀ of the encoded rows) of one table,
// computed once, for example by the Beam pipeline on a cluster
// (beam/cmd/dplearn-beam stats), and fitted later by `dplearn fit --stats`
// or contributed to a multi-site fit by `dplearn cape join --stats`.
//
// The file is PRIVATE: it holds exact, un-noised functions of every record
// (with enough columns, Σzzᵀ and Σz can reveal individual values), so it
// must be handled like the table itself. Write creates it with mode 0600
// through an atomic rename, its first line says PRIVATE, and Read refuses a
// file that its group or other users can read. The file also names the
// schema it was computed under (schema.Fingerprint): Read refuses it
// under any other schema, because the statistics of rows encoded with other
// bounds would void the sensitivities the mechanisms compute.
//
// # Format (version 2)
//
// JSON, one object, keys in this order:
//
//	{"private": "PRIVATE: un-noised ...",   the warning, first
//	 "format": "dplearn-statistics", "version": 2,
//	 "schema_sha256": "<hex>",              schema.Fingerprint of the schema
//	 "columns": ["x1", ..., "y"],           encoded feature names, then the target
//	 "skip_bad_rows": false,                whether rows that could not be encoded were skipped
//	 "moments": "<base64>",                 suffstat.Moments.MarshalBinary (exact, checksummed)
//	 "schema": {...}}                       the schema itself (public), so a mismatch names the column and field
//
// Version 2 added "schema" (required in version 2). Read also reads
// version 1 files, with or without it (files written between the field's
// introduction and the version bump carry it under version 1); for a
// version 1 file without it, a schema mismatch can only name the column
// lists. Newer versions are refused with a message saying so.
//
// The row count is inside "moments". The number of skipped rows is not
// recorded (it is data-dependent, and the CLI shows it only on the console
// of the run that read the table); whether skipping was allowed is, so a
// fit from the file carries the same caveat in its report as a fit from
// the table.
package statsfile

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"slices"

	"github.com/dplearn/dplearn/internal/atomicfile"
	"github.com/dplearn/dplearn/schema"
	"github.com/dplearn/dplearn/suffstat"
)

// Warning is the text of the file's "private" field.
const Warning = "PRIVATE: un-noised sufficient statistics (N, Σz, Σzzᵀ) of every encoded row; handle like the raw table, never publish or share; fit it with a private mechanism"

const (
	formatName = "dplearn-statistics"
	// version is the version Encode writes; minVersion the oldest Decode
	// reads (version 1: "schema" optional).
	version    = 2
	minVersion = 1
	// Perm is the mode Write gives the file.
	Perm fs.FileMode = 0o600
)

// ErrReadable is wrapped by Read's error for a file that its group or
// other users may read.
var ErrReadable = errors.New("statistics file is readable by other users")

// ErrSchemaMismatch is wrapped by Decode's error for a file computed under
// another schema.
var ErrSchemaMismatch = errors.New("statistics file was computed under a different schema")

// Stats is the content of a statistics file.
type Stats struct {
	Moments *suffstat.Moments
	// SkipBadRows is true when rows that could not be encoded were skipped
	// (the fit's report must then say that N is treated as public).
	SkipBadRows bool
}

type fileJSON struct {
	Private     string   `json:"private"`
	Format      string   `json:"format"`
	Version     int      `json:"version"`
	Schema      string   `json:"schema_sha256"`
	Columns     []string `json:"columns"`
	SkipBadRows bool     `json:"skip_bad_rows"`
	Moments     string   `json:"moments"`
	// Declaration is the schema the statistics were computed with (public;
	// its fingerprint is Schema), so a mismatch can name the column and
	// field that differ (schema.Diff). Absent in older files.
	Declaration json.RawMessage `json:"schema,omitempty"`
}

// mismatch says what differs between the file's schema and s: the column
// and field (schema.Diff, the file's declaration first) when the file
// records its declaration, else the column lists when they differ, else
// that a declaration behind the same column names differs (issue 25
// item 6: printing two identical column lists said nothing).
func mismatch(f fileJSON, s *schema.Schema) string {
	if len(f.Declaration) > 0 {
		var fs schema.Schema
		if err := json.Unmarshal(f.Declaration, &fs); err == nil {
			if d := schema.Diff(&fs, s); d != nil {
				return fmt.Sprintf("%s (the first: the statistics file's, the second: this schema)", d)
			}
		}
	}
	if !slices.Equal(f.Columns, columns(s)) {
		return fmt.Sprintf("file columns %q, schema columns %q", f.Columns, columns(s))
	}
	return fmt.Sprintf("the columns %q are the same, but a declaration behind them differs (a range, category list, transform, target or missing policy; this file is from an older version and does not record which)", f.Columns)
}

func columns(s *schema.Schema) []string {
	return append(slices.Clone(s.FeatureNames()), s.Target.Name)
}

// Encode returns the file's bytes for the statistics st of rows encoded
// under s. The width of st must be the schema's (features + target).
func Encode(s *schema.Schema, st Stats) ([]byte, error) {
	fp, err := schema.Fingerprint(s)
	if err != nil {
		return nil, err
	}
	cols := columns(s)
	if st.Moments == nil || st.Moments.K() != len(cols) {
		return nil, fmt.Errorf("statsfile: statistics of width %d for a schema of %d columns", widthOf(st.Moments), len(cols))
	}
	bin, err := st.Moments.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("statsfile: %w", err)
	}
	decl, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("statsfile: %w", err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", " ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(fileJSON{Private: Warning, Format: formatName, Version: version,
		Schema: hex.EncodeToString(fp[:]), Columns: cols, SkipBadRows: st.SkipBadRows,
		Moments: base64.StdEncoding.EncodeToString(bin), Declaration: decl}); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func widthOf(m *suffstat.Moments) int {
	if m == nil {
		return 0
	}
	return m.K()
}

// Decode parses a statistics file and checks it against the schema s: the
// same fingerprint and columns. name labels errors.
func Decode(data []byte, name string, s *schema.Schema) (Stats, error) {
	var f fileJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return Stats{}, fmt.Errorf("%s: not a statistics file: %w", name, err)
	}
	if f.Format != formatName {
		return Stats{}, fmt.Errorf("%s: not a statistics file (format %q, want %q)", name, f.Format, formatName)
	}
	switch {
	case f.Version > version:
		return Stats{}, fmt.Errorf("%s: statistics file version %d is newer than this build reads (versions %d to %d): read it with a newer dplearn, or compute the statistics again with this one", name, f.Version, minVersion, version)
	case f.Version < minVersion:
		return Stats{}, fmt.Errorf("%s: statistics file version %d is not a version of this format (versions %d to %d)", name, f.Version, minVersion, version)
	case f.Version >= 2 && len(f.Declaration) == 0:
		return Stats{}, fmt.Errorf("%s: statistics file version %d lacks its \"schema\" declaration: the file is damaged; compute the statistics again", name, f.Version)
	}
	fp, err := schema.Fingerprint(s)
	if err != nil {
		return Stats{}, err
	}
	if f.Schema != hex.EncodeToString(fp[:]) {
		return Stats{}, fmt.Errorf("%s: %w: %s: compute the statistics again with this schema", name, ErrSchemaMismatch, mismatch(f, s))
	}
	if !slices.Equal(f.Columns, columns(s)) {
		return Stats{}, fmt.Errorf("%s: %w: file columns %q, schema columns %q", name, ErrSchemaMismatch, f.Columns, columns(s))
	}
	bin, err := base64.StdEncoding.DecodeString(f.Moments)
	if err != nil {
		return Stats{}, fmt.Errorf("%s: moments: %w", name, err)
	}
	var m suffstat.Moments
	if err := m.UnmarshalBinary(bin); err != nil {
		return Stats{}, fmt.Errorf("%s: %w", name, err)
	}
	if m.K() != len(f.Columns) {
		return Stats{}, fmt.Errorf("%s: moments of width %d for %d columns", name, m.K(), len(f.Columns))
	}
	if m.N() == 0 {
		return Stats{}, fmt.Errorf("%s: the statistics hold no rows", name)
	}
	m.Flush()
	return Stats{Moments: &m, SkipBadRows: f.SkipBadRows}, nil
}

// Write writes the statistics file at path with mode 0600, atomically (a
// temporary file beside it, renamed into place).
func Write(path string, s *schema.Schema, st Stats) error {
	b, err := Encode(s, st)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, b, Perm)
}

// Read reads and decodes the statistics file at path (see Decode). It
// refuses a file that its group or others can read (on systems with Unix
// permissions), naming the fix.
func Read(path string, s *schema.Schema) (Stats, error) {
	f, err := os.Open(path)
	if err != nil {
		return Stats{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Stats{}, err
	}
	if !fi.Mode().IsRegular() {
		return Stats{}, fmt.Errorf("%s: not a regular file", path)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		return Stats{}, fmt.Errorf("%s: %w (mode %v): it holds un-noised private statistics; run chmod 600 %s", path, ErrReadable, fi.Mode().Perm(), path)
	}
	const maxSize = 1 << 30
	if fi.Size() > maxSize {
		return Stats{}, fmt.Errorf("%s: %d bytes is larger than any statistics file (%d)", path, fi.Size(), maxSize)
	}
	data := make([]byte, fi.Size())
	if _, err := io.ReadFull(f, data); err != nil {
		return Stats{}, fmt.Errorf("%s: %w", path, err)
	}
	return Decode(data, path, s)
}
