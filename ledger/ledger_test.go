package ledger

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/dplearn/dplearn/internal/roundup"
)

func TestLedgerChargesAndRefuses(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "budget.json")
	l, err := Create(ctx, path, "trial", Budget{Epsilon: 1, Delta: 1e-5})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Create(ctx, path, "again", Budget{Epsilon: 1}); err == nil {
		t.Fatal("ledger overwritten")
	}
	if _, err := l.Charge(ctx, "a", Charge{Epsilon: 0.6, Delta: 5e-6}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Charge(ctx, "b", Charge{Epsilon: 0.5}); !errors.Is(err, ErrOverBudget) {
		t.Fatalf("over-budget ε accepted: %v", err)
	}
	if _, err := l.Charge(ctx, "c", Charge{Epsilon: 0.1, Delta: 6e-6}); !errors.Is(err, ErrOverBudget) {
		t.Fatalf("over-budget δ accepted: %v", err)
	}
	if _, err := l.Charge(ctx, "d", Charge{Rho: 0.1}); err == nil {
		t.Fatal("ρ charge on (ε,δ) ledger accepted")
	}
	st, err := l.Charge(ctx, "e", Charge{Epsilon: 0.4, Delta: 5e-6})
	if err != nil {
		t.Fatal(err)
	}
	// Reopen from disk: charges persisted.
	l2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	st2, _ := l2.State(ctx)
	if len(st2.Charges) != 2 || len(st.Charges) != 2 || st2.Charges[1].Label != "e" {
		t.Fatalf("persisted state %+v", st2)
	}
	for _, bad := range []Charge{{Epsilon: -1}, {Delta: 2}} {
		if _, err := l.Charge(ctx, "bad", bad); err == nil {
			t.Errorf("charge %+v accepted", bad)
		}
	}
}

