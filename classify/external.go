package classify

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The external predictor protocol (docs/teachers.md). The parent starts
// the program and talks to it in JSON lines: one JSON object per line, UTF-8,
// '\n'-terminated.
//
//  1. The program writes a handshake line:
//     {"dplearn_teacher": 1, "classes": K, "features": D, "batch": true}
//     ("batch" is optional, default false).
//  2. For each query the parent writes a request and the program writes one
//     reply, in order:
//     {"x": [D numbers]}                → {"label": k} or {"proba": [K numbers]}
//     {"batch": [[D numbers], ...]}     → {"labels": [k, ...]} or {"probas": [[K numbers], ...]}
//     (batch requests only when the handshake said "batch": true).
//     Any request may be answered {"error": "message"} instead.
//  3. The parent closes the program's stdin and kills it when done.
//
// Nothing else may be written to stdout: logs go to stderr.
const ExternalProtocolVersion = 1

// Defaults of ExternalOptions.
const (
	DefaultStartTimeout   = 60 * time.Second
	DefaultRequestTimeout = 30 * time.Second
	DefaultExternalBatch  = 256
	// MaxReplyBytes bounds one line from the program.
	MaxReplyBytes = 16 << 20
)

// ExternalOptions tunes StartExternal. The zero value gives the defaults.
type ExternalOptions struct {
	// Dir is the program's working directory ("" : the current one).
	Dir string
	// Env is the program's environment (nil: this process's).
	Env []string
	// StartTimeout bounds the wait for the handshake line (0: 60 s;
	// loading a large model can take a while).
	StartTimeout time.Duration
	// RequestTimeout bounds each request, from writing it to reading the
	// reply (0: 30 s). A request that times out kills the program: its
	// reply could no longer be matched to its request.
	RequestTimeout time.Duration
	// MaxBatch is the number of rows per batch request (0: 256).
	MaxBatch int
	// Classes and Features, when non-zero, must match the handshake.
	Classes, Features int
	// Stderr, when non-nil, receives the program's stderr as well. The
	// last 4 KiB are always kept and quoted in errors.
	Stderr io.Writer
}

// External is a running external predictor. Its methods are safe for
// concurrent use; requests are sent one at a time.
type External struct {
	argv     []string
	opt      ExternalOptions
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	stdout   io.ReadCloser
	lines    chan lineResult
	quit     chan struct{}
	exited   chan struct{} // closed after Wait returned
	waitErr  error         // valid after exited is closed
	stderr   *tailBuffer
	classes  int
	features int
	batch    bool

	mu     sync.Mutex
	broken error // set once the program is killed or gone
	closed bool
}

type lineResult struct {
	line []byte
	err  error
}

// ErrExternal wraps every failure of an external predictor.
var ErrExternal = errors.New("external teacher")

// StartExternal starts argv[0] with arguments argv[1:] (no shell) and
// reads its handshake. ctx bounds the program's lifetime: when ctx is
// cancelled the program is killed. Call Close when done.
func StartExternal(ctx context.Context, argv []string, opt ExternalOptions) (*External, error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, fmt.Errorf("%w: no command", ErrExternal)
	}
	if opt.StartTimeout <= 0 {
		opt.StartTimeout = DefaultStartTimeout
	}
	if opt.RequestTimeout <= 0 {
		opt.RequestTimeout = DefaultRequestTimeout
	}
	if opt.MaxBatch <= 0 {
		opt.MaxBatch = DefaultExternalBatch
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = opt.Dir, opt.Env
	cmd.WaitDelay = 2 * time.Second // a grandchild holding stderr cannot hang Wait
	e := &External{argv: argv, opt: opt, cmd: cmd, lines: make(chan lineResult, 1),
		quit: make(chan struct{}), exited: make(chan struct{}), stderr: &tailBuffer{max: 4096}}
	var errW io.Writer = e.stderr
	if opt.Stderr != nil {
		errW = io.MultiWriter(e.stderr, opt.Stderr)
	}
	cmd.Stderr = errW
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrExternal, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrExternal, err)
	}
	e.stdin, e.stdout = stdin, stdout
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%w: start %s: %v", ErrExternal, argv[0], err)
	}
	go e.readLoop(stdout)
	if err := e.handshake(ctx); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// readLoop hands stdout's lines to requests, then reaps the process.
