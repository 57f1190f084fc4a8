package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// privacyWords are the words (of an identifier split at camel case and
// underscores) that name a privacy parameter or a budget: ε, δ, ρ and
// their spellings.
var privacyWords = map[string]bool{"eps": true, "epsilon": true, "delta": true, "rho": true, "budget": true, "ε": true, "δ": true, "ρ": true}

// camelWord is one word of an identifier: fitEps → fit, eps.
var camelWord = regexp.MustCompile(`[A-Z]?[^A-Z_0-9]+|[A-Z]+`)

// privacyName reports whether an identifier names a privacy parameter:
// one of its words is in privacyWords (eps, momentEps, o.delta,
// b.Epsilon, budget).
func privacyName(name string) bool {
	for _, w := range camelWord.FindAllString(name, -1) {
		if privacyWords[strings.ToLower(w)] {
			return true
		}
	}
	return false
}

// TestCLIDoesNoPrivacyArithmetic checks that package main only maps flags
// to library calls and prints: no non-test file calls a composition
// function (accounting.*Composition*, report.Privacy.Compose and
// ReplacePostProcessing belong to package fit) or computes with a privacy
// parameter (+, −, ×, ÷ with an operand named ε, δ, ρ or a budget). The
// budget split for intervals, their composition and the ledger's early
// check live in package fit.
func TestCLIDoesNoPrivacyArithmetic(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	offending := map[string][]string{}
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		if found := privacyArithmetic(fset, f); len(found) > 0 {
			offending[name] = found
		}
	}
	if checked < 20 {
		t.Fatalf("checked only %d files: the glob found the wrong directory", checked)
	}
	var names []string
	for n := range offending {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t.Errorf("%s does privacy arithmetic in package main (move it to package fit or the library):\n  %s", n, strings.Join(offending[n], "\n  "))
	}
}

// privacyArithmetic returns, with their positions, the composition calls
// and the arithmetic on privacy parameters in f.
func privacyArithmetic(fset *token.FileSet, f *ast.File) []string {
	var found []string
	report := func(n ast.Node, what string) {
		found = append(found, fset.Position(n.Pos()).String()+": "+what)
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if s := n.Sel.Name; strings.Contains(s, "Composition") || s == "Compose" || s == "ReplacePostProcessing" {
				report(n, "composition: "+s)
			}
		case *ast.BinaryExpr:
			if isArith(n.Op) && (mentionsPrivacy(n.X) || mentionsPrivacy(n.Y)) {
				report(n, "arithmetic on a privacy parameter: "+exprString(n))
			}
		case *ast.AssignStmt:
			if isArith(assignOp(n.Tok)) {
				for _, e := range append(slices.Clone(n.Lhs), n.Rhs...) {
					if mentionsPrivacy(e) {
						report(n, "arithmetic on a privacy parameter: "+n.Tok.String())
						break
					}
				}
			}
		}
		return true
	})
	return found
}

// TestPrivacyArithmeticScan plants the forms the scan must catch (the
// arithmetic removed from privacy.go and schemasuggest.go among them) and
// forms it must let pass, so that TestCLIDoesNoPrivacyArithmetic cannot
// pass by seeing nothing.
func TestPrivacyArithmeticScan(t *testing.T) {
	for _, c := range []struct {
		code string
		want bool
	}{
		{"x := eps / fs", true},
		{"x := delta / (fs * math.Exp(eps*(fs-1)/fs))", true},
		{"v := per[c]; per[c] = [2]float64{v[0] + p.Epsilon, v[1] + p.Delta}", true},
		{"ok := spent+cost > budget*(1+1e-12)", true},
		{"o.epsilon -= 1", true},
		{"x := float64(momentEps) * 2", true},
		{"t, _ := accounting.BasicComposition(a, b)", true},
		{"p = p.Compose(q)", true},
		{"x := sigma * 2; y := n + 1", false},
		{"r, err := accounting.BinomialDPPPGroup(eps, delta, sens)", false},
		{"fmt.Println(eps, delta)", false},
	} {
		src := "package p\nfunc f() {\n" + c.code + "\n}\n"
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, "planted.go", src, 0)
		if err != nil {
			t.Fatalf("%q: %v", c.code, err)
		}
		if got := len(privacyArithmetic(fset, f)) > 0; got != c.want {
			t.Errorf("%q: flagged %v, want %v", c.code, got, c.want)
		}
	}
}

func isArith(op token.Token) bool {
	return op == token.ADD || op == token.SUB || op == token.MUL || op == token.QUO
}

func assignOp(t token.Token) token.Token {
	switch t {
	case token.ADD_ASSIGN:
		return token.ADD
	case token.SUB_ASSIGN:
		return token.SUB
	case token.MUL_ASSIGN:
		return token.MUL
	case token.QUO_ASSIGN:
		return token.QUO
	}
	return token.ILLEGAL
}

// mentionsPrivacy reports whether an operand is, or selects, a privacy
// parameter: an identifier or field named like one (o.epsilon,
// p.Delta, budget.Epsilon), looking through parentheses, conversions and
// calls' receivers.
func mentionsPrivacy(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.Ident:
		return privacyName(e.Name)
	case *ast.SelectorExpr:
		return privacyName(e.Sel.Name)
	case *ast.ParenExpr:
		return mentionsPrivacy(e.X)
	case *ast.BinaryExpr:
		return mentionsPrivacy(e.X) || mentionsPrivacy(e.Y)
	case *ast.CallExpr:
		if len(e.Args) == 1 { // conversions such as float64(eps)
			if id, ok := e.Fun.(*ast.Ident); ok && (id.Name == "float64" || id.Name == "float32") {
				return mentionsPrivacy(e.Args[0])
			}
		}
	}
	return false
}

func exprString(e ast.Expr) string {
	var b strings.Builder
	var walk func(ast.Expr)
	walk = func(e ast.Expr) {
		switch e := e.(type) {
		case *ast.Ident:
			b.WriteString(e.Name)
		case *ast.SelectorExpr:
			walk(e.X)
			b.WriteString("." + e.Sel.Name)
		case *ast.BasicLit:
			b.WriteString(e.Value)
		case *ast.BinaryExpr:
			walk(e.X)
			b.WriteString(" " + e.Op.String() + " ")
			walk(e.Y)
		case *ast.ParenExpr:
			b.WriteString("(")
			walk(e.X)
			b.WriteString(")")
		default:
			b.WriteString("…")
		}
	}
	walk(e)
	return b.String()
}
