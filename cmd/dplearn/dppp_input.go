package main

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dplearn/dplearn/classify"
	"github.com/dplearn/dplearn/dataset"
	"github.com/dplearn/dplearn/dppp"
	"github.com/dplearn/dplearn/idx"
	"github.com/dplearn/dplearn/report"
)

// dpppInputFlags say how query rows are read, for every DPPP command that
// reads them (serve, query, simulate, student): a table through an input
// spec (--schema), or IDX images (--idx: pixels / 255, as 'dppp train
// --idx-images' trains on), whose classes are public (--classes,
// --class-names).
type dpppInputFlags struct {
	spec, classNames, shape string
	idx                     bool
	classes                 int
}

// register adds the flags; withShape adds --idx-shape (serve, which may
// have no query file to read the image size from).
func (in *dpppInputFlags) register(cmd *cobra.Command, withShape bool) {
	f := cmd.Flags()
	f.StringVar(&in.spec, "schema", "", "the input spec the teachers' models were trained with (table input)")
	f.BoolVar(&in.idx, "idx", false, "the queries are IDX images (MNIST format, .gz or not; pixels / 255), for teachers trained with --idx-images")
	f.IntVar(&in.classes, "classes", 10, "with --idx: the public number of classes")
	f.StringVar(&in.classNames, "class-names", "", "with --idx: comma-separated class names (default 0, 1, ...)")
	if withShape {
		f.StringVar(&in.shape, "idx-shape", "", "with --idx and no query file: the image size ROWSxCOLS, e.g. 28x28")
	}
}

// check validates the combination of flags.
func (in *dpppInputFlags) check(cmd *cobra.Command) error {
	switch {
	case in.idx && in.spec != "":
		return errors.New("--schema (table queries) and --idx (IDX images): choose one")
	case !in.idx && in.spec == "":
		return errors.New("say how the queries are read: --schema SPEC.json for a table, or --idx for IDX images")
	case !in.idx && (cmd.Flags().Changed("classes") || cmd.Flags().Changed("class-names") || in.shape != ""):
		return errors.New("--classes, --class-names and --idx-shape go with --idx; a table's spec declares its classes")
	}
	return nil
}

// dpppInput is the deployment's input as this party reads it.
type dpppInput struct {
	spec        *classify.Spec // nil for IDX
	note        string         // IDX: the input description a teacher's model file records
	classNames  []string
	features    int
	fingerprint [32]byte // dppp.Config.Model
}

// idxNote is how 'dppp train' describes IDX input in a model file; it is
// part of the deployment's fingerprint.
func idxNote(rows, cols int) string {
	return fmt.Sprintf("IDX images of %d×%d pixels, each pixel's uint8 value / 255, row-major", rows, cols)
}

// idxFingerprint is the model fingerprint of IDX input: SHA-256 of the
// input description and the class names.
func idxFingerprint(note string, classNames []string) [32]byte {
	return sha256.Sum256([]byte("idx\x00" + note + "\x00" + strings.Join(classNames, "\x00")))
}

// modelFingerprint returns the deployment fingerprint of a teacher's model
// file: its table spec's, or its IDX input's.
func modelFingerprint(path string, mf *classify.ModelFile) ([32]byte, error) {
	switch {
	case mf.Input != nil:
		return specFingerprint(mf.Input), nil
	case strings.HasPrefix(mf.InputNote, "IDX images"):
		return idxFingerprint(mf.InputNote, mf.ClassNames), nil
	}
	return [32]byte{}, fmt.Errorf("%s: the model records neither a table spec nor IDX input; train it with --schema or --idx-images (an external model: give 'dppp train' its --schema)", path)
}

// idxClassNames returns the declared class names of IDX input.
func (in *dpppInputFlags) idxClassNames() ([]string, error) {
	return idxClassNames(in.classNames, in.classes)
}

// idxClassNames returns the class names of IDX input: the comma-separated
// list names if given, else 0, 1, ..., classes-1.
func idxClassNames(names string, classes int) ([]string, error) {
	if names != "" {
		list := trimAll(strings.Split(names, ","))
		if len(list) < 2 {
			return nil, fmt.Errorf("--class-names %q: want at least 2 names", names)
		}
		return list, nil
	}
	if classes < 2 || classes > classify.MaxClasses {
		return nil, fmt.Errorf("--classes %d: want 2 to %d", classes, classify.MaxClasses)
	}
	list := make([]string, classes)
	for i := range list {
		list[i] = strconv.Itoa(i)
	}
	return list, nil
}

// parseShape reads ROWSxCOLS.
func parseShape(s string) (rows, cols int, err error) {
	a, b, ok := strings.Cut(strings.ToLower(strings.TrimSpace(s)), "x")
	if ok {
		rows, err = strconv.Atoi(a)
		if err == nil {
			cols, err = strconv.Atoi(b)
		}
	}
	if !ok || err != nil || rows < 1 || cols < 1 {
		return 0, 0, fmt.Errorf("--idx-shape %q: want ROWSxCOLS, e.g. 28x28", s)
	}
	return rows, cols, nil
}

