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
// underscores) that name a privacy parameter, a budget or what is charged
// to it: ε, δ, ρ, μ (Gaussian DP) and their spellings.
var privacyWords = map[string]bool{
	"eps": true, "epsilon": true, "delta": true, "rho": true, "mu": true,
	"ε": true, "δ": true, "ρ": true, "μ": true,
	"budget": true, "budgets": true, "charge": true, "charges": true, "charged": true,
}

// bigArith are the arithmetic and comparison methods of math/big's Int,
// Rat and Float: a call of one whose receiver or an argument names a
// privacy parameter is privacy arithmetic just as + or < on float64 is
// (the CLI's copy of the ledger's budget check did new(big.Rat).Add and
// Cmp on the budget).
var bigArith = map[string]bool{
	"Add": true, "Sub": true, "Mul": true, "Quo": true, "QuoRem": true,
	"Div": true, "Mod": true, "Rem": true, "Cmp": true, "CmpAbs": true,
	"Neg": true, "Abs": true, "Inv": true, "Sqrt": true, "Exp": true,
}

// bigSetters convert a value into a math/big number without computing:
// new(big.Rat).SetFloat64(eps) still names ε, so the scan looks through
// them (and through big.NewRat, big.NewFloat, big.NewInt).
var bigSetters = map[string]bool{
	"SetFloat64": true, "SetString": true, "SetInt64": true, "SetUint64": true,
	"SetFrac": true, "SetFrac64": true, "SetInt": true, "SetRat": true,
	"SetFloat": true, "Set": true, "SetPrec": true, "SetMode": true,
	"NewRat": true, "NewFloat": true, "NewInt": true,
}