func (e *External) readLoop(stdout io.Reader) {
	br := bufio.NewReaderSize(stdout, 64<<10)
	for {
		line, err := readLine(br, MaxReplyBytes)
		select {
		case e.lines <- lineResult{line, err}:
		case <-e.quit:
			err = io.EOF
		}
		if err != nil {
			break
		}
	}
	// Stop reading; the process is gone or about to be killed.
	go io.Copy(io.Discard, stdout)
	e.waitErr = e.cmd.Wait()
	close(e.exited)
}

// readLine reads one '\n'-terminated line of at most max bytes.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > max {
			return nil, fmt.Errorf("a line longer than %d bytes", max)
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			return bytes.TrimRight(line, "\r\n"), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) > 0:
			return nil, errors.New("output ends in an unterminated line")
		default:
			return nil, err
		}
	}
}

// handshakeJSON is the program's first line.
type handshakeJSON struct {
	Version  *int  `json:"dplearn_teacher"`
	Classes  *int  `json:"classes"`
	Features *int  `json:"features"`
	Batch    *bool `json:"batch"`
}

func (e *External) handshake(ctx context.Context) error {
	timer := time.NewTimer(e.opt.StartTimeout)
	defer timer.Stop()
	var lr lineResult
	select {
	case lr = <-e.lines:
	case <-timer.C:
		return e.fail(fmt.Errorf("no handshake line within %v", e.opt.StartTimeout))
	case <-ctx.Done():
		return e.fail(ctx.Err())
	}
	if lr.err != nil {
		return e.fail(e.streamErr("before its handshake", lr.err))
	}
	var h handshakeJSON
	if err := strictJSON(lr.line, &h); err != nil {
		return e.fail(fmt.Errorf("handshake %s: %v (want {\"dplearn_teacher\": 1, \"classes\": K, \"features\": D})", quoteLine(lr.line), err))
	}
	switch {
	case h.Version == nil || h.Classes == nil || h.Features == nil:
		return e.fail(fmt.Errorf("handshake %s lacks dplearn_teacher, classes or features", quoteLine(lr.line)))
	case *h.Version != ExternalProtocolVersion:
		return e.fail(fmt.Errorf("handshake declares protocol version %d; this dplearn speaks %d", *h.Version, ExternalProtocolVersion))
	case *h.Classes < 2 || *h.Classes > MaxClasses:
		return e.fail(fmt.Errorf("handshake declares %d classes (want 2 to %d)", *h.Classes, MaxClasses))
	case *h.Features < 1 || *h.Features > MaxFeatures:
		return e.fail(fmt.Errorf("handshake declares %d features (want 1 to %d)", *h.Features, MaxFeatures))
	case e.opt.Classes != 0 && *h.Classes != e.opt.Classes:
		return e.fail(fmt.Errorf("handshake declares %d classes, expected %d", *h.Classes, e.opt.Classes))
	case e.opt.Features != 0 && *h.Features != e.opt.Features:
		return e.fail(fmt.Errorf("handshake declares %d features, expected %d", *h.Features, e.opt.Features))
	}
	e.classes, e.features = *h.Classes, *h.Features
	e.batch = h.Batch != nil && *h.Batch
	return nil
}

// Classes returns the number of classes the handshake declared.
func (e *External) Classes() int { return e.classes }

// Features returns the row length the handshake declared.
func (e *External) Features() int { return e.features }

// Batch reports whether the program accepts batch requests.
func (e *External) Batch() bool { return e.batch }

// replyJSON is one reply line.
type replyJSON struct {
	Label  *json.Number     `json:"label"`
	Proba  []float64        `json:"proba"`
	Labels []json.Number    `json:"labels"`
	Probas [][]float64      `json:"probas"`
	Error  *json.RawMessage `json:"error"`
}

