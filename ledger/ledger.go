// Package ledger persists a named privacy budget to a file and charges
// releases to it: exact rational comparison with the budget (no
// tolerance), safe across goroutines and processes (an exclusive lock on
// <path>.lock, internal/filelock), each new state written atomically
// (internal/atomicfile). It does the file and OS work that the privacy
// arithmetic of package accounting does not.
package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"time"

	"github.com/dplearn/dplearn/internal/atomicfile"
	"github.com/dplearn/dplearn/internal/filelock"
	"github.com/dplearn/dplearn/internal/roundup"
)

// ErrOverBudget is returned (wrapped) by Ledger.Charge when a release would
// exceed the budget. Nothing is recorded in that case.
var ErrOverBudget = errors.New("ledger: privacy budget exceeded")

// Budget is the total privacy a ledger may spend: either (Epsilon, Delta)
// composed by basic composition, or Rho (zCDP, additive). Exactly one kind
// must be set.
type Budget struct {
	Epsilon float64 `json:"epsilon,omitempty"`
	Delta   float64 `json:"delta,omitempty"`
	Rho     float64 `json:"rho,omitempty"`
}

// String formats the budget in words.
func (b Budget) String() string {
	if b.IsZCDP() {
		return fmt.Sprintf("ρ=%g", b.Rho)
	}
	return fmt.Sprintf("ε=%g δ=%g", b.Epsilon, b.Delta)
}

// IsZCDP reports whether the budget is in ρ-zCDP.
func (b Budget) IsZCDP() bool { return b.Rho > 0 }

func (b Budget) validate() error {
	if !finite(b.Epsilon) || !finite(b.Delta) || !finite(b.Rho) || b.Epsilon < 0 || b.Delta < 0 || b.Rho < 0 || b.Delta >= 1 {
		return fmt.Errorf("ledger: invalid budget %+v (need finite ε ≥ 0, δ ∈ [0,1), ρ ≥ 0)", b)
	}
	if (b.Rho > 0) == (b.Epsilon > 0) {
		return fmt.Errorf("ledger: budget must set either ε (with δ) or ρ, got %+v", b)
	}
	if b.Rho > 0 && b.Delta != 0 {
		return fmt.Errorf("ledger: a ρ budget has no δ, got %+v", b)
	}
	return nil
}

// Charge is one recorded release.
type Charge struct {
	Label   string    `json:"label"`
	Epsilon float64   `json:"epsilon,omitempty"`
	Delta   float64   `json:"delta,omitempty"`
	Rho     float64   `json:"rho,omitempty"`
	Time    time.Time `json:"time"`
}

// State is the content of a ledger file.
type State struct {
	Name    string   `json:"name"`
	Budget  Budget   `json:"budget"`
	Charges []Charge `json:"charges"`
}

// Spent returns the total charged so far, in the budget's units: each
// component is the exact sum of the charges rounded up to a float64, so it
// is never below what was spent.
func (s State) Spent() Budget {
	e, d, r := s.spentExact()
	return Budget{Epsilon: roundup.Rat(e), Delta: roundup.Rat(d), Rho: roundup.Rat(r)}
}

// Remaining returns what is left of the budget, in its units: each
// component is the exact budget less the exact sum of the charges, rounded
// down to a float64 and never below 0, so it never overstates what
// remains (subtracting the rounded-up Spent in float64 could round up).
func (s State) Remaining() Budget {
	e, d, r := s.spentExact()
	left := func(budget float64, spent *big.Rat) float64 {
		if math.IsNaN(budget) || math.IsInf(budget, 0) {
			return 0
		}
		x := new(big.Rat).Sub(new(big.Rat).SetFloat64(budget), spent)
		if x.Sign() <= 0 {
			return 0
		}
		return -roundup.Rat(x.Neg(x)) // the largest float64 ≤ x
	}
	return Budget{Epsilon: left(s.Budget.Epsilon, e), Delta: left(s.Budget.Delta, d), Rho: left(s.Budget.Rho, r)}
}