// TestLedgerExact: no tolerance (PRIVACY-NOTES item 20). Charges summing
// exactly to the budget are accepted; one ulp more is refused; the old
// relative 1e-9 overspend is refused; Spent never rounds down.
func TestLedgerExact(t *testing.T) {
	ctx := context.Background()
	l, err := Create(ctx, filepath.Join(t.TempDir(), "exact.json"), "exact", Budget{Epsilon: 1, Delta: 1e-5})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Charge(ctx, "a", Charge{Epsilon: 0.25, Delta: 2.5e-6}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Charge(ctx, "b", Charge{Epsilon: 0.25, Delta: 2.5e-6}); err != nil {
		t.Fatal(err)
	}
	// 0.5 + 1 ulp would overspend ε by one ulp of 0.5.
	if _, err := l.Charge(ctx, "ulp", Charge{Epsilon: math.Nextafter(0.5, 1)}); !errors.Is(err, ErrOverBudget) {
		t.Fatalf("ε overspend by one ulp accepted: %v", err)
	}
	// δ: 2·2.5e-6 + 5e-6 = 1e-5 exactly in binary (2.5e-6 = 1e-5/4), one ulp more is refused.
	if _, err := l.Charge(ctx, "ulp δ", Charge{Epsilon: 0.5, Delta: math.Nextafter(5e-6, 1)}); !errors.Is(err, ErrOverBudget) {
		t.Fatalf("δ overspend by one ulp accepted: %v", err)
	}
	st, err := l.Charge(ctx, "c", Charge{Epsilon: 0.5, Delta: 5e-6})
	if err != nil {
		t.Fatalf("charges summing exactly to the budget refused: %v", err)
	}
	if sp := st.Spent(); sp.Epsilon != 1 || sp.Delta != 1e-5 {
		t.Fatalf("spent %+v", sp)
	}
	if _, err := l.Charge(ctx, "tiny", Charge{Epsilon: 5e-324}); !errors.Is(err, ErrOverBudget) {
		t.Fatalf("smallest positive ε on a full budget accepted: %v", err)
	}
	// A relative 1e-9 overspend passed before.
	l2, _ := Create(ctx, filepath.Join(t.TempDir(), "tol.json"), "tol", Budget{Epsilon: 1})
	if _, err := l2.Charge(ctx, "over", Charge{Epsilon: 1 + 1e-10}); !errors.Is(err, ErrOverBudget) {
		t.Fatalf("relative 1e-10 overspend accepted: %v", err)
	}
	// Ten charges of the float64 0.1 (each 0.1000000000000000055…) exceed 1.
	for i := 0; i < 9; i++ {
		if _, err := l2.Charge(ctx, "tenth", Charge{Epsilon: 0.1}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l2.Charge(ctx, "tenth", Charge{Epsilon: 0.1}); !errors.Is(err, ErrOverBudget) {
		t.Fatalf("10 × 0.1 > 1 accepted: %v", err)
	}
	// Spent is the exact sum rounded up: 9 × 0.1 exactly is above 0.9 (float).
	st2, _ := l2.State(ctx)
	exact := new(big.Rat)
	for range 9 {
		exact.Add(exact, new(big.Rat).SetFloat64(0.1))
	}
	if sp := st2.Spent().Epsilon; new(big.Rat).SetFloat64(sp).Cmp(exact) < 0 || math.Nextafter(sp, 0) >= roundup.Rat(exact) {
		t.Fatalf("spent %v is not the exact sum rounded up", sp)
	}
	// ρ: a pure ε charge converts to ε²/2 rounded up.
	l3, _ := Create(ctx, filepath.Join(t.TempDir(), "rho.json"), "rho", Budget{Rho: 0.5})
	if _, err := l3.Charge(ctx, "over", Charge{Epsilon: math.Nextafter(1, 2)}); !errors.Is(err, ErrOverBudget) {
		t.Fatalf("ε = 1+ulp (ρ > 0.5) accepted: %v", err)
	}
	if _, err := l3.Charge(ctx, "exact", Charge{Epsilon: 1}); err != nil {
		t.Fatalf("ε = 1 (ρ = 0.5 exactly) refused: %v", err)
	}
	if _, err := l3.Charge(ctx, "huge", Charge{Epsilon: 1e300}); !errors.Is(err, ErrOverBudget) {
		t.Fatalf("overflowing ε²/2: %v", err)
	}
}

func TestLedgerZCDP(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "rho.json")
	l, err := Create(ctx, path, "rho", Budget{Rho: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Charge(ctx, "pure", Charge{Epsilon: 0.6}); err != nil { // ρ = 0.18
		t.Fatal(err)
	}
	if _, err := l.Charge(ctx, "gauss", Charge{Rho: 0.3}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Charge(ctx, "more", Charge{Rho: 0.03}); !errors.Is(err, ErrOverBudget) {
		t.Fatalf("want over budget, got %v", err)
	}
	if _, err := l.Charge(ctx, "approx", Charge{Epsilon: 0.1, Delta: 1e-6}); err == nil {
		t.Fatal("(ε,δ) charge on ρ ledger accepted")
	}
	if _, err := Create(ctx, filepath.Join(t.TempDir(), "x"), "x", Budget{Epsilon: 1, Rho: 1}); err == nil {
		t.Fatal("mixed budget accepted")
	}
}

// 40 goroutines each charge ε = 0.05 against a budget of 1: exactly 20 succeed.
func TestLedgerConcurrentGoroutines(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "budget.json")
	if _, err := Create(ctx, path, "conc", Budget{Epsilon: 1}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			l, err := Open(path)
			if err != nil {
				t.Error(err)
				return
			}
			_, err = l.Charge(ctx, fmt.Sprint("g", i), Charge{Epsilon: 0.0625}) // 1/16, exact
			if err == nil {
				mu.Lock()
				ok++
				mu.Unlock()
			} else if !errors.Is(err, ErrOverBudget) {
				t.Error(err)
			}
		}(i)
	}
	wg.Wait()
	l, _ := Open(path)
	st, _ := l.State(ctx)
	if ok != 16 || len(st.Charges) != 16 {
		t.Fatalf("%d charges succeeded, %d recorded; want 16", ok, len(st.Charges))
	}
}

// Child processes charge the same ledger concurrently.
func TestLedgerConcurrentProcesses(t *testing.T) {
	if p := os.Getenv("DPLEARN_LEDGER_CHILD"); p != "" {
		l, err := Open(p)
		if err != nil {
			os.Exit(3)
		}
		n := 0
		for i := 0; i < 10; i++ {
			if _, err := l.Charge(context.Background(), "child", Charge{Epsilon: 0.125}); err == nil {
				n++
			}
		}
		fmt.Print(n)
		os.Exit(0)
	}
	if testing.Short() {
		t.Skip("spawns processes")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "budget.json")
	if _, err := Create(ctx, path, "procs", Budget{Epsilon: 2.5}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	outs := make([][]byte, 4)
	for i := range outs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run=^TestLedgerConcurrentProcesses$")
			cmd.Env = append(os.Environ(), "DPLEARN_LEDGER_CHILD="+path)
			out, err := cmd.Output()
			if err != nil {
				t.Errorf("child %d: %v", i, err)
			}
			outs[i] = out
		}(i)
	}
	wg.Wait()
	total := 0
	for _, o := range outs {
		var n int
		fmt.Sscan(string(o), &n)
		total += n
	}
	l, _ := Open(path)
	st, _ := l.State(ctx)
	if total != 20 || len(st.Charges) != 20 {
		t.Fatalf("children charged %d, ledger has %d; want 20", total, len(st.Charges))
	}
}

func TestLedgerContextCancelled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "budget.json")
	l, err := Create(context.Background(), path, "ctx", Budget{Epsilon: 1})
	if err != nil {
		t.Fatal(err)
	}
	unlock, err := l.lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Charge(ctx, "x", Charge{Epsilon: 0.1}); !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
}

func TestLedgerCorruptFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "budget.json")
	os.WriteFile(path, []byte("{not json"), 0o600)
	if _, err := Open(path); err == nil {
		t.Fatal("corrupt ledger opened")
	}
}

// A process killed (SIGKILL) in the middle of charging leaves a ledger that
// parses and holds every charge that the child reported as done, except
// possibly the very last one in flight.
func TestLedgerSurvivesKilledProcess(t *testing.T) {
	if p := os.Getenv("DPLEARN_LEDGER_LOOP"); p != "" {
		l, err := Open(p)
		if err != nil {
			os.Exit(3)
		}
		for i := 0; ; i++ {
			if _, err := l.Charge(context.Background(), "loop", Charge{Epsilon: 1e-6}); err != nil {
				os.Exit(4)
			}
			fmt.Println(i + 1) // charges known to be on disk
		}
	}
	if testing.Short() {
		t.Skip("spawns and kills a process")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "budget.json")
	if _, err := Create(ctx, path, "kill", Budget{Epsilon: 100}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestLedgerSurvivesKilledProcess$")
	cmd.Env = append(os.Environ(), "DPLEARN_LEDGER_LOOP="+path)
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Read until some charges are done, kill without warning, then drain
	// the lines the child wrote before dying.
	sc := bufio.NewScanner(pipe)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) == 20 {
			cmd.Process.Kill()
		}
	}
	cmd.Wait()
	if len(lines) == 0 {
		t.Fatal("child made no charge")
	}
	var reported int
	fmt.Sscan(lines[len(lines)-1], &reported)
	l, err := Open(path)
	if err != nil {
		t.Fatalf("ledger corrupt after kill: %v", err)
	}
	st, err := l.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(st.Charges); n < reported || n > reported+1 {
		t.Fatalf("ledger has %d charges, child reported %d", n, reported)
	}
}

