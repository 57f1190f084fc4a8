// Package report describes what a differentially private release spent and
// how: the mechanism, each released quantity's sensitivity and noise, the
// overall guarantee and the accountant that computed it, the post-processing
// applied, and where the randomness came from.
//
// A Privacy value is attached to every model dplearn writes and printed in
// words by the CLI. Every number in it is computed by code from the
// calibration actually used; nothing is copied from a paper.
package report

import (
	"fmt"
	"io"
	"strings"
)

// Neighbouring is the neighbouring relation every guarantee refers to.
const Neighbouring = "replace-one (bounded DP): neighbouring datasets have the same public size N and differ in one record"

// Release is one noisy quantity put out by a mechanism.
type Release struct {
	Name        string  `json:"name"`        // e.g. "Λ1 (order-1 coefficients)"
	Entries     int     `json:"entries"`     // number of noisy values released
	Norm        string  `json:"norm"`        // sensitivity norm: "L1" or "L2"
	Sensitivity float64 `json:"sensitivity"` // before grid-rounding slack
	Noise       string  `json:"noise"`       // "laplace", "gaussian", "none"
	Scale       float64 `json:"scale"`       // Laplace b or Gaussian σ per entry
}

// Privacy is the guarantee of one release (or of a composition of releases).
type Privacy struct {
	Mechanism string  `json:"mechanism"`
	Private   bool    `json:"private"`           // false for non-private reference fits
	Epsilon   float64 `json:"epsilon,omitempty"` // overall ε
	Delta     float64 `json:"delta"`             // overall δ (0 for pure ε-DP)
	// Rho is the release's ρ-zCDP guarantee (Bun & Steinke 2016), rounded
	// up, where the mechanism has one (every release a Gaussian, or pure
	// ε-DP, whose ρ is ε²/2); 0 means none is known. A ρ ledger is charged
	// it (fit.LedgerCharge).
	Rho          float64   `json:"rho,omitempty"`
	Accountant   string    `json:"accountant"` // how (ε, δ) was computed
	Neighbouring string    `json:"neighbouring"`
	Releases     []Release `json:"releases,omitempty"`
	// WhitenedSensitivity, when > 0, says the first WhitenedReleases
	// Releases are calibrated jointly: each divided by its noise scale,
	// together they are one Gaussian mechanism with unit noise and this L2
	// sensitivity (grid slack included), so their guarantee is the
	// analytic Gaussian δ(ε) at Δ/σ = WhitenedSensitivity (releases after
	// them are composed as the Accountant says). It can be smaller than
	// the root sum of squares of those releases' Sensitivity/Scale when one
	// record cannot attain every release's worst case at once
	// (gaussian-fm).
	WhitenedSensitivity float64 `json:"whitened_sensitivity,omitempty"`
	WhitenedReleases    int     `json:"whitened_releases,omitempty"`
	// PostProcessing lists what was done to the released values only.
	PostProcessing []string `json:"post_processing,omitempty"`
	Randomness     string   `json:"randomness"`
	Insecure       bool     `json:"insecure_randomness,omitempty"`
	Notes          []string `json:"notes,omitempty"`
}

// Guarantee renders the overall guarantee, e.g. "(0.5, 1e-05)-DP", with ε
// and δ rounded up (Up): the printed guarantee is never stronger than the
// computed one.
func (p *Privacy) Guarantee() string {
	if !p.Private {
		return "none (non-private reference fit: do not release)"
	}
	if p.Delta == 0 {
		return fmt.Sprintf("%s-DP (pure)", Up(p.Epsilon))
	}
	return fmt.Sprintf("(%s, %s)-DP", Up(p.Epsilon), Up(p.Delta))
}

// WriteText prints the report in words.
func (p *Privacy) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Privacy report\n")
	fmt.Fprintf(&b, "  mechanism:     %s\n", p.Mechanism)
	fmt.Fprintf(&b, "  guarantee:     %s\n", p.Guarantee())
	if p.Private && p.Rho > 0 {
		fmt.Fprintf(&b, "  zCDP:          ρ = %s (the ρ a zCDP ledger is charged; Bun & Steinke 2016)\n", Up(p.Rho))
	}
	if p.Private {
		fmt.Fprintf(&b, "  accountant:    %s\n", p.Accountant)
		fmt.Fprintf(&b, "  neighbouring:  %s\n", p.Neighbouring)
	}
	for _, r := range p.Releases {
		values := "values"
		if r.Entries == 1 {
			values = "value"
		}
		fmt.Fprintf(&b, "  release:       %s: %d %s, %s sensitivity %s, %s noise with scale %s\n",
			r.Name, r.Entries, values, r.Norm, Up(r.Sensitivity), r.Noise, Down(r.Scale))
	}
	if p.WhitenedSensitivity > 0 && p.WhitenedReleases > 0 && p.WhitenedReleases <= len(p.Releases) {
		names := make([]string, p.WhitenedReleases)
		for i := range names {
			names[i] = p.Releases[i].Name
		}
		fmt.Fprintf(&b, "  jointly:       %s, each divided by its noise scale, are one Gaussian mechanism with unit noise and L2 sensitivity %s\n",
			strings.Join(names, " and "), Up(p.WhitenedSensitivity))
	}
	for _, s := range p.PostProcessing {
		fmt.Fprintf(&b, "  post-process:  %s\n", s)
	}
	fmt.Fprintf(&b, "  randomness:    %s\n", p.Randomness)
	if p.Insecure {
		fmt.Fprintf(&b, "  WARNING:       produced with INSECURE seeded randomness: for tests and experiments only, not a privacy guarantee\n")
	}
	for _, n := range p.Notes {
		fmt.Fprintf(&b, "  note:          %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Compose records a further release composed with the one p describes:
// epsilon and delta are the composed guarantee, computed by the caller's
// accountant from p's guarantee and the release's, and rho the composed
// zCDP ρ (0 when the composition has none: then p's ρ is dropped, never
// kept as if it covered the new release); how says how, and is appended
// to Accountant after "; then ". The release is listed after p's.
func (p *Privacy) Compose(epsilon, delta, rho float64, how string, r Release) {
	p.Accountant += "; then " + how
	p.Epsilon, p.Delta, p.Rho = epsilon, delta, rho
	p.Releases = append(p.Releases, r)
}

// ReplacePostProcessing replaces the post-processing statement equal to
// old (a constant of the mechanism that wrote it) by new, and reports
// whether there was one.
func (p *Privacy) ReplacePostProcessing(old, new string) bool {
	found := false
	for i, s := range p.PostProcessing {
		if s == old {
			p.PostProcessing[i], found = new, true
		}
	}
	return found
}