// spentExact returns the exact sums of the charged ε, δ and ρ. The charges
// are float64 values, i.e. dyadic rationals, so their sums are computed
// without any rounding.
func (s State) spentExact() (eps, delta, rho *big.Rat) {
	eps, delta, rho = new(big.Rat), new(big.Rat), new(big.Rat)
	for _, c := range s.Charges {
		eps.Add(eps, new(big.Rat).SetFloat64(c.Epsilon))
		delta.Add(delta, new(big.Rat).SetFloat64(c.Delta))
		rho.Add(rho, new(big.Rat).SetFloat64(c.Rho))
	}
	return eps, delta, rho
}

// Ledger is a named privacy budget persisted to a file. Charges are atomic
// and safe across goroutines and processes: each Charge takes an exclusive
// lock (flock; LockFileEx on windows) on <path>.lock, re-reads the file, checks the budget, writes the new
// state to a temporary file in the same directory, fsyncs it, renames it over
// the ledger and fsyncs the directory. A process dying at any point leaves
// either the old or the new state, never a partial one, and a charge that
// returned nil is on disk. Temporary files a killed writer left behind
// (.<name>.tmp*) are removed by the next write, under the lock.
//
// One file, one lock: the path is resolved through its symbolic links when
// the ledger is opened, so a charge through a link and one through the real
// name take the same lock and replace the same file (renaming over a link
// would replace the link and fork the budget). A ledger with more than one
// hard link is refused (every read, under the lock, checks the link count):
// the rename gives the new state to one name only, so two names of one file
// would become two budgets. A hard link made during the few milliseconds
// of a write, after the check, is left by the rename on the old state; the
// write then empties that old state (every read refuses an empty ledger),
// so the link cannot be spent as a second budget either.
type Ledger struct {
	path string // the real file: symbolic links resolved
	name string // the path as given, for messages

	beforeRename func() // tests: runs between the temporary file and the rename
}

// resolveLedger returns the real path of a ledger: path with every symbolic
// link resolved, or, for a file not created yet, its resolved directory
// joined with its name. A symbolic link to a missing file is refused.
func resolveLedger(path string) (*Ledger, error) {
	if path == "" {
		return nil, errors.New("ledger: ledger path is empty")
	}
	real, err := filepath.EvalSymlinks(path)
	if err == nil {
		return &Ledger{path: real, name: path}, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("ledger: ledger %s: %w", path, err)
	}
	if st, lerr := os.Lstat(path); lerr == nil && st.Mode()&os.ModeSymlink != 0 {
		return nil, fmt.Errorf("ledger: ledger %s is a symbolic link to a missing file", path)
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("ledger: ledger %s: %w", path, err)
	}
	return &Ledger{path: filepath.Join(dir, filepath.Base(path)), name: path}, nil
}

// Path returns the ledger's real file (symbolic links resolved).
func (l *Ledger) Path() string { return l.path }

// Create creates a new ledger file with the given name and budget; it
// fails if the file exists.
func Create(ctx context.Context, path, name string, b Budget) (*Ledger, error) {
	if err := b.validate(); err != nil {
		return nil, err
	}
	l, err := resolveLedger(path)
	if err != nil {
		return nil, err
	}
	unlock, err := l.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if _, err := os.Lstat(l.path); err == nil {
		return nil, fmt.Errorf("ledger: ledger %s already exists", path)
	}
	if err := l.write(State{Name: name, Budget: b, Charges: []Charge{}}); err != nil {
		return nil, err
	}
	return l, nil
}

// Open opens an existing ledger file.
func Open(path string) (*Ledger, error) {
	l, err := resolveLedger(path)
	if err != nil {
		return nil, err
	}
	if _, err := l.read(); err != nil {
		return nil, err
	}
	return l, nil
}

// State returns the current content of the ledger.
func (l *Ledger) State(ctx context.Context) (State, error) {
	unlock, err := l.lock(ctx)
	if err != nil {
		return State{}, err
	}
	defer unlock()
	return l.read()
}

