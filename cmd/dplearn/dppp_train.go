package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dplearn/dplearn/classify"
	"github.com/dplearn/dplearn/dataset"
	"github.com/dplearn/dplearn/idx"
)

// dpppTrainOptions are the flags of `dplearn dppp train`.
type dpppTrainOptions struct {
	data, spec, idxImages, idxLabels, classNames string
	testData, testImages, testLabels             string
	model, out, partition                        string
	classes, workers                             int
	partitionSeed, seed                          uint64
	softmax                                      classify.SoftmaxOptions
	mlp                                          classify.MLPOptions
	epochs, batchSize                            int
	learningRate, l2                             float64
	startTimeout, requestTimeout                 time.Duration
	command                                      []string
}

func newDPPPTrainCmd() *cobra.Command {
	var o dpppTrainOptions
	cmd := &cobra.Command{
		Use:   "train (--data FILE --schema SPEC.json | --idx-images F --idx-labels F) --model softmax|mlp --out TEACHER.json  |  --model external --out TEACHER.json -- PROGRAM ARGS...",
		Short: "Train a DPPP teacher's local model on its own table (softmax, MLP, or an external program)",
		Long: `dppp train trains one teacher's classifier on that teacher's own data and
writes it to a model file (JSON, mode 0600). The file stays on the teacher's
machine: in DPPP only the teacher's noisy, encrypted votes leave it. Training
itself is not differentially private and need not be: the privacy guarantee
comes from the noise on the vote histogram.

Models:
  softmax   multinomial logistic regression with an L2 penalty (--l2, default
            0.001). --solver lbfgs runs full-batch L-BFGS; sgd runs mini-batch
            Adam for --epochs passes (default 5) with a linearly decaying step;
            auto (default) picks L-BFGS up to 10^7 rows × features, else SGD.
  mlp       one hidden layer (--hidden 100 units, --activation relu|tanh),
            softmax output, mini-batch Adam (--optimizer adam, step 0.001) or
            momentum SGD; --epochs 0 picks about 2,000 steps (10 to 100 passes).
  external  any program speaking the JSON-lines protocol of docs/teachers.md
            (a scikit-learn or PyTorch model): give its command after "--".
            It is started, its handshake checked and, with --data, its accuracy
            measured; the model file records the command.

Input, one of:
  --data FILE --schema SPEC.json   a CSV (.gz) or Parquet table. The spec is a
      schema file (see the README) whose target declares its public classes:
        {"target": {"name": "digit", "classes": ["0","1","2","3","4","5","6","7","8","9"]},
         "features": [{"name": "p0", "range": [0, 16]}, ...]}
      A binary schema (positive label, or a 0/1 column) also works. Numeric
      features are clipped to their declared range and mapped onto [-1, 1];
      categories become indicators. A label not in the list stops training
      with file:line:column.
  --idx-images F --idx-labels F    MNIST-format IDX files (.gz or not); pixels
      are scaled to [0, 1]. --classes gives the public number of classes
      (default 10), --class-names their names. Fashion-MNIST, from the Debian
      package dataset-fashion-mnist, is in ` + idx.DebianFashionMNIST + `/
      (train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, t10k-...).

--partition I/N trains on part I (1 to N) of the table split into N disjoint
parts of nearly equal size by a permutation drawn from --partition-seed: the
DPPP experiments' setting, where each of N teachers holds one part. Teachers
that use the same N and seed hold disjoint parts.

The training accuracy (and the test accuracy with --test-data or
--test-idx-images/--test-idx-labels) is printed on this console only: it
describes private data and is not written to the model file.

Training is deterministic for a given --seed. Ctrl-C stops it and writes
nothing.`,
		Example: `  # a digits teacher holding part 3 of 10 (embedded data: exampledata/classify/)
  dplearn dppp train --data digits.csv.gz --schema digits.json --partition 3/10 \
      --model softmax --out teacher3.json

  # one Fashion-MNIST teacher of 250, an MLP
  dplearn dppp train --idx-images /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz \
      --idx-labels /usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz \
      --partition 1/250 --model mlp --hidden 100 --out teacher1.json

  # a scikit-learn model behind the JSON-lines protocol
  dplearn dppp train --model external --data test.csv --schema spec.json \
      --out teacher.json -- python3 teacher.py --model clf.joblib`,
	}
	f := cmd.Flags()
	f.StringVar(&o.data, "data", "", "training table (CSV, CSV.gz or Parquet)")
	f.StringVar(&o.spec, "schema", "", "spec: schema file whose target lists its classes")
	f.StringVar(&o.idxImages, "idx-images", "", "training images, IDX format (instead of --data)")
	f.StringVar(&o.idxLabels, "idx-labels", "", "training labels, IDX format")
	f.IntVar(&o.classes, "classes", 10, "IDX input: the public number of classes")
	f.StringVar(&o.classNames, "class-names", "", "IDX input: comma-separated class names (default 0, 1, ...)")
	f.StringVar(&o.testData, "test-data", "", "also report accuracy on this table (same spec)")
	f.StringVar(&o.testImages, "test-idx-images", "", "also report accuracy on these IDX images")
	f.StringVar(&o.testLabels, "test-idx-labels", "", "labels of --test-idx-images")
	f.StringVar(&o.model, "model", "", "softmax, mlp or external")
	f.StringVar(&o.out, "out", "", "where to write the teacher's model file (JSON)")
	f.StringVar(&o.partition, "partition", "", "train on part I of N disjoint parts: I/N, e.g. 3/250")
	f.Uint64Var(&o.partitionSeed, "partition-seed", 1, "seed of the permutation that --partition splits")
	o.registerModel(f)
	f.DurationVar(&o.startTimeout, "start-timeout", 0, "external: wait for the handshake at most this long (0: 60s)")
	f.DurationVar(&o.requestTimeout, "request-timeout", 0, "external: wait for each reply at most this long (0: 30s)")
	f.IntVar(&o.workers, "workers", 0, "parsing and gradient goroutines (0: all cores)")
	format := addFormatFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		fm, err := format()
		if err != nil {
			return err
		}
		if dash := cmd.ArgsLenAtDash(); dash >= 0 {
			if dash > 0 {
				return fmt.Errorf("unexpected argument %q before --", args[0])
			}
			o.command = args
		} else if len(args) > 0 {
			return fmt.Errorf("unexpected argument %q (an external program's command goes after --)", args[0])
		}
		if err := requireFlags(cmd, "model", "out"); err != nil {
			return err
		}
		if err := refuseSameFileFlags(cmd, "out"); err != nil {
			return err
		}
		return runDPPPTrain(cmd.Context(), cmd, o, fm)
	}
	return cmd
}

