package accounting

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

func TestLedgerChargesAndRefuses(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "budget.json")
	l, err := CreateLedger(ctx, path, "trial", Budget{Epsilon: 1, Delta: 1e-5})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := CreateLedger(ctx, path, "again", Budget{Epsilon: 1}); err == nil {
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
	l2, err := OpenLedger(path)
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

func TestLedgerZCDP(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "rho.json")
	l, err := CreateLedger(ctx, path, "rho", Budget{Rho: 0.5})
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
	if _, err := CreateLedger(ctx, filepath.Join(t.TempDir(), "x"), "x", Budget{Epsilon: 1, Rho: 1}); err == nil {
		t.Fatal("mixed budget accepted")
	}
}

// 40 goroutines each charge ε = 0.05 against a budget of 1: exactly 20 succeed.
func TestLedgerConcurrentGoroutines(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "budget.json")
	if _, err := CreateLedger(ctx, path, "conc", Budget{Epsilon: 1}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			l, err := OpenLedger(path)
			if err != nil {
				t.Error(err)
				return
			}
			_, err = l.Charge(ctx, fmt.Sprint("g", i), Charge{Epsilon: 0.05})
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
	l, _ := OpenLedger(path)
	st, _ := l.State(ctx)
	if ok != 20 || len(st.Charges) != 20 {
		t.Fatalf("%d charges succeeded, %d recorded; want 20", ok, len(st.Charges))
	}
}

// Child processes charge the same ledger concurrently.
func TestLedgerConcurrentProcesses(t *testing.T) {
	if p := os.Getenv("DPLEARN_LEDGER_CHILD"); p != "" {
		l, err := OpenLedger(p)
		if err != nil {
			os.Exit(3)
		}
		n := 0
		for i := 0; i < 10; i++ {
			if _, err := l.Charge(context.Background(), "child", Charge{Epsilon: 0.1}); err == nil {
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
	if _, err := CreateLedger(ctx, path, "procs", Budget{Epsilon: 2.5}); err != nil {
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
	l, _ := OpenLedger(path)
	st, _ := l.State(ctx)
	if total != 25 || len(st.Charges) != 25 {
		t.Fatalf("children charged %d, ledger has %d; want 25", total, len(st.Charges))
	}
}

func TestLedgerContextCancelled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "budget.json")
	l, err := CreateLedger(context.Background(), path, "ctx", Budget{Epsilon: 1})
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
	if _, err := OpenLedger(path); err == nil {
		t.Fatal("corrupt ledger opened")
	}
}

// A process killed (SIGKILL) in the middle of charging leaves a ledger that
// parses and holds every charge that the child reported as done, except
// possibly the very last one in flight.
func TestLedgerSurvivesKilledProcess(t *testing.T) {
	if p := os.Getenv("DPLEARN_LEDGER_LOOP"); p != "" {
		l, err := OpenLedger(p)
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
	if _, err := CreateLedger(ctx, path, "kill", Budget{Epsilon: 100}); err != nil {
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
	l, err := OpenLedger(path)
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
		l, err := OpenLedger(path)
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