// Charge records a release costing c (Label and Time are filled in), or
// returns an error wrapping ErrOverBudget if the total would exceed the
// budget. A pure ε-DP charge (δ = 0, ρ = 0) on a ρ budget is converted to
// ρ = ε²/2 (rounded up); an (ε, δ) charge with δ > 0 on a ρ budget, or a ρ
// charge on an (ε, δ) budget, is refused (convert it explicitly first).
//
// The comparison is exact, with no tolerance (PRIVACY-NOTES item 20): the
// charges already recorded plus this one are summed as exact rationals and
// compared with the budget exactly, so the spent total never exceeds the
// budget, not even by one unit in the last place. The amounts are the
// float64 values given: 0.25 + 0.25 + 0.5 fills a budget of 1 exactly, but
// 0.1 as a float64 is 0.1000000000000000055…, so ten charges of 0.1 exceed a
// budget of 1 and the tenth is refused.
func (l *Ledger) Charge(ctx context.Context, label string, c Charge) (State, error) {
	if err := validCharge(c); err != nil {
		return State{}, err
	}
	unlock, err := l.lock(ctx)
	if err != nil {
		return State{}, err
	}
	defer unlock()
	st, err := l.read()
	if err != nil {
		return State{}, err
	}
	c, err = st.admitCharge(label, c)
	if err != nil {
		return st, err
	}
	c.Label = label
	c.Time = time.Now().UTC()
	st.Charges = append(st.Charges, c)
	if err := l.write(st); err != nil {
		return State{}, err
	}
	return st, nil
}

// CheckCharge returns nil when Charge would record c on a ledger in state
// s, and otherwise the error Charge would return (wrapping ErrOverBudget
// when the exact sums would exceed the budget). It records nothing: it is
// the check a front end makes before a release it may still call off (a
// capeFM site's LedgerChecker, a consortium node's offer), by the same
// exact rule as Charge, which calls it.
func (s State) CheckCharge(c Charge) error {
	if err := validCharge(c); err != nil {
		return err
	}
	_, err := s.admitCharge("", c)
	return err
}

// validCharge refuses a charge that is not a finite, non-negative amount
// with δ < 1.
func validCharge(c Charge) error {
	if !finite(c.Epsilon) || !finite(c.Delta) || !finite(c.Rho) || c.Epsilon < 0 || c.Delta < 0 || c.Rho < 0 || c.Delta >= 1 {
		return fmt.Errorf("ledger: invalid charge %+v", c)
	}
	return nil
}

// admitCharge is Charge's rule: it returns c in the budget's units (a pure
// ε on a ρ budget converted to ρ = ε²/2, rounded up), or the refusal. label
// only names the charge in the error ("" for a check before any release).
func (s State) admitCharge(label string, c Charge) (Charge, error) {
	if s.Budget.IsZCDP() {
		switch {
		case c.Delta > 0:
			return c, fmt.Errorf("ledger: ledger %q is in ρ-zCDP; cannot charge (ε=%v, δ=%v)", s.Name, c.Epsilon, c.Delta)
		case c.Epsilon > 0 && c.Rho == 0:
			c.Rho, c.Epsilon = roundup.Mul(c.Epsilon, c.Epsilon, 0.5), 0
			if !finite(c.Rho) {
				return c, fmt.Errorf("%w: ledger %q: ε²/2 overflows", ErrOverBudget, s.Name)
			}
		case c.Epsilon > 0:
			return c, fmt.Errorf("ledger: charge sets both ε and ρ: %+v", c)
		}
	} else if c.Rho > 0 {
		return c, fmt.Errorf("ledger: ledger %q is in (ε, δ); convert ρ=%v to (ε, δ) before charging", s.Name, c.Rho)
	}
	if s.exceeds(c) {
		spent := s.Spent()
		cost := Budget{c.Epsilon, c.Delta, c.Rho}
		if s.Budget.IsZCDP() {
			spent.Epsilon, spent.Delta = 0, 0
		}
		what := "a charge costing"
		if label != "" {
			what = fmt.Sprintf("refused %q costing", label)
		}
		return c, fmt.Errorf("%w: ledger %q: budget %v, spent %v, %s %v",
			ErrOverBudget, s.Name, s.Budget, spent, what, cost)
	}
	return c, nil
}