// A damaged ledger file is refused with an error, never a panic or a
// negative spend.
func FuzzOpenLedger(f *testing.F) {
	f.Add([]byte(`{"name":"x","budget":{"epsilon":1},"charges":[]}`))
	f.Add([]byte(`{"name":"x","budget":{"epsilon":1},"charges":[{"epsilon":-1}]}`))
	f.Add([]byte(`{"name":"x","budget":{"rho":1,"delta":0.1},"charges":null}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "l.json")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		l, err := Open(path)
		if err != nil {
			return
		}
		st, err := l.State(context.Background())
		if err != nil {
			return
		}
		s := st.Spent()
		if s.Epsilon < 0 || s.Delta < 0 || s.Rho < 0 {
			t.Fatalf("negative spend from %q", data)
		}
	})
}

// TestLedgerLinksShareOneBudget charges ε = 1 twice against a budget of 1,
// once through each name of one ledger: a symbolic link to the file, a
// symbolic link to its directory, or a hard link. The second charge must be
// refused (symbolic links resolve to one file and one lock) or, for a hard
// link, every charge is refused: the rename would give the new state to one
// name only, forking the budget.
func TestLedgerLinksShareOneBudget(t *testing.T) {
	ctx := context.Background()
	for _, kind := range []string{"symlink", "dir-symlink", "hardlink"} {
		t.Run(kind, func(t *testing.T) {
			root := t.TempDir()
			realDir := filepath.Join(root, "real")
			if err := os.Mkdir(realDir, 0o700); err != nil {
				t.Fatal(err)
			}
			realPath := filepath.Join(realDir, "budget.json")
			if _, err := Create(ctx, realPath, "site", Budget{Epsilon: 1, Delta: 1e-5}); err != nil {
				t.Fatal(err)
			}
			var link string
			var err error
			switch kind {
			case "symlink":
				link = filepath.Join(root, "link.json")
				err = os.Symlink(realPath, link)
			case "dir-symlink":
				err = os.Symlink(realDir, filepath.Join(root, "alias"))
				link = filepath.Join(root, "alias", "budget.json")
			case "hardlink":
				link = filepath.Join(root, "link.json")
				err = os.Link(realPath, link)
			}
			if err != nil {
				t.Fatal(err)
			}
			charge := func(p string) error {
				l, err := Open(p)
				if err != nil {
					return err
				}
				_, err = l.Charge(ctx, "fit", Charge{Epsilon: 1})
				return err
			}
			first, second := charge(link), charge(realPath)
			if kind == "hardlink" {
				if first == nil || second == nil || !strings.Contains(first.Error(), "hard links") {
					t.Fatalf("a hard-linked ledger was charged: %v, %v", first, second)
				}
				return
			}
			if first != nil {
				t.Fatalf("first charge through the link: %v", first)
			}
			if !errors.Is(second, ErrOverBudget) {
				t.Fatalf("second ε = 1 charge against a budget of 1 through the other name: %v (the budget was forked)", second)
			}
			if st, err := os.Lstat(link); err != nil || (kind == "symlink" && st.Mode()&os.ModeSymlink == 0) {
				t.Fatalf("the link was replaced by a file: %v", err)
			}
			l, _ := Open(realPath)
			st, err := l.State(ctx)
			if err != nil || len(st.Charges) != 1 {
				t.Fatalf("real file holds %d charges, %v", len(st.Charges), err)
			}
		})
	}
}

// TestLedgerRemovesStaleTemporaries: temporary files of a killed writer are
// removed by the next charge.
func TestLedgerRemovesStaleTemporaries(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "L.json")
	l, err := Create(ctx, path, "x", Budget{Epsilon: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf(".L.json.tmp-%d", i)), []byte("{"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Charge(ctx, "a", Charge{Epsilon: 0.5}); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".L.json.tmp*")); len(left) != 0 {
		t.Fatalf("stale temporaries left: %v", left)
	}
}

// TestLedgerHardLinkDuringCharge: a hard link made to the ledger between a
// charge's read (which refuses two links) and its rename is left on the old
// state; that state is emptied, so a charge through the link is refused
// instead of spending a second budget.
func TestLedgerHardLinkDuringCharge(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "budget.json")
	l, err := Create(ctx, path, "site", Budget{Epsilon: 1})
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	l.beforeRename = func() {
		if err := os.Link(path, link); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Charge(ctx, "first", Charge{Epsilon: 1}); err != nil {
		t.Fatal(err)
	}
	ll, err := Open(link)
	if err == nil {
		_, err = ll.Charge(ctx, "second", Charge{Epsilon: 1})
	}
	if err == nil || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("a charge through a link made during the first charge: %v (the budget was forked)", err)
	}
	if st, err := l.State(ctx); err != nil || len(st.Charges) != 1 {
		t.Fatalf("the ledger: %d charges, %v", len(st.Charges), err)
	}
}

func TestErrOverBudgetIsSentinel(t *testing.T) {
	if !errors.Is(errors.Join(ErrOverBudget), ErrOverBudget) {
		t.Fatal("sentinel")
	}
}

// TestRemainingRoundsDown: what is left is the largest float64 not above
// the exact budget less the exact sum of the charges, and 0 once the
// budget is spent. Subtracting the rounded-up Spent in float64 (as `ledger
// show` did) overstates it here: 2 − (0.2 + 0.01 + 0.2 + 0.15 + 0.15)
// rounds to the float64 1.29, above the exact remainder.
func TestRemainingRoundsDown(t *testing.T) {
	charges := []float64{0.2, 0.01, 0.2, 0.15, 0.15}
	st := State{Budget: Budget{Epsilon: 2, Delta: 1e-5}}
	exact := new(big.Rat).SetFloat64(2)
	for _, c := range charges {
		st.Charges = append(st.Charges, Charge{Epsilon: c, Delta: 1e-6})
		exact.Sub(exact, new(big.Rat).SetFloat64(c))
	}
	if old := 2 - st.Spent().Epsilon; new(big.Rat).SetFloat64(old).Cmp(exact) <= 0 {
		t.Fatalf("the float64 subtraction %v does not overstate %v: the test lost its case", old, exact.FloatString(20))
	}
	got := st.Remaining().Epsilon
	if new(big.Rat).SetFloat64(got).Cmp(exact) > 0 {
		t.Fatalf("Remaining ε = %v exceeds the exact %v", got, exact.FloatString(20))
	}
	if next := math.Nextafter(got, 3); new(big.Rat).SetFloat64(next).Cmp(exact) <= 0 {
		t.Fatalf("Remaining ε = %v is not the largest float64 ≤ %v", got, exact.FloatString(20))
	}
	st.Charges = append(st.Charges, Charge{Epsilon: 1.5, Delta: 1e-5})
	if r := st.Remaining(); r.Epsilon != 0 || r.Delta != 0 || r.Rho != 0 {
		t.Fatalf("overspent ledger: Remaining = %+v, want zeros", r)
	}
}

// TestLedgerRaise: a running total replaces its own entry (the file keeps
// one entry per label), may only grow, and is checked exactly against the
// budget with the other charges; a refused raise changes nothing.
func TestLedgerRaise(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "budget.json")
	l, err := Create(ctx, path, "runs", Budget{Epsilon: 1, Delta: 1e-5})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Charge(ctx, "other", Charge{Epsilon: 0.25, Delta: 2.5e-6}); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		eps, delta float64
		ok         bool
	}{
		{0.25, 2.5e-6, true},
		{0.5, 5e-6, true},
		{0.75, 5e-6, true},   // fills ε exactly: 0.25 + 0.75 = 1
		{0.5, 7.5e-6, false}, // ε would go down
		{0.875, 5e-6, false}, // 0.25 + 0.875 > 1
		{0.75, 7.5e-6, true}, // fills δ exactly
		{0.75, 7.6e-6, false},
	}
	for i, s := range steps {
		_, err := l.Raise(ctx, "run 1", Charge{Epsilon: s.eps, Delta: s.delta})
		if (err == nil) != s.ok {
			t.Fatalf("step %d (%v, %v): err %v, want ok = %v", i, s.eps, s.delta, err, s.ok)
		}
	}
	st, err := l.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Charges) != 2 || st.Charges[1].Label != "run 1" || st.Charges[1].Epsilon != 0.75 || st.Charges[1].Delta != 7.5e-6 {
		t.Fatalf("state %+v, want other + run 1 at (0.75, 7.5e-6)", st.Charges)
	}
	if sp := st.Spent(); sp.Epsilon != 1 || sp.Delta != 1e-5 {
		t.Fatalf("spent %v, want the whole budget", sp)
	}
	if _, err := l.Raise(ctx, "run 2", Charge{Rho: 0.1}); err == nil {
		t.Fatal("ρ total on an (ε, δ) ledger accepted")
	}
}