// PredictBatch sends the rows (in batch requests of at most MaxBatch rows
// when the program accepts batches, else one by one) and returns one label
// per row. A row of the wrong width or with a non-finite value is an error
// before anything is sent. A malformed reply, a timeout or the program's
// exit kills the program and makes this and every later call fail; an
// {"error": ...} reply fails this call only.
func (e *External) PredictBatch(ctx context.Context, X [][]float64) ([]int, error) {
	for i, x := range X {
		if err := CheckRow(x, e.features); err != nil {
			return nil, fmt.Errorf("row %d: %w", i, err)
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]int, 0, len(X))
	step := 1
	if e.batch {
		step = e.opt.MaxBatch
	}
	for lo := 0; lo < len(X); lo += step {
		rows := X[lo:min(len(X), lo+step)]
		var req any
		if e.batch {
			req = struct {
				Batch [][]float64 `json:"batch"`
			}{rows}
		} else {
			req = struct {
				X []float64 `json:"x"`
			}{rows[0]}
		}
		labels, err := e.request(ctx, req, len(rows))
		if err != nil {
			return nil, err
		}
		out = append(out, labels...)
	}
	return out, nil
}

// request sends one request and decodes its reply; e.mu is held.
func (e *External) request(ctx context.Context, req any, n int) ([]int, error) {
	if e.closed {
		return nil, fmt.Errorf("%w: closed", ErrExternal)
	}
	if e.broken != nil {
		return nil, e.broken
	}
	// Output that arrived with no request pending breaks the pairing of
	// requests and replies.
	select {
	case lr := <-e.lines:
		if lr.err != nil {
			return nil, e.fail(e.streamErr("between requests", lr.err))
		}
		return nil, e.fail(fmt.Errorf("wrote %s to stdout with no request pending (write logs to stderr, not stdout)", quoteLine(lr.line)))
	default:
	}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrExternal, err)
	}
	b = append(b, '\n')
	timer := time.NewTimer(e.opt.RequestTimeout)
	defer timer.Stop()
	wrote := make(chan error, 1)
	go func() {
		_, err := e.stdin.Write(b)
		wrote <- err
	}()
	select {
	case err := <-wrote:
		if err != nil {
			return nil, e.fail(e.streamErr("while reading a request", err))
		}
	case <-timer.C:
		return nil, e.fail(fmt.Errorf("did not read a request within %v", e.opt.RequestTimeout))
	case <-ctx.Done():
		return nil, e.fail(ctx.Err())
	}
	var lr lineResult
	select {
	case lr = <-e.lines:
	case <-timer.C:
		return nil, e.fail(fmt.Errorf("no reply within %v", e.opt.RequestTimeout))
	case <-ctx.Done():
		return nil, e.fail(ctx.Err())
	}
	if lr.err != nil {
		return nil, e.fail(e.streamErr("before replying", lr.err))
	}
	labels, replyErr, err := e.decodeReply(lr.line, n)
	if err != nil {
		return nil, e.fail(err)
	}
	if replyErr != "" {
		return nil, fmt.Errorf("%w %s: replied with an error: %s", ErrExternal, e.argv[0], replyErr)
	}
	return labels, nil
}

// decodeReply checks one reply to a request of n rows.
func (e *External) decodeReply(line []byte, n int) (labels []int, replyErr string, err error) {
	var r replyJSON
	if err := strictJSON(line, &r); err != nil {
		return nil, "", fmt.Errorf("reply %s is not a JSON reply object: %v (only protocol lines may go to stdout: write logs to stderr)", quoteLine(line), err)
	}
	if r.Error != nil {
		var msg string
		if json.Unmarshal(*r.Error, &msg) != nil {
			msg = string(*r.Error)
		}
		return nil, clip(msg, 500), nil
	}
	batch := e.batch
	var kinds []string
	for _, k := range []struct {
		ok   bool
		name string
	}{{r.Label != nil, "label"}, {r.Proba != nil, "proba"}, {r.Labels != nil, "labels"}, {r.Probas != nil, "probas"}} {
		if k.ok {
			kinds = append(kinds, k.name)
		}
	}
	want := "\"label\" or \"proba\""
	if batch {
		want = "\"labels\" or \"probas\""
	}
	if len(kinds) != 1 {
		return nil, "", fmt.Errorf("reply %s: want exactly one of %s (or \"error\")", quoteLine(line), want)
	}
	switch kinds[0] {
	case "label", "proba":
		if batch {
			return nil, "", fmt.Errorf("reply %s to a batch request: want %s", quoteLine(line), want)
		}
	default:
		if !batch {
			return nil, "", fmt.Errorf("reply %s to a single-row request: want %s", quoteLine(line), want)
		}
	}
	switch kinds[0] {
	case "label":
		k, err := e.label(*r.Label)
		return []int{k}, "", err
	case "proba":
		k, err := e.argmaxProba(r.Proba)
		return []int{k}, "", err
	case "labels":
		if len(r.Labels) != n {
			return nil, "", fmt.Errorf("reply has %d labels for %d rows", len(r.Labels), n)
		}
		out := make([]int, n)
		for i, l := range r.Labels {
			if out[i], err = e.label(l); err != nil {
				return nil, "", fmt.Errorf("row %d: %w", i, err)
			}
		}
		return out, "", nil
	default:
		if len(r.Probas) != n {
			return nil, "", fmt.Errorf("reply has %d probability vectors for %d rows", len(r.Probas), n)
		}
		out := make([]int, n)
		for i, p := range r.Probas {
			if out[i], err = e.argmaxProba(p); err != nil {
				return nil, "", fmt.Errorf("row %d: %w", i, err)
			}
		}
		return out, "", nil
	}
}