// exceeds reports whether the exact sums of s's charges plus c exceed the
// budget in any component: the one budget comparison of Charge and Raise.
func (s State) exceeds(c Charge) bool {
	se, sd, sr := s.spentExact()
	over := func(used *big.Rat, add, total float64) bool {
		u := new(big.Rat).Add(used, new(big.Rat).SetFloat64(add))
		return u.Cmp(new(big.Rat).SetFloat64(total)) > 0
	}
	return over(se, c.Epsilon, s.Budget.Epsilon) || over(sd, c.Delta, s.Budget.Delta) || over(sr, c.Rho, s.Budget.Rho)
}

// Raise records c as the running total of the release labelled label: the
// charge already recorded under label (the last one, if several) is
// replaced by c, or c is appended when there is none. It is for a run
// that composes its releases itself (e.g. DPPP: one entry per run holding
// the PLD-composed guarantee of all the queries answered so far), so that
// the file does not grow by one entry per release. c must be at least the
// recorded total in every component (a total only grows; otherwise an
// error). The budget check is that of Charge, exact, on the charges with
// the old total replaced by c; on refusal nothing changes.
func (l *Ledger) Raise(ctx context.Context, label string, c Charge) (State, error) {
	if err := validCharge(c); err != nil {
		return State{}, err
	}
	unlock, err := l.lock(ctx)
	if err != nil {
		return State{}, err
	}
	defer unlock()
	st, err := l.read()
	if err != nil {
		return State{}, err
	}
	at, err := st.admitRaise(label, c)
	if err != nil {
		return st, err
	}
	c.Label = label
	c.Time = time.Now().UTC()
	if at >= 0 {
		st.Charges[at] = c
	} else {
		st.Charges = append(st.Charges, c)
	}
	if err := l.write(st); err != nil {
		return State{}, err
	}
	return st, nil
}

// CheckRaise returns nil when Raise(label, c) would record c on a ledger
// in state s, and otherwise the error Raise would return (wrapping
// ErrOverBudget when over the budget). It records nothing; it is Raise's
// rule (Raise calls it), for a check before a release.
func (s State) CheckRaise(label string, c Charge) error {
	if err := validCharge(c); err != nil {
		return err
	}
	_, err := s.admitRaise(label, c)
	return err
}

// admitRaise is Raise's rule: it returns the index of the charge under
// label that c replaces (-1: c is appended), or the refusal.
func (s State) admitRaise(label string, c Charge) (int, error) {
	if s.Budget.IsZCDP() != (c.Rho > 0) || (c.Rho > 0 && (c.Epsilon > 0 || c.Delta > 0)) {
		return -1, fmt.Errorf("ledger: ledger %q (budget %v): a running total must be in the budget's units, got %+v", s.Name, s.Budget, c)
	}
	at := -1
	for i, old := range s.Charges {
		if old.Label == label {
			at = i
		}
	}
	rest := s
	if at >= 0 {
		old := s.Charges[at]
		if c.Epsilon < old.Epsilon || c.Delta < old.Delta || c.Rho < old.Rho {
			return -1, fmt.Errorf("ledger: ledger %q: the total of %q would go down from %+v to %+v", s.Name, label, old, c)
		}
		rest.Charges = append(append([]Charge(nil), s.Charges[:at]...), s.Charges[at+1:]...)
	}
	if rest.exceeds(c) {
		return -1, fmt.Errorf("%w: ledger %q: budget %v, spent %v by the others, refused %q raised to %v",
			ErrOverBudget, s.Name, s.Budget, rest.Spent(), label, Budget{c.Epsilon, c.Delta, c.Rho})
	}
	return at, nil
}

