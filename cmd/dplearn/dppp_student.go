package main

import (
	"context"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/dplearn/dplearn/classify"
	"github.com/dplearn/dplearn/dataset"
	"github.com/dplearn/dplearn/idx"
)

// dpppStudentOptions are the flags of `dplearn dppp student`.
type dpppStudentOptions struct {
	in                               dpppInputFlags
	queries, labels                  string
	testData, testImages, testLabels string
	train                            dpppTrainOptions
}

func newDPPPStudentCmd() *cobra.Command {
	var o dpppStudentOptions
	cmd := &cobra.Command{
		Use:   "student (--schema SPEC.json | --idx) --queries Q --labels LABELS.csv --model softmax|mlp --out STUDENT.json [--test-data T.csv | --test-idx-images F --test-idx-labels F]",
		Short: "Train a student model on the labels DPPP released for your queries (the PATE use of the labels)",
		Long: `student trains a model on query rows and the labels the DPPP teachers gave
them: the queries you sent ('dplearn dppp query --data Q', or 'dppp serve
--queries Q', or 'dppp simulate --queries Q') and the LABELS.csv written for
them. The student can then be published or used without the teachers, and
without spending any more of their budget.

Privacy. The labels are differentially private with respect to the teachers'
training data, and so is anything computed from them alone: the student's
guarantee is the composed guarantee of the labels it used. 'dppp query' (and
serve, simulate) writes LABELS.csv.privacy.json beside the labels: the
deployment's public parameters (the ones every party agreed to) and the
number of labels. student recomputes the composition of that many queries
with the exact privacy-loss distribution of the noisy histogram (binomial or
discrete Gaussian shares, composed over the queries), rounds ε and δ up,
prints it and writes it into the model file ("privacy"). The guarantee
protects the teachers' data; the query rows themselves are the student's
training data and are not protected. If the teachers answered other queries
too (other clients, other runs), their total spend is larger: see the
ledgers of 'dppp serve' and 'dppp teach'.

Input: the queries are read as the deployment reads them: a table through
--schema (labels in it, if any, are ignored) or IDX images with --idx. Row i
of LABELS.csv labels query row i; a label that is not a class of the spec
(or of --class-names) stops with the file, line and column. If the run
stopped early, LABELS.csv labels the first rows only, and only those are
used.

Models and their flags are those of 'dplearn dppp train' (softmax, mlp).
--test-data (a labelled table, same spec) or --test-idx-images and
--test-idx-labels give held-out rows: the student's accuracy on them is
printed.`,
		Example: `  dplearn dppp query --server agg.example.org:7443 --certs pki/client \
      --schema digits.json --data queries.csv --out labels.csv
  dplearn dppp student --schema digits.json --queries queries.csv --labels labels.csv \
      --model softmax --out student.json --test-data heldout.csv`,
		Args: cobra.NoArgs,
	}
	o.in.register(cmd, false)
	f := cmd.Flags()
	f.StringVar(&o.queries, "queries", "", "the query rows the labels answer (a table, or with --idx an IDX images file)")
	f.StringVar(&o.labels, "labels", "", "LABELS.csv from 'dppp query', 'dppp serve' or 'dppp simulate' (with LABELS.csv.privacy.json beside it)")
	f.StringVar(&o.train.model, "model", "softmax", "softmax or mlp")
	f.StringVar(&o.train.out, "out", "", "where to write the student's model file (JSON)")
	f.StringVar(&o.testData, "test-data", "", "held-out labelled table (same spec): report the student's accuracy")
	f.StringVar(&o.testImages, "test-idx-images", "", "held-out IDX images (with --idx)")
	f.StringVar(&o.testLabels, "test-idx-labels", "", "labels of --test-idx-images")
	f.IntVar(&o.train.workers, "workers", 0, "gradient goroutines (0: all cores)")
	o.train.registerModel(f)
	format := addFormatFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		fm, err := format()
		if err != nil {
			return err
		}
		if err := requireFlags(cmd, "queries", "labels", "out"); err != nil {
			return err
		}
		if err := refuseSameFileFlags(cmd, "out"); err != nil {
			return err
		}
		if err := o.in.check(cmd); err != nil {
			return err
		}
		switch {
		case o.train.model != classify.KindSoftmax && o.train.model != classify.KindMLP:
			return fmt.Errorf("--model %q: want softmax or mlp", o.train.model)
		case (o.testImages != "") != (o.testLabels != ""):
			return errors.New("--test-idx-images and --test-idx-labels go together")
		case o.testData != "" && o.in.idx:
			return errors.New("--test-data is a table: with --idx use --test-idx-images and --test-idx-labels")
		case o.testImages != "" && !o.in.idx:
			return errors.New("--test-idx-images goes with --idx")
		}
		return runDPPPStudent(cmd.Context(), cmd.OutOrStdout(), o, fm)
	}
	return cmd
}