// registerModel adds the built-in models' hyperparameter flags (shared by
// 'dppp train' and 'dppp student').
func (o *dpppTrainOptions) registerModel(f *pflag.FlagSet) {
	f.Uint64Var(&o.seed, "seed", 1, "seed of initial weights and mini-batch order")
	f.StringVar(&o.softmax.Solver, "solver", "auto", "softmax: auto, lbfgs or sgd")
	f.IntVar(&o.softmax.MaxIterations, "max-iterations", 0, "softmax L-BFGS: iteration cap (0: 100)")
	f.IntVar(&o.mlp.Hidden, "hidden", 100, "mlp: hidden units")
	f.StringVar(&o.mlp.Activation, "activation", "relu", "mlp: relu or tanh")
	f.StringVar(&o.mlp.Optimizer, "optimizer", "adam", "mlp: adam or momentum")
	f.Float64Var(&o.mlp.Momentum, "momentum", 0, "mlp --optimizer momentum: momentum (0: 0.9)")
	f.IntVar(&o.epochs, "epochs", 0, "passes over the data for SGD/Adam (0: softmax 5; mlp about 2,000 steps)")
	f.IntVar(&o.batchSize, "batch-size", 0, "rows per step (0: 64)")
	f.Float64Var(&o.learningRate, "learning-rate", 0, "step size (0: softmax 0.01, mlp adam 0.001, momentum 0.01)")
	f.Float64Var(&o.l2, "l2", 0, "L2 penalty λ on the weights (0: softmax 0.001, mlp 0.0001; negative: none)")
}

// trainInput is a loaded training (or test) set and how it was read.
type trainInput struct {
	data       *classify.Data
	spec       *classify.Spec
	classNames []string
	note       string // input description for IDX
	source     string
}