// mathPredicates are the functions of package math that only test their
// argument (validation such as math.IsInf(eps, 0)); every other math
// function applied to a privacy parameter computes with it.
var mathPredicates = map[string]bool{"IsInf": true, "IsNaN": true, "Signbit": true}

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
// parameter: +, −, ×, ÷ with an operand named ε, δ, ρ, μ, a budget or a
// charge; a math/big method in bigArith (Add, Mul, Quo, Cmp, …) whose
// receiver or argument is one; or a math function (math.Exp, math.Log,
// math.Nextafter, …; not the predicates IsInf, IsNaN, Signbit) of one. The
// budget split for intervals, their composition and the ledger's budget
// check live in package fit and package ledger.
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
	mentionsPrivacy := bigPrivacyValues(f).mentions
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if s := n.Sel.Name; strings.Contains(s, "Composition") || s == "Compose" || s == "ReplacePostProcessing" {
				report(n, "composition: "+s)
			}
		case *ast.CallExpr:
			sel, ok := n.Fun.(*ast.SelectorExpr)
			if !ok {
				break
			}
			if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "math" {
				if !mathPredicates[sel.Sel.Name] && slices.ContainsFunc(n.Args, mentionsPrivacy) {
					report(n, "math function of a privacy parameter: math."+sel.Sel.Name)
				}
				break
			}
			if bigArith[sel.Sel.Name] && (mentionsPrivacy(sel.X) || slices.ContainsFunc(n.Args, mentionsPrivacy)) {
				report(n, "math/big arithmetic on a privacy parameter: "+exprString(sel.X)+"."+sel.Sel.Name)
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
		// math/big arithmetic: the CLI's copy of the ledger's budget check
		// (cmd/dplearn CanCharge, removed in 16a00c8), verbatim.
		{cliCanCharge, true},
		{"left := new(big.Rat).Sub(budget, spent)", true},
		{"if new(big.Rat).Add(spent, charge).Cmp(budget) > 0 { return }", true},
		{"x := new(big.Float).Quo(big.NewFloat(eps), n)", true},
		{"e := new(big.Rat).SetFloat64(o.epsilon); e.Mul(e, two)", true},
		{"e := new(big.Rat).SetFloat64(eps); var c = new(big.Rat).Set(e); c.Add(c, one)", true},
		{"r := new(big.Rat).Mul(new(big.Rat).SetFloat64(delta), k)", true},
		{"if b.Epsilon.Cmp(x) < 0 { return }", true},
		{"x := new(big.Rat).Quo(&rho, two)", true},
		// math functions of a privacy parameter.
		{"x := math.Exp(eps)", true},
		{"x := math.Nextafter(p.Delta, 1)", true},
		{"x := math.Sqrt(2 * mu)", true},
		{"x := math.Max(budgetEps, 0)", true},
		{"ok := math.Abs(spent.Rho - budget.Rho) < 1e-9", true},
		{"if math.IsInf(f.epsilon, 0) || math.IsNaN(delta) { return }", false},
		{"x := math.Sqrt(s / float64(n-1))", false},
		{"wg.Add(1); t := time.Now().Add(deadline); n := new(big.Int).Mul(p, q)", false},
		{"s := new(big.Rat).SetFloat64(scale); s2 := new(big.Rat).Mul(s, s)", false},
		{"mu.Lock(); defer mu.Unlock()", false},
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

// cliCanCharge is the body of the budget check package main once kept
// beside the ledger's (removed in 16a00c8): exact sums with big.Rat and a
// Cmp against the budget, no +, −, ×, ÷ on a privacy name.
const cliCanCharge = `sum := func(get func(ledger.Charge) float64, add float64) *big.Rat {
	r := new(big.Rat).SetFloat64(add)
	for _, c := range st.Charges {
		r.Add(r, new(big.Rat).SetFloat64(get(c)))
	}
	return r
}
e := sum(func(c ledger.Charge) float64 { return c.Epsilon }, eps)
d := sum(func(c ledger.Charge) float64 { return c.Delta }, delta)
if e.Cmp(new(big.Rat).SetFloat64(st.Budget.Epsilon)) > 0 || d.Cmp(new(big.Rat).SetFloat64(st.Budget.Delta)) > 0 {
	return ledger.ErrOverBudget
}
return nil`

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

// bigValues names the variables of one file that hold a math/big number
// made from a privacy parameter (e := new(big.Rat).SetFloat64(eps)), so
// that e.Mul(e, two) is seen as arithmetic on ε. Names are taken without
// scopes: a name reused in the same file for another value is treated as
// privacy too (a false positive, never a miss).
type bigValues map[string]bool

// bigPrivacyValues collects f's bigValues: identifiers assigned (= or :=,
// or var) a math/big setter or constructor call that names a privacy
// parameter, repeated until no new name appears (x := new(big.Rat).Set(e)).
func bigPrivacyValues(f *ast.File) bigValues {
	v := bigValues{}
	for grew := true; grew; {
		grew = false
		add := func(lhs ast.Expr, rhs ast.Expr) {
			id, ok := lhs.(*ast.Ident)
			call, isCall := rhs.(*ast.CallExpr)
			if !ok || !isCall || v[id.Name] || !v.mentions(call) {
				return
			}
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok && bigSetters[sel.Sel.Name] {
				v[id.Name], grew = true, true
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				if len(n.Lhs) == len(n.Rhs) {
					for i := range n.Lhs {
						add(n.Lhs[i], n.Rhs[i])
					}
				}
			case *ast.ValueSpec:
				if len(n.Names) == len(n.Values) {
					for i := range n.Names {
						add(n.Names[i], n.Values[i])
					}
				}
			}
			return true
		})
	}
	return v
}

// mentions reports whether an operand is, or selects, a privacy
// parameter: an identifier or field named like one (o.epsilon,
// p.Delta, budget.Epsilon) or one of v, looking through parentheses, &, *, float
// conversions and math/big setters (new(big.Rat).SetFloat64(eps)).
func (v bigValues) mentions(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.Ident:
		return privacyName(e.Name) || v[e.Name]
	case *ast.SelectorExpr:
		return privacyName(e.Sel.Name)
	case *ast.ParenExpr:
		return v.mentions(e.X)
	case *ast.BinaryExpr:
		return v.mentions(e.X) || v.mentions(e.Y)
	case *ast.CallExpr:
		switch fun := e.Fun.(type) {
		case *ast.Ident: // conversions such as float64(eps)
			if len(e.Args) == 1 && (fun.Name == "float64" || fun.Name == "float32") {
				return v.mentions(e.Args[0])
			}
		case *ast.SelectorExpr: // new(big.Rat).SetFloat64(eps), big.NewFloat(eps)
			if bigSetters[fun.Sel.Name] {
				return v.mentions(fun.X) || slices.ContainsFunc(e.Args, v.mentions)
			}
		}
	case *ast.StarExpr:
		return v.mentions(e.X)
	case *ast.UnaryExpr:
		return v.mentions(e.X)
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
		case *ast.CallExpr:
			walk(e.Fun)
			b.WriteString("(…)")
		default:
			b.WriteString("…")
		}
	}
	walk(e)
	return b.String()
}
