package ledger

// ClearlyExceeds reports whether charging c would clearly exceed the
// budget of an (ε, δ) ledger: Spent().Epsilon + c.Epsilon > ε_B·(1 + 10⁻¹²)
// or the same for δ. It is the early check that a front end makes before it
// reads any data (so that a request that cannot fit is refused at once); the
// exact check is Charge itself, made with the guarantee the release
// achieved, in exact rational arithmetic.
//
// Why the slack: Spent is the exact sum of the charges rounded up to a
// float64, and the float64 addition may round up once more, so a request
// that fills the budget exactly can appear over it by a few units in the
// last place; a relative slack of 10⁻¹² (about 4500 ulps) keeps the early
// check from refusing it, while Charge still refuses any real excess. A
// zCDP ledger is compared on ρ the same way.
func (s State) ClearlyExceeds(c Charge) bool {
	spent, b := s.Spent(), s.Budget
	over := func(spent, cost, budget float64) bool { return spent+cost > budget*(1+1e-12) }
	if b.IsZCDP() {
		return over(spent.Rho, c.Rho, b.Rho)
	}
	return over(spent.Epsilon, c.Epsilon, b.Epsilon) || over(spent.Delta, c.Delta, b.Delta)
}