func (o *dpppTrainOptions) checkInput(cmd *cobra.Command) error {
	table := o.data != "" || o.spec != ""
	images := o.idxImages != "" || o.idxLabels != ""
	switch {
	case table && images:
		return errors.New("give either --data/--schema or --idx-images/--idx-labels, not both")
	case o.data != "" && o.spec == "":
		return errors.New("--data needs --schema")
	case o.spec != "" && o.data == "" && o.model != classify.KindExternal:
		return errors.New("--schema needs --data (training data)")
	case images && (o.idxImages == "" || o.idxLabels == ""):
		return errors.New("--idx-images and --idx-labels go together")
	case !table && !images && o.model != classify.KindExternal:
		return fmt.Errorf("no training data: give --data FILE --schema SPEC.json or --idx-images F --idx-labels F (see %s --help)", cmd.CommandPath())
	case (o.testImages != "") != (o.testLabels != ""):
		return errors.New("--test-idx-images and --test-idx-labels go together")
	case o.testData != "" && o.spec == "":
		return errors.New("--test-data needs --schema")
	case o.testImages != "" && table:
		return errors.New("--test-idx-images goes with IDX training input; use --test-data for tables")
	case o.testData != "" && images:
		return errors.New("--test-data goes with table input; use --test-idx-images/--test-idx-labels for IDX")
	}
	if cmd.Flags().Changed("classes") || cmd.Flags().Changed("class-names") {
		if !images && o.testImages == "" {
			return errors.New("--classes and --class-names apply to IDX input; a table's spec declares its classes")
		}
	}
	return nil
}

// idxClassNames returns the declared class names of IDX input.
func (o *dpppTrainOptions) idxClassNames() ([]string, error) {
	return idxClassNames(o.classNames, o.classes)
}

func loadIDXInput(images, labels string, names []string) (*trainInput, error) {
	set, err := idx.ReadSet(images, labels)
	if err != nil {
		return nil, err
	}
	d, err := classify.FromIDX(set, len(names))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", labels, err)
	}
	note := idxNote(set.Images.Rows, set.Images.Cols)
	return &trainInput{data: d, classNames: names, note: note, source: filepath.Base(images)}, nil
}

// parsePartition reads "I/N".
func parsePartition(s string) (i, n int, err error) {
	a, b, ok := strings.Cut(s, "/")
	if ok {
		i, err = strconv.Atoi(strings.TrimSpace(a))
		if err == nil {
			n, err = strconv.Atoi(strings.TrimSpace(b))
		}
	}
	if !ok || err != nil || n < 1 || i < 1 || i > n {
		return 0, 0, fmt.Errorf("--partition %q: want I/N with 1 ≤ I ≤ N, e.g. 3/250", s)
	}
	return i, n, nil
}