func (e *External) label(n json.Number) (int, error) {
	k, err := strconv.Atoi(n.String())
	if err != nil || k < 0 || k >= e.classes {
		return 0, fmt.Errorf("label %s is not an integer from 0 to %d", clip(n.String(), 40), e.classes-1)
	}
	return k, nil
}

// probaTolerance is how far from 1 a probability vector's sum may be.
const probaTolerance = 1e-4

func (e *External) argmaxProba(p []float64) (int, error) {
	if len(p) != e.classes {
		return 0, fmt.Errorf("%d probabilities for %d classes", len(p), e.classes)
	}
	sum := 0.0
	for _, v := range p {
		if !(v >= 0 && v <= 1) {
			return 0, fmt.Errorf("probability %v is not in [0, 1]", v)
		}
		sum += v
	}
	if math.Abs(sum-1) > probaTolerance {
		return 0, fmt.Errorf("probabilities sum to %v, not 1", sum)
	}
	return argmax(p), nil
}

// fail kills the program and records err (with the program's stderr) as
// the reason every later call fails. e.mu is held or the External is not
// yet shared.
func (e *External) fail(err error) error {
	if e.broken != nil {
		return e.broken
	}
	e.kill()
	msg := fmt.Sprintf("%v: %s: %v", ErrExternal, e.argv[0], err)
	if tail := strings.TrimSpace(e.stderr.String()); tail != "" {
		msg += "; its stderr ends with:\n" + tail
	}
	e.broken = &externalError{msg: msg, err: err}
	return e.broken
}

type externalError struct {
	msg string
	err error
}

func (x *externalError) Error() string { return x.msg }
func (x *externalError) Unwrap() []error {
	return []error{ErrExternal, x.err}
}

// streamErr describes the end of the program's stdout: its exit status
// when it has exited.
func (e *External) streamErr(when string, err error) error {
	if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrClosedPipe) && !isBrokenPipe(err) {
		return fmt.Errorf("stdout: %v", err)
	}
	select {
	case <-e.exited:
	case <-time.After(2 * time.Second):
		return fmt.Errorf("closed its stdout %s", when)
	}
	if e.waitErr != nil {
		return fmt.Errorf("exited %s (%v)", when, e.waitErr)
	}
	return fmt.Errorf("exited %s (status 0)", when)
}

func isBrokenPipe(err error) bool {
	return err != nil && strings.Contains(err.Error(), "broken pipe")
}

func (e *External) kill() {
	select {
	case <-e.quit:
	default:
		close(e.quit)
	}
	e.stdin.Close()
	if e.cmd.Process != nil {
		e.cmd.Process.Kill()
	}
	// Unblock the reader even if a grandchild still holds stdout open.
	e.stdout.Close()
}

// Close closes the program's stdin, kills it and waits for it to exit.
func (e *External) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	e.kill()
	<-e.exited
	return nil
}

// strictJSON decodes one JSON object, rejecting unknown keys and trailing
// data.
func strictJSON(line []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}

func quoteLine(b []byte) string { return strconv.Quote(clip(string(b), 120)) }

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