func (l *Ledger) lock(ctx context.Context) (func(), error) {
	f, err := os.OpenFile(l.path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("ledger: open ledger lock: %w", err)
	}
	for {
		ok, err := filelock.TryLock(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("ledger: lock ledger %s: %w", l.path, err)
		}
		if ok {
			break
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("ledger: waiting for ledger lock %s: %w", l.path, ctx.Err())
		case <-time.After(2 * time.Millisecond):
		}
	}
	return func() {
		filelock.Unlock(f)
		f.Close()
	}, nil
}

func (l *Ledger) read() (State, error) {
	f, err := os.Open(l.path)
	if err != nil {
		return State{}, fmt.Errorf("ledger: read ledger: %w", err)
	}
	defer f.Close()
	if n, err := filelock.LinkCount(f); err != nil {
		return State{}, fmt.Errorf("ledger: read ledger %s: %w", l.name, err)
	} else if n > 1 {
		return State{}, fmt.Errorf("ledger: ledger %s has %d hard links: a charge through one name would not be seen through the others (each write replaces the file under one name), so the budget could be spent twice; keep one name (find the others with: find / -samefile %s) and remove the rest", l.name, n, l.path)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return State{}, fmt.Errorf("ledger: read ledger: %w", err)
	}
	if len(b) == 0 {
		return State{}, fmt.Errorf("ledger: ledger %s is empty: not a ledger (a hard link made to a ledger while it was being charged is emptied, so that it cannot be spent as a second budget)", l.name)
	}
	var st State
	if err := json.Unmarshal(b, &st); err != nil {
		return State{}, fmt.Errorf("ledger: parse ledger %s: %w", l.path, err)
	}
	if err := st.Budget.validate(); err != nil {
		return State{}, fmt.Errorf("ledger: ledger %s: %w", l.path, err)
	}
	for i, c := range st.Charges {
		if !finite(c.Epsilon+c.Delta+c.Rho) || c.Epsilon < 0 || c.Delta < 0 || c.Rho < 0 {
			return State{}, fmt.Errorf("ledger: ledger %s: charge %d is invalid: %+v", l.path, i, c)
		}
	}
	return st, nil
}

func (l *Ledger) write(st State) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("ledger: encode ledger: %w", err)
	}
	// Under the lock no other writer of this ledger is running: any
	// unlocked temporary file left is a killed writer's, whatever its age.
	atomicfile.RemoveStale(l.path, 0)
	tmp, err := atomicfile.Create(l.path, 0o600)
	if err != nil {
		return fmt.Errorf("ledger: write ledger: %w", err)
	}
	defer tmp.Abort() // no-op after a successful rename
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("ledger: write ledger: %w", err)
	}
	if err := tmp.Prepare(); err != nil {
		return fmt.Errorf("ledger: sync ledger: %w", err)
	}
	// The state being replaced, held open across the rename: if another
	// name was linked to it meanwhile, that name must not keep a budget.
	old, _ := os.OpenFile(l.path, os.O_RDWR, 0)
	if old != nil {
		defer old.Close()
	}
	if l.beforeRename != nil {
		l.beforeRename()
	}
	if err := tmp.Commit(); err != nil {
		return fmt.Errorf("ledger: replace ledger: %w", err)
	}
	if old != nil {
		// After the rename the old state has no name left, unless a hard
		// link was made to it during this write (every read refuses a
		// file with two links, but not one linked between the read and
		// the rename). Empty it then, so that the other name cannot be
		// charged as a second budget: every read refuses an empty ledger.
		if n, err := filelock.LinkCount(old); err == nil && n > 0 {
			if err := old.Truncate(0); err != nil {
				return fmt.Errorf("ledger: ledger %s: a hard link to its previous state appeared during this write and could not be emptied: %w", l.name, err)
			}
			old.Sync()
		}
	}
	return nil
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