func runDPPPTrain(ctx context.Context, cmd *cobra.Command, o dpppTrainOptions, format outputFormat) error {
	switch o.model {
	case classify.KindSoftmax, classify.KindMLP:
		if len(o.command) > 0 {
			return fmt.Errorf("a command after -- is for --model external, not %s", o.model)
		}
	case classify.KindExternal:
		if len(o.command) == 0 {
			return errors.New("--model external needs the program after --, e.g. -- python3 teacher.py")
		}
		if o.partition != "" && o.data == "" && o.idxImages == "" {
			return errors.New("--partition needs training data")
		}
	default:
		return fmt.Errorf("--model %q: want softmax, mlp or external", o.model)
	}
	if err := o.checkInput(cmd); err != nil {
		return err
	}
	var part, parts int
	if o.partition != "" {
		var err error
		if part, parts, err = parsePartition(o.partition); err != nil {
			return err
		}
	}
	opt := dataset.Options{Workers: o.workers, Progress: stderrProgress(cmd)}
	var in *trainInput
	var spec *classify.Spec
	if o.spec != "" {
		var err error
		if spec, err = classify.LoadSpec(o.spec); err != nil {
			return err
		}
	}
	switch {
	case o.data != "":
		d, _, err := spec.Load(ctx, o.data, opt)
		if err != nil {
			return err
		}
		in = &trainInput{data: d, spec: spec, classNames: spec.ClassNames(), source: filepath.Base(o.data)}
	case o.idxImages != "":
		names, err := o.idxClassNames()
		if err != nil {
			return err
		}
		if in, err = loadIDXInput(o.idxImages, o.idxLabels, names); err != nil {
			return err
		}
	}
	var info classify.TrainingInfo
	if in != nil && parts > 0 {
		idxs, err := classify.Partition(in.data.N(), parts, o.partitionSeed)
		if err != nil {
			return fmt.Errorf("--partition %s: %w", o.partition, err)
		}
		in.data = in.data.Subset(idxs[part-1])
		info.Partition = fmt.Sprintf("%d/%d (seed %d)", part, parts, o.partitionSeed)
	}
	var test *trainInput
	switch {
	case o.testData != "":
		d, _, err := spec.Load(ctx, o.testData, opt)
		if err != nil {
			return fmt.Errorf("--test-data: %w", err)
		}
		test = &trainInput{data: d, source: filepath.Base(o.testData)}
	case o.testImages != "":
		names := []string(nil)
		if in != nil {
			names = in.classNames
		} else {
			var err error
			if names, err = o.idxClassNames(); err != nil {
				return err
			}
		}
		var err error
		if test, err = loadIDXInput(o.testImages, o.testLabels, names); err != nil {
			return fmt.Errorf("--test-idx-images: %w", err)
		}
	}

	start := time.Now()
	var mf *classify.ModelFile
	var pred classify.Predictor
	var desc string
	switch o.model {
	case classify.KindExternal:
		var err error
		if mf, pred, desc, err = startExternalTeacher(ctx, o, in, spec); err != nil {
			return err
		}
		defer pred.Close()
	default:
		m, d, err := trainModel(ctx, o, in.data)
		if err != nil {
			return err
		}
		desc = d
		if mf, err = classify.NewModelFile(m, in.classNames, in.spec); err != nil {
			return err
		}
		if in.spec == nil {
			mf.InputNote = in.note
		}
		info.Rows = in.data.N()
		info.Options = trainOptionsRecord(o)
		mf.Training = &info
		pred = classify.InProcess(m)
	}
	elapsed := time.Since(start)

	res := map[string]any{"model_file": o.out, "model": o.model, "description": desc,
		"classes": mf.ClassNames, "features": mf.Features, "seconds": elapsed.Seconds()}
	var trainAcc, testAcc float64 = -1, -1
	if in != nil {
		acc, err := classify.Evaluate(ctx, pred, in.data)
		if err != nil {
			return err
		}
		trainAcc = acc
		res["rows"], res["training_accuracy"] = in.data.N(), acc
	}
	if test != nil {
		if test.data.D != mf.Features {
			return fmt.Errorf("test data have %d features, the model %d", test.data.D, mf.Features)
		}
		acc, err := classify.Evaluate(ctx, pred, test.data)
		if err != nil {
			return err
		}
		testAcc = acc
		res["test_rows"], res["test_accuracy"] = test.data.N(), acc
	}
	if info.Partition != "" {
		res["partition"] = info.Partition
	}
	if err := ctx.Err(); err != nil {
		return err // interrupted: write nothing
	}
	if err := mf.Save(o.out); err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	if format == formatJSON {
		return writeJSON(w, res)
	}
	printTrainText(w, o, in, test, desc, mf, info, elapsed, trainAcc, testAcc)
	return nil
}

func printTrainText(w io.Writer, o dpppTrainOptions, in, test *trainInput, desc string, mf *classify.ModelFile, info classify.TrainingInfo, elapsed time.Duration, trainAcc, testAcc float64) {
	if in != nil {
		fmt.Fprintf(w, "Trained %s on %s × %d features of %s", desc, dataset.Plural(int64(in.data.N()), "row"), in.data.D, in.source)
		if info.Partition != "" {
			fmt.Fprintf(w, ", part %s", info.Partition)
		}
		fmt.Fprintf(w, ", %d classes, in %s\n", len(mf.ClassNames), elapsed.Round(time.Millisecond))
		fmt.Fprintf(w, "  training accuracy: %.4f   (shown on this console only: it describes private data)\n", trainAcc)
	} else {
		fmt.Fprintf(w, "Checked %s: %d classes, %d features\n", desc, len(mf.ClassNames), mf.Features)
	}
	if test != nil {
		fmt.Fprintf(w, "  test accuracy:     %.4f   (%s of %s)\n", testAcc, dataset.Plural(int64(test.data.N()), "row"), test.source)
	}
	fmt.Fprintf(w, "Model written to %s (mode 0600). Keep it on this machine: in DPPP only noisy votes leave it.\n", o.out)
}