// load reads the input description and, if path is not empty, the query
// rows (a table's feature columns, labels ignored; or IDX images). A table
// row with a malformed, missing, NaN or infinite value stops the read with
// file:line:column; an IDX file is checked by package idx.
func (in *dpppInputFlags) load(ctx context.Context, path string) (*dpppInput, [][]float64, error) {
	out := &dpppInput{}
	var rows [][]float64
	if !in.idx {
		s, err := classify.LoadSpec(in.spec)
		if err != nil {
			return nil, nil, err
		}
		out.spec, out.classNames, out.features, out.fingerprint = s, s.ClassNames(), s.Features(), specFingerprint(s)
		if path == "" {
			return out, nil, nil
		}
		data, _, err := s.LoadFeatures(ctx, path, dataset.Options{})
		if err != nil {
			return nil, nil, err
		}
		rows = make([][]float64, data.N())
		for i := range rows {
			rows[i] = data.Row(i)
		}
	} else {
		names, err := in.idxClassNames()
		if err != nil {
			return nil, nil, err
		}
		out.classNames = names
		var r, c int
		if path != "" {
			im, err := idx.ReadImages(path)
			if err != nil {
				return nil, nil, err
			}
			r, c = im.Rows, im.Cols
			rows = make([][]float64, im.N)
			for i := range rows {
				rows[i] = im.Row(i)
			}
			if in.shape != "" {
				if sr, sc, err := parseShape(in.shape); err != nil {
					return nil, nil, err
				} else if sr != r || sc != c {
					return nil, nil, fmt.Errorf("%s: images of %d×%d pixels, --idx-shape says %dx%d", path, r, c, sr, sc)
				}
			}
		} else {
			if in.shape == "" {
				return nil, nil, errors.New("--idx without a query file needs --idx-shape ROWSxCOLS (the teachers' image size)")
			}
			if r, c, err = parseShape(in.shape); err != nil {
				return nil, nil, err
			}
		}
		out.note, out.features = idxNote(r, c), r*c
		out.fingerprint = idxFingerprint(out.note, names)
	}
	if path != "" && len(rows) == 0 {
		return nil, nil, fmt.Errorf("%s: no query rows", path)
	}
	return out, rows, nil
}

// labelsMetaFormat identifies the file written beside LABELS.csv.
const labelsMetaFormat = "dplearn-dppp-labels"

// dpppLabelsMeta is LABELS.csv.privacy.json: the deployment's public
// parameters (the Offer every party agreed to, base64 of its binary
// encoding) and the number of labels, from which 'dppp student' recomputes
// the labels' composed guarantee, and that guarantee as written.
type dpppLabelsMeta struct {
	Format     string `json:"format"`
	Version    int    `json:"version"`
	Labels     int    `json:"labels"`
	Params     string `json:"params"`
	ParamsHash string `json:"params_hash"`
	Epsilon    string `json:"epsilon"` // rounded up
	Delta      string `json:"delta"`   // rounded up
	Accountant string `json:"accountant"`
	Note       string `json:"note"`
}

// labelsGuarantee is the composed guarantee of k labels of deployment p,
// with ε and δ rounded up.
func labelsGuarantee(p *dppp.Params, k int) (g dppp.Guarantee, eps, delta string, err error) {
	if g, err = p.Composed(k); err != nil {
		return g, "", "", err
	}
	return g, report.Up(g.Epsilon), report.Up(g.Delta), nil
}

// writeLabelsMeta writes path + ".privacy.json" for k labels of p.
func writeLabelsMeta(path string, p *dppp.Params, k int) error {
	b, err := (&dppp.Offer{Params: *p.Clone()}).MarshalBinary()
	if err != nil {
		return err
	}
	g, eps, delta, err := labelsGuarantee(p, k)
	if err != nil {
		return err
	}
	h := p.Hash()
	m := dpppLabelsMeta{Format: labelsMetaFormat, Version: 1, Labels: k, Params: base64.StdEncoding.EncodeToString(b), ParamsHash: hex.EncodeToString(h[:]),
		Epsilon: eps, Delta: delta, Accountant: g.Accountant,
		Note: "the labels are differentially private with respect to the teachers' training data (composition of the answered queries); the query rows themselves are not protected"}
	out, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return writeOutput(path+".privacy.json", os.Stdout, append(out, '\n'))
}

// readLabelsMeta reads LABELS.csv.privacy.json and returns the parameters
// it records (their hash checked) and the number of labels.
func readLabelsMeta(labelsPath string) (*dppp.Params, int, error) {
	path := labelsPath + ".privacy.json"
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, fmt.Errorf("the labels' privacy record: %w (it is written beside the labels by 'dppp query', 'dppp serve' and 'dppp simulate')", err)
	}
	var m dpppLabelsMeta
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, 0, fmt.Errorf("%s: %w", path, err)
	}
	if m.Format != labelsMetaFormat || m.Version != 1 {
		return nil, 0, fmt.Errorf("%s: format %q version %d, want %q version 1", path, m.Format, m.Version, labelsMetaFormat)
	}
	raw, err := base64.StdEncoding.DecodeString(m.Params)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: params: %w", path, err)
	}
	msg, err := dppp.Unmarshal(raw)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: params: %w", path, err)
	}
	o, ok := msg.(*dppp.Offer)
	if !ok {
		return nil, 0, fmt.Errorf("%s: params: a %s message, want an offer", path, msg.Type())
	}
	p := o.Params.Clone()
	if h := p.Hash(); hex.EncodeToString(h[:]) != m.ParamsHash {
		return nil, 0, fmt.Errorf("%s: the parameters do not match their hash %s", path, m.ParamsHash)
	}
	if m.Labels < 1 {
		return nil, 0, fmt.Errorf("%s: %d labels", path, m.Labels)
	}
	return p, m.Labels, nil
}