// readDPPPLabels reads LABELS.csv (row, label[, votes...]) and maps the
// labels to class indices; row i must be i (1-based).
func readDPPPLabels(path string, classNames []string) ([]int, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	class := map[string]int{}
	for i, c := range classNames {
		class[c] = i
	}
	r := csv.NewReader(fh)
	r.FieldsPerRecord = -1
	head, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: header: %w", path, err)
	}
	if len(head) < 2 || head[0] != "row" || head[1] != "label" {
		return nil, fmt.Errorf("%s:1: header %q: want row,label[,votes_...] as 'dppp query' writes", path, head)
	}
	var labels []int
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		line, _ := r.FieldPos(0)
		if len(rec) < 2 {
			return nil, fmt.Errorf("%s:%d: %d field(s), want row,label", path, line, len(rec))
		}
		if n, err := strconv.Atoi(rec[0]); err != nil || n != len(labels)+1 {
			return nil, fmt.Errorf("%s:%d:1: column \"row\": %q, want %d (the labels of query rows 1, 2, ... in order)", path, line, rec[0], len(labels)+1)
		}
		k, ok := class[rec[1]]
		if !ok {
			return nil, fmt.Errorf("%s:%d:2: column \"label\": %q is not one of the classes %q", path, line, rec[1], classNames)
		}
		labels = append(labels, k)
	}
	if len(labels) == 0 {
		return nil, fmt.Errorf("%s: no labels", path)
	}
	return labels, nil
}

func runDPPPStudent(ctx context.Context, w io.Writer, o dpppStudentOptions, fm outputFormat) error {
	input, rows, err := o.in.load(ctx, o.queries)
	if err != nil {
		return err
	}
	labels, err := readDPPPLabels(o.labels, input.classNames)
	if err != nil {
		return err
	}
	p, k, err := readLabelsMeta(o.labels)
	if err != nil {
		return err
	}
	switch {
	case k != len(labels):
		return fmt.Errorf("%s has %d labels, its privacy record %d: not the file the record was written for", o.labels, len(labels), k)
	case len(labels) > len(rows):
		return fmt.Errorf("%s has %d labels for %d query rows in %s: not the queries they answer", o.labels, len(labels), len(rows), o.queries)
	case p.Model != input.fingerprint:
		return fmt.Errorf("the labels were given by a deployment with another input (fingerprint %x…) than --schema/--idx here (%x…)", p.Model[:6], input.fingerprint[:6])
	case p.Features != input.features || p.Classes != len(input.classNames):
		return fmt.Errorf("the deployment takes %d features and %d classes, the input here %d and %d", p.Features, p.Classes, input.features, len(input.classNames))
	}
	g, eps, delta, err := labelsGuarantee(p, len(labels))
	if err != nil {
		return err
	}
	data, err := classify.FromRows(rows[:len(labels)], labels, len(input.classNames))
	if err != nil {
		return err
	}
	var test *classify.Data
	switch {
	case o.testData != "":
		if test, _, err = input.spec.Load(ctx, o.testData, dataset.Options{}); err != nil {
			return fmt.Errorf("--test-data: %w", err)
		}
	case o.testImages != "":
		set, err := idx.ReadSet(o.testImages, o.testLabels)
		if err != nil {
			return fmt.Errorf("--test-idx-images: %w", err)
		}
		if test, err = classify.FromIDX(set, len(input.classNames)); err != nil {
			return fmt.Errorf("%s: %w", o.testLabels, err)
		}
		if idxNote(set.Images.Rows, set.Images.Cols) != input.note {
			return fmt.Errorf("--test-idx-images: images of %d×%d pixels, the queries' are %s", set.Images.Rows, set.Images.Cols, input.note)
		}
	}
	start := time.Now()
	m, desc, err := trainModel(ctx, o.train, data)
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	mf, err := classify.NewModelFile(m, input.classNames, input.spec)
	if err != nil {
		return err
	}
	if input.spec == nil {
		mf.InputNote = input.note
	}
	h := p.Hash()
	mf.Training = &classify.TrainingInfo{Rows: data.N(), Options: trainOptionsRecord(o.train)}
	mf.Privacy = &classify.PrivacyReport{Epsilon: eps, Delta: delta, Labels: len(labels), Accountant: g.Accountant,
		Source:   fmt.Sprintf("DPPP deployment %s (%d teachers, t = %d, %s noise, ε = %g, δ = %g per query)", hex.EncodeToString(h[:8]), p.N(), p.Threshold, p.Noise, p.Epsilon, p.Delta),
		Protects: "the teachers' training data (by post-processing of the labels); not the query rows the student was trained on"}
	agree, err := classify.Evaluate(ctx, classify.InProcess(m), data)
	if err != nil {
		return err
	}
	testAcc := -1.0
	if test != nil {
		if test.D != mf.Features {
			return fmt.Errorf("the held-out rows have %d features, the student %d", test.D, mf.Features)
		}
		if testAcc, err = classify.Evaluate(ctx, classify.InProcess(m), test); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := mf.Save(o.train.out); err != nil {
		return err
	}
	if fm == formatJSON {
		res := map[string]any{"model_file": o.train.out, "model": o.train.model, "description": desc, "labels": len(labels),
			"epsilon": eps, "delta": delta, "accountant": g.Accountant, "label_agreement": agree, "seconds": elapsed.Seconds()}
		if test != nil {
			res["test_rows"], res["test_accuracy"] = test.N(), testAcc
		}
		return writeJSON(w, res)
	}
	fmt.Fprintf(w, "Trained a student %s on %d labelled queries in %s\n", desc, len(labels), elapsed.Round(time.Millisecond))
	fmt.Fprintf(w, "  agreement with the noisy labels: %.4f\n", agree)
	if test != nil {
		fmt.Fprintf(w, "  held-out accuracy:               %.4f   (%s)\n", testAcc, dataset.Plural(int64(test.N()), "row"))
	}
	fmt.Fprintf(w, "Privacy: (%s, %s)-DP with respect to the teachers' data: %d labels composed by %s.\n", eps, delta, len(labels), g.Accountant)
	fmt.Fprintln(w, "  The query rows the student was trained on are not protected.")
	fmt.Fprintf(w, "Model written to %s.\n", o.train.out)
	return nil
}