// trainModel trains the built-in model the flags ask for.
func trainModel(ctx context.Context, o dpppTrainOptions, d *classify.Data) (classify.Model, string, error) {
	switch o.model {
	case classify.KindSoftmax:
		so := o.softmax
		so.Epochs, so.BatchSize, so.LearningRate, so.L2, so.Seed, so.Workers = o.epochs, o.batchSize, o.learningRate, o.l2, o.seed, o.workers
		if so.Solver == classify.SolverAuto || so.Solver == "" {
			so.Solver = classify.AutoSolver(d.N(), d.D)
		}
		m, err := classify.TrainSoftmax(ctx, d, so)
		l2 := so.L2
		if l2 == 0 {
			l2 = classify.DefaultSoftmaxL2
		}
		desc := fmt.Sprintf("softmax regression (%s, L2 %g)", so.Solver, max(l2, 0))
		return m, desc, err
	default:
		mo := o.mlp
		mo.Epochs, mo.BatchSize, mo.LearningRate, mo.L2, mo.Seed = o.epochs, o.batchSize, o.learningRate, o.l2, o.seed
		m, err := classify.TrainMLP(ctx, d, mo)
		desc := fmt.Sprintf("MLP (%d %s units, %s)", mo.Hidden, mo.Activation, mo.Optimizer)
		return m, desc, err
	}
}

// trainOptionsRecord lists the hyperparameters for the model file.
func trainOptionsRecord(o dpppTrainOptions) map[string]any {
	r := map[string]any{"seed": o.seed, "epochs": o.epochs, "batch_size": o.batchSize,
		"learning_rate": o.learningRate, "l2": o.l2}
	switch o.model {
	case classify.KindSoftmax:
		r["solver"], r["max_iterations"] = o.softmax.Solver, o.softmax.MaxIterations
	case classify.KindMLP:
		r["hidden"], r["activation"], r["optimizer"], r["momentum"] = o.mlp.Hidden, o.mlp.Activation, o.mlp.Optimizer, o.mlp.Momentum
	}
	return r
}

// startExternalTeacher starts the external program, checks its handshake
// against the input, and returns the model file that records it.
func startExternalTeacher(ctx context.Context, o dpppTrainOptions, in *trainInput, spec *classify.Spec) (*classify.ModelFile, classify.Predictor, string, error) {
	eo := classify.ExternalOptions{StartTimeout: o.startTimeout, RequestTimeout: o.requestTimeout}
	var names []string
	switch {
	case in != nil:
		names = in.classNames
		eo.Classes, eo.Features = len(names), in.data.D
	case spec != nil:
		names = spec.ClassNames()
		eo.Classes, eo.Features = spec.Classes(), spec.Features()
	}
	e, err := classify.StartExternal(ctx, o.command, eo)
	if err != nil {
		return nil, nil, "", err
	}
	if names == nil {
		names = make([]string, e.Classes())
		for i := range names {
			names[i] = strconv.Itoa(i)
		}
	}
	cfg := &classify.ExternalConfig{Command: o.command}
	if o.startTimeout > 0 {
		cfg.StartTimeout = o.startTimeout.String()
	}
	if o.requestTimeout > 0 {
		cfg.RequestTimeout = o.requestTimeout.String()
	}
	mf := &classify.ModelFile{Format: classify.FileFormat, Version: classify.FileVersion, Kind: classify.KindExternal,
		ClassNames: names, Features: e.Features(), Input: spec, External: cfg}
	if in != nil && spec == nil {
		mf.InputNote = in.note
	}
	if err := mf.Validate(); err != nil {
		e.Close()
		return nil, nil, "", err
	}
	return mf, e, fmt.Sprintf("external teacher %q", strings.Join(o.command, " ")), nil
}
